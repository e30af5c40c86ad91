/**
 * When an action was last queued for a human (docs/contract.md 3.2): its TTL counts from there, not from
 * `updated_at`, which any later write may touch. NULL means queued when created (`created_at`); a demotion
 * back to the queue sets it. Actions waiting now keep the clock they had (their last `updated_at`).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE actions ADD COLUMN queued_at timestamptz`
  yield* sql`UPDATE actions SET queued_at = updated_at WHERE status = 'proposed' AND updated_at > created_at`
})
