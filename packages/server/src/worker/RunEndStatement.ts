/**
 * The end of an applied run as ONE statement (docs/decisions/pipeline.md "An applied run ends in one statement"),
 * assembled from its tables' owners: the job's deletion (queue/Jobs.ts, the lease's `settlement`) is the fence;
 * the last step's record (ActionSteps.ts), the warehouse write-back (WarehouseWriteBack.ts) and the status change
 * with its event and a compensation's original (Transitions.ts `appliedCtes`) each write only where it holds.
 */
import type { SqlClient, Statement } from "@effect/sql"
import { Effect } from "effect"
import type { Touched } from "../actions/kinds/Kind.ts"
import { appliedCtes, appliedOutcome, appliedOutcomeOf, type AppliedRun } from "../actions/pipeline/Transitions.ts"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { currentTraceparent } from "../telemetry/TraceContext.ts"
import { writeBackCall } from "./WarehouseWriteBack.ts"

export interface AppliedRunEnd {
  readonly projectId: string
  /** One action's run, or the runs of a changeset's members one bulk call wrote. */
  readonly runs: ReadonlyArray<AppliedRun>
  /** The job's deletion while it is ours (a changeset's member: its renewal), answering a row: the fence. */
  readonly settlement: Statement.Fragment
  /** The last steps' records, when this attempt ran them (their outcomes are recorded here, not before). */
  readonly lastSteps: ((fence: Statement.Fragment) => Statement.Fragment) | undefined
  /** What the steps touched, written back into the warehouse. */
  readonly touched: Touched
}

/** Answers whether the fence held (false: the job is no longer ours, and nothing was written) and how many actions it applied. */
export const endAppliedRun = (sql: SqlClient.SqlClient, end: AppliedRunEnd) =>
  Effect.flatMap(currentTraceparent, (traceParent) => {
    const fence = sql`EXISTS (SELECT 1 FROM fence)`
    // A CTE that only selects runs when it is read: the select list reads both.
    return sql`/* prepared */
      WITH fence AS (${end.settlement}),
      ${end.lastSteps === undefined ? sql`` : sql`last_steps AS (${end.lastSteps(fence)}),`}
      -- As text: Citus may run a CTE apart and keep its rows, and a void column cannot be kept.
      write_back AS (SELECT ${writeBackCall(sql, end.projectId, end.touched)}::text AS written WHERE ${fence}),
      ${appliedCtes(sql, end.projectId, end.runs, fence, traceParent)}
      SELECT ${appliedOutcome(sql, fence)}, (SELECT count(*) FROM write_back) AS written_back
        ${end.lastSteps === undefined ? sql`` : sql`, (SELECT count(*) FROM last_steps) AS last_steps`}`
  }).pipe(
    Effect.orDie,
    Effect.flatMap(appliedOutcomeOf(sql)),
    Effect.withSpan("RunEndStatement.endAppliedRun", HOT_SPAN)
  )
