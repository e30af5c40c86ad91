/**
 * The `expired` status (docs/contract.md 3.2): a queued action nobody decided in time ends there. The transition exists
 * now (`Transitions.expire`); approval expiry, which calls it, arrives with a later issue.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE actions DROP CONSTRAINT actions_status_check`
  yield* sql`ALTER TABLE actions ADD CONSTRAINT actions_status_check
    CHECK (status IN ('proposed', 'approved', 'applying', 'applied', 'failed', 'rejected', 'reverted', 'expired'))`
})
