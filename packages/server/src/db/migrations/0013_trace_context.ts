/**
 * The trace context an action's apply links back to (docs/decisions/operations.md): `actions.trace_parent` is the W3C
 * traceparent of the request that proposed the action, `jobs.trace_parent` that of whatever queued the apply
 * (the proposal itself when it auto-applied, else the approval or the revert). Null when unknown.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE actions ADD COLUMN trace_parent text`
  yield* sql`ALTER TABLE jobs ADD COLUMN trace_parent text`
})
