/**
 * The org-scoped tables keyed by their org (docs/decisions/database.md "Every key of an account's row names its
 * account", and its org's): `events`, `webhooks`, `webhook_deliveries`, `webhook_batches` and
 * `webhook_delivered_batches` carry `org_id` in every primary, unique and foreign key, the id first as before.
 * `webhook_batches` gains its endpoint's org. Every row is kept.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const REKEYED = ["events", "webhooks", "webhook_deliveries", "webhook_batches", "webhook_delivered_batches"]

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhook_batches ADD COLUMN org_id text`
  yield* sql`UPDATE webhook_batches b SET org_id = w.org_id FROM webhooks w WHERE w.webhook_id = b.webhook_id`
  // A batch whose endpoint is gone has nothing left to deliver (its rescue joins the endpoint).
  yield* sql`DELETE FROM webhook_batches WHERE org_id IS NULL`
  yield* sql`ALTER TABLE webhook_batches ALTER COLUMN org_id SET NOT NULL`

  const constraints = yield* sql<{ table: string; name: string }>`
    SELECT c.conrelid::regclass::text AS table, c.conname AS name FROM pg_constraint c
    WHERE c.contype IN ('f', 'u') AND c.conrelid::regclass::text = ANY (${REKEYED}::text[])
      AND c.confrelid::regclass::text IS DISTINCT FROM 'orgs'`
  for (const { table, name } of constraints) yield* sql`ALTER TABLE ${sql(table)} DROP CONSTRAINT ${sql(name)}`
  yield* sql`DROP INDEX webhook_deliveries_once`
  for (const table of REKEYED) yield* sql`ALTER TABLE ${sql(table)} DROP CONSTRAINT ${sql(`${table}_pkey`)}`

  yield* sql`ALTER TABLE events ADD PRIMARY KEY (seq, org_id)`
  yield* sql`ALTER TABLE events ADD CONSTRAINT events_event_id_key UNIQUE (event_id, org_id)`
  yield* sql`ALTER TABLE events ADD CONSTRAINT events_position_key UNIQUE (position, org_id)`
  yield* sql`ALTER TABLE webhooks ADD PRIMARY KEY (webhook_id, org_id)`
  yield* sql`ALTER TABLE webhook_deliveries ADD PRIMARY KEY (delivery_id, org_id)`
  yield* sql`CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (webhook_id, event_id, org_id)`
  yield* sql`ALTER TABLE webhook_batches ADD PRIMARY KEY (batch_id, org_id)`
  yield* sql`ALTER TABLE webhook_delivered_batches ADD PRIMARY KEY (batch_id, org_id)`
  for (const table of ["webhook_deliveries", "webhook_batches", "webhook_delivered_batches"]) {
    yield* sql`ALTER TABLE ${sql(table)} ADD CONSTRAINT ${sql(`${table}_webhook_id_fkey`)}
      FOREIGN KEY (webhook_id, org_id) REFERENCES webhooks (webhook_id, org_id)`
  }
})
