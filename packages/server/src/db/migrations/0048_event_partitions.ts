/**
 * The events partitioned by day of `created_at` (docs/decisions/database.md "History is kept in day partitions, dropped
 * whole", "Events are kept in day partitions"; db/TimePartitions.ts), as migration 0045 did the
 * delivered batches: the events past retention pruned as the retention pass would have (a pending delivery keeps its
 * event's body), the table as it was becomes the partition of every day until tomorrow, without copying a row, and the
 * days after get their own partitions, a week ahead. A partitioned table's keys hold its partition column: `created_at`
 * joins the org in the primary key and the unique keys. The insert order (`seq`) goes on from the same sequence. The
 * sequencer (`acs_sequence_events`) finds the events it numbers by their whole key, so each is one index probe of
 * its own day's partition rather than one of every day's.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { installFunctions } from "../functions/FunctionFiles.ts"
import { partitionsAhead } from "../TimePartitions.ts"

const RETENTION_DAYS = 30
const DAY_MS = 86_400_000

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis
  const tomorrow = new Date((Math.floor(now / DAY_MS) + 1) * DAY_MS).toISOString()
  const cutoff = new Date(now - RETENTION_DAYS * DAY_MS).toISOString()
  yield* sql`
    WITH gone_bodies AS MATERIALIZED (
      SELECT e.org_id, e.event_id, jsonb_build_object('eventId', e.event_id, 'type', e.type,
        'createdAt', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'orgId', e.org_id, 'projectId', e.project_id, 'data', e.data) AS body
      FROM events e WHERE e.created_at < ${cutoff}::timestamptz)
    UPDATE webhook_deliveries d SET body = b.body FROM gone_bodies b
    WHERE d.org_id = b.org_id AND d.event_id = b.event_id AND d.status = 'pending' AND d.body IS NULL`
  yield* sql`DELETE FROM events WHERE created_at < ${cutoff}::timestamptz`

  yield* sql`ALTER TABLE events RENAME TO events_before`
  for (const constraint of ["events_pkey", "events_event_id_key", "events_position_key"]) {
    yield* sql`ALTER TABLE events_before DROP CONSTRAINT ${sql(constraint)}`
  }
  // Kept, named for the old table: the new table's key to the orgs adopts it when the old one is attached.
  yield* sql`ALTER TABLE events_before RENAME CONSTRAINT events_org_id_fkey TO events_before_org_id_fkey`
  // Retention drops days whole: no statement looks for events by time any more.
  yield* sql`DROP INDEX events_created_at`
  // The indexes the new table makes alike: attaching the old table adopts them instead of building them again.
  for (const index of ["events_unsequenced", "events_org_position", "events_org_project_position"]) {
    yield* sql`ALTER INDEX ${sql(index)} RENAME TO ${sql(index.replace("events_", "events_before_"))}`
  }
  yield* sql`
    CREATE TABLE events (
      seq bigint NOT NULL DEFAULT nextval('events_seq_seq'),
      event_id text NOT NULL,
      position bigint,
      org_id text NOT NULL REFERENCES orgs (org_id),
      project_id text,
      type text NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      trace_parent text,
      PRIMARY KEY (seq, org_id, created_at),
      CONSTRAINT events_event_id_key UNIQUE (event_id, org_id, created_at),
      CONSTRAINT events_position_key UNIQUE (position, org_id, created_at)
    ) PARTITION BY RANGE (created_at)`
  // The sequence belongs to the partitioned table: dropping the old table's partition must not take it along.
  yield* sql`ALTER TABLE events_before ALTER COLUMN seq DROP DEFAULT`
  yield* sql`ALTER SEQUENCE events_seq_seq OWNED BY events.seq`
  yield* sql`CREATE INDEX events_unsequenced ON events (seq) WHERE position IS NULL`
  yield* sql`CREATE INDEX events_org_position ON events (org_id, position) WHERE position IS NOT NULL`
  yield* sql`CREATE INDEX events_org_project_position ON events (org_id, project_id, position) WHERE position IS NOT NULL`
  // Its rows are all before tomorrow (created_at is when they were written): the check is one scan, no copy.
  yield* sql`ALTER TABLE events ATTACH PARTITION events_before FOR VALUES FROM (MINVALUE) TO (${sql.unsafe(`'${tomorrow}'`)})`
  for (const ddl of partitionsAhead("events", now + DAY_MS)) yield* sql.unsafe(ddl)
  yield* installFunctions(["acs_sequence_events"])
})
