/**
 * The webhook delivery log's batches (`webhook_delivered_batches`) partitioned by day of `delivered_at`
 * (docs/decisions/database.md "History is kept in day partitions, dropped whole"; db/TimePartitions.ts): the table
 * as it was, its rows past retention pruned as the retention pass would have, becomes the partition of every day
 * until tomorrow, without copying a row; the days after get their own partitions, a week ahead. The log's view is
 * made again over the new table.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { partitionsAhead } from "../TimePartitions.ts"

const RETENTION_DAYS = 30
const DAY_MS = 86_400_000

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis
  const tomorrow = new Date((Math.floor(now / DAY_MS) + 1) * DAY_MS).toISOString()
  yield* sql`DELETE FROM webhook_delivered_batches WHERE delivered_at < ${new Date(now - RETENTION_DAYS * DAY_MS).toISOString()}::timestamptz`
  yield* sql`DROP VIEW webhook_delivery_log`
  yield* sql`ALTER TABLE webhook_delivered_batches RENAME TO webhook_delivered_batches_before`
  yield* sql`ALTER TABLE webhook_delivered_batches_before DROP CONSTRAINT webhook_delivered_batches_pkey`
  yield* sql`ALTER TABLE webhook_delivered_batches_before DROP CONSTRAINT webhook_delivered_batches_webhook_id_fkey`
  yield* sql`DROP INDEX webhook_delivered_batches_log`
  yield* sql`DROP INDEX webhook_delivered_batches_age`
  yield* sql`
    CREATE TABLE webhook_delivered_batches (
      batch_id text NOT NULL,
      webhook_id text NOT NULL,
      org_id text NOT NULL,
      delivery_ids text[] NOT NULL,
      event_ids text[] NOT NULL,
      event_types text[] NOT NULL,
      status_codes int[] NOT NULL,
      durations_ms int[] NOT NULL,
      responses text[] NOT NULL,
      delivered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      PRIMARY KEY (batch_id, org_id, delivered_at),
      FOREIGN KEY (webhook_id, org_id) REFERENCES webhooks (webhook_id, org_id)
    ) PARTITION BY RANGE (delivered_at)`
  yield* sql`CREATE INDEX webhook_delivered_batches_log ON webhook_delivered_batches (webhook_id, delivered_at DESC)`
  // Its rows are all before tomorrow (delivered_at is when they were written): the check is one scan, no copy.
  yield* sql`ALTER TABLE webhook_delivered_batches ATTACH PARTITION webhook_delivered_batches_before
    FOR VALUES FROM (MINVALUE) TO (${sql.unsafe(`'${tomorrow}'`)})`
  for (const ddl of partitionsAhead("webhook_delivered_batches", now + DAY_MS)) yield* sql.unsafe(ddl)
  yield* sql`
    CREATE VIEW webhook_delivery_log AS
      SELECT delivery_id, webhook_id, org_id, event_id, event_type, status, attempts, last_status_code, last_duration_ms,
        last_error, last_response, last_attempt_at, run_at, delivered_at, created_at
      FROM webhook_deliveries
      UNION ALL
      SELECT o.delivery_id, b.webhook_id, b.org_id, o.event_id, o.event_type, 'delivered', 1, o.status_code, o.duration_ms,
        NULL, o.response, b.delivered_at, b.delivered_at, b.delivered_at, b.delivered_at
      FROM webhook_delivered_batches b
      CROSS JOIN LATERAL unnest(b.delivery_ids, b.event_ids, b.event_types, b.status_codes, b.durations_ms, b.responses)
        AS o (delivery_id, event_id, event_type, status_code, duration_ms, response)`
})
