/**
 * The org's guard settings (docs/contract.md 3.4): `orgs.guard`, null while nobody set them (the defaults). Read
 * with the org's other settings, cached and invalidated with them.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE orgs ADD COLUMN guard jsonb`
})
