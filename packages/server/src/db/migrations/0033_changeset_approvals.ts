/**
 * Two people for a high-risk changeset (docs/contract.md 4.3, 3.3): `changesets.approvals` records who approved and
 * when (`[{by, at}]`), as `actions.approvals` does; a high-risk changeset stays `queued` after the first of its two
 * approvals. A resubmit (a new plan) clears it.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE changesets ADD COLUMN approvals jsonb NOT NULL DEFAULT '[]'`
})
