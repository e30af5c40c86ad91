/**
 * The apply's writes of its steps' records and of its `applying` mark, each one statement behind the lease's
 * renewal (docs/decisions/pipeline.md "The fence in the write's own statement"): a lost lease stops the apply.
 */
import type { ActionRecord } from "@acs/domain/Actions"
import type { SqlClient, Statement } from "@effect/sql"
import { Effect } from "effect"
import type { Step } from "../actions/kinds/Kind.ts"
import type { FencedWrite, Transitions } from "../actions/pipeline/Transitions.ts"
import { type Phase, type StepEnd, stepEnd, type StepOf, stepStart } from "./ActionSteps.ts"
import { behindLease, type Lease } from "./Lease.ts"

export const makeStepRecords = (sql: SqlClient.SqlClient, transitions: Transitions) => {
  const of = (action: ActionRecord, run: number, phase: Phase, index: number): StepOf => ({ actionId: action.actionId, projectId: action.projectId, run, phase, index })

  /** The step's start as a write that rides in another statement (the `applying` mark's). */
  const startWrite = (action: ActionRecord, run: number, phase: Phase, index: number, step: Step): FencedWrite => (fence) =>
    stepStart(sql, of(action, run, phase, index), step.name, fence)

  /** The step's outcome as a write that rides in another statement (the one ending the run). */
  const endWrite = (action: ActionRecord, run: number, index: number, outcome: StepEnd) => (fence: Statement.Fragment) =>
    stepEnd(sql, of(action, run, "apply", index), outcome, fence)

  /** The step is under way, recorded behind the lease. */
  const recordStart = (action: ActionRecord, run: number, phase: Phase, index: number, step: Step, lease: Lease) =>
    behindLease(sql, lease, startWrite(action, run, phase, index, step))

  /** The step's outcome, recorded behind the lease. */
  const recordEnd = (action: ActionRecord, run: number, phase: Phase, index: number, outcome: StepEnd, lease: Lease) =>
    behindLease(sql, lease, (fence) => stepEnd(sql, of(action, run, phase, index), outcome, fence))

  /**
   * Marks the action applying behind the lease (one statement, with `alongside`: the run's first step record);
   * a lost lease stops the apply.
   */
  const markApplying = (action: ActionRecord, lease: Lease, alongside: ReadonlyArray<FencedWrite> = []) =>
    transitions.markApplying(action, lease.renewal, alongside).pipe(
      // No row: the job is no longer ours, or (never on this path) the action left approved/applying.
      Effect.flatMap((changed) => changed ? Effect.void : lease.check)
    )

  return { startWrite, endWrite, recordStart, recordEnd, markApplying } as const
}

export type StepRecords = ReturnType<typeof makeStepRecords>
