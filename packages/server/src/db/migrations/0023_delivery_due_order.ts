/**
 * The webhook claim's order in its index: `(run_at, created_at) WHERE status = 'pending'`, the claim's
 * `ORDER BY`, so a claim walks the index from its head and stops after its batch (an index scan, which also
 * marks the entries of delivered rows dead as it passes them). With `(run_at)` alone the planner read every
 * pending entry to sort them, through a bitmap scan that never marks an entry dead: every delivery recorded since
 * the last vacuum was read again by every claim.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX webhook_deliveries_due`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (run_at, created_at) WHERE status = 'pending'`
})
