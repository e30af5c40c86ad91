/**
 * Settling a compensation finds its original by `reverted_by` on every apply; without an index that is a scan
 * of the whole ledger (about a second at 1 M rows, measured by the benchmark). Few rows carry a revert, so
 * the index is partial.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX actions_reverted_by ON actions (reverted_by) WHERE reverted_by IS NOT NULL`
})
