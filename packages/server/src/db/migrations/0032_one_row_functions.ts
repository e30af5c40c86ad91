/**
 * `acs_lock_account_window` and `acs_account_envelope` answer one row, and now say so (`ROWS 1`). The planner
 * took the default of 1,000 rows for each, so the proposal statement, which joins the lock's row with the
 * proposal's price and its holds, was estimated at a million rows: past `jit_above_cost`, and each proposal paid
 * about 580 ms of JIT compilation (docs/decisions/pipeline.md "Set-returning functions declare their rows").
 */
import { Effect } from "effect"
import { installFunctions } from "../functions/FunctionFiles.ts"

export default Effect.gen(function*() {
  yield* installFunctions(["acs_account_envelope", "acs_lock_account_window"])
})
