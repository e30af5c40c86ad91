/**
 * Four eyes (since replaced by who may approve, docs/contract.md 5.1): whether an org requires a second person to approve a change, on by
 * default. Keys already record who created them (`api_keys.created_by`).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE orgs ADD COLUMN require_second_approver boolean NOT NULL DEFAULT true`
})
