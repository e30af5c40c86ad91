/**
 * The webhook claim's order per org (docs/decisions/events-and-webhooks.md "Deliveries are claimed per org, in
 * turn"): `(org_id, run_at, created_at) WHERE status = 'pending'`, so an org's claim walks its own due deliveries
 * from the head of its part of the index and stops after its batch, however many other orgs have waiting.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX webhook_deliveries_due`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (org_id, run_at, created_at) WHERE status = 'pending'`
})
