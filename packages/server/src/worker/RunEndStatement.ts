/**
 * The end of an applied run as ONE statement (docs/decisions/pipeline.md "An applied run ends in one statement"),
 * assembled from its tables' owners: the job's deletion (queue/Jobs.ts, the lease's `settlement`) is the fence;
 * the last step's record (ActionSteps.ts) and the warehouse write-back (WarehouseWriteBack.ts) ride with the
 * status change, its event and a compensation's original (Transitions.ts), each only where the fence holds.
 */
import type { ActionRecord } from "@acs/domain/Actions"
import type { SqlClient, Statement } from "@effect/sql"
import type { Touched } from "../actions/kinds/Kind.ts"
import type { AppliedResult, Transitions } from "../actions/pipeline/Transitions.ts"
import type { Lease } from "./Lease.ts"
import type { StepRecords } from "./StepRecords.ts"
import { writeBackCall } from "./WarehouseWriteBack.ts"

export interface AppliedRun {
  readonly action: ActionRecord
  readonly run: number
  readonly result: AppliedResult
  /** The last step, when this attempt ran it: its outcome is recorded here, not before. */
  readonly last: { readonly index: number; readonly output: unknown } | undefined
  readonly touched: Touched
}

/** Answers whether the fence held (false: the job is no longer ours) and whether the action changed. */
export const endAppliedRun = (sql: SqlClient.SqlClient, transitions: Transitions, records: StepRecords, lease: Lease, ended: AppliedRun) =>
  transitions.markAppliedEndingRun(ended.action.actionId, ended.result, {
    settlement: lease.settlement,
    alongside: [
      ...(ended.last === undefined ? [] : [records.endWrite(ended.action, ended.run, ended.last.index, { output: ended.last.output })]),
      (fence: Statement.Fragment) => sql`SELECT ${writeBackCall(sql, ended.action.projectId, ended.touched)} WHERE ${fence}`
    ]
  })
