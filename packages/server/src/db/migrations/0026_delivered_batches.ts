/**
 * The delivered first attempts of a batch are recorded as one row, not a row each (the webhook's share of
 * proposal throughput: docs/decisions/events-and-webhooks.md). Since migration 0025 a batch's attempts were inserted into `webhook_deliveries`
 * as they ended: a heap tuple and four index entries per delivery, about 0.6 ms of PostgreSQL's CPU for a
 * batch of fifty against 0.2 ms for one row of arrays, and 4.5 times the bytes (WAL, vacuum, 30 days of log).
 *
 * `webhook_delivered_batches` holds, per recorded batch, its delivered attempts as parallel arrays (delivery,
 * event, type, status code, duration, answer kept). What was not delivered still becomes a pending row of
 * `webhook_deliveries`, retried through the queue. A delivered event cannot also have a row there: a batch's
 * range of positions is leased once, a rescued batch records nothing (its lease is gone), and the rows a
 * rescue or a disabling queues lie outside every range still leased.
 *
 * `webhook_delivery_log` is the union as rows of one shape, for operators and tests; the API's log
 * (webhooks/Webhooks.ts) reads the two itself, so that only the newest batches are expanded.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE webhook_delivered_batches (
      batch_id text PRIMARY KEY,
      webhook_id text NOT NULL REFERENCES webhooks (webhook_id),
      org_id text NOT NULL,
      delivery_ids text[] NOT NULL,
      event_ids text[] NOT NULL,
      event_types text[] NOT NULL,
      status_codes int[] NOT NULL,
      durations_ms int[] NOT NULL,
      responses text[] NOT NULL,
      delivered_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`
  yield* sql`CREATE INDEX webhook_delivered_batches_log ON webhook_delivered_batches (webhook_id, delivered_at DESC)`
  yield* sql`CREATE INDEX webhook_delivered_batches_age ON webhook_delivered_batches (delivered_at)`
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
