/**
 * A run's steps (docs/contract.md 3, "The apply worker"): each recorded before its first upstream write (by that
 * write's fence: WriteFence.ts) and after it, a step a former attempt completed taken from its record. A failure
 * rolls the steps before it back in reverse, best effort, and writes back what the rollback touched;
 * `upstream_unavailable` ends the attempt with nothing recorded for the step that had not written yet.
 */
import type { ActionRecord, Failure } from "@acs/domain/Actions"
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import type { Ids, KindDefinition, Step, StepContext, StepFailure, Touched } from "../actions/kinds/Kind.ts"
import type { RecordedStep } from "./ActionSteps.ts"
import { behindLease, type Lease } from "./Lease.ts"
import type { StepRecords } from "./StepRecords.ts"
import { writeBackCall } from "./WarehouseWriteBack.ts"
import type { WriteFence } from "./WriteFence.ts"

export const mergeTouched = (all: ReadonlyArray<Touched>): Touched => {
  const merged: Record<string, Array<unknown>> = {}
  for (const touched of all) {
    for (const [key, values] of Object.entries(touched)) {
      if (Array.isArray(values)) (merged[key] ??= []).push(...(values as ReadonlyArray<unknown>))
    }
  }
  return merged as Touched
}

const messageOf = (error: StepFailure): string =>
  error._tag === "Drift" ? error.reason : error._tag === "ReadOnlyAccount" ? `read_only_account: ${error.message}` : error.message

const requestIdOf = (error: StepFailure): string | null =>
  error._tag === "UpstreamError" ? error.request_id ?? null : null

export const makeRunSteps = (sql: SqlClient.SqlClient, records: StepRecords) => {
  /** Undoes completed steps in reverse, best effort; returns what the undo touched. */
  const rollback = (
    action: ActionRecord,
    run: number,
    steps: ReadonlyArray<Step>,
    done: number,
    context: StepContext,
    lease: Lease,
    fence: WriteFence
  ) =>
    Effect.gen(function*() {
      const touched: Array<Touched> = []
      for (let index = done - 1; index >= 0; index--) {
        const step = steps[index]!
        if (step.undo === undefined) continue
        yield* fence.startOnWrite(records.recordStart(action, run, "rollback", index, step, lease))
        const undone = yield* step.undo(context).pipe(Effect.either)
        yield* fence.started
        if (undone._tag === "Right") touched.push(undone.right)
        yield* records.recordEnd(action, run, "rollback", index, undone._tag === "Right" ? { output: {} } : { error: undone.left.message }, lease)
      }
      return touched
    })

  const runSteps = <P>(
    definition: KindDefinition<P>,
    action: ActionRecord,
    run: number,
    payload: P,
    client: StepContext["client"],
    account: AccountRecord,
    before: ReadonlyArray<RecordedStep>,
    lease: Lease,
    fence: WriteFence
  ) =>
    Effect.gen(function*() {
      const steps = definition.steps(payload)
      // Approved by a person after a drift hold: they chose to write over the outside change.
      const acceptDrift = action.decidedBy !== null && action.policyReasons.some((reason) => reason.startsWith("drift:"))
      let ids: Ids = {}
      const touched: Array<Touched> = []
      const warnings: Array<string> = []
      let last: { readonly index: number; readonly output: unknown } | undefined
      // The action is marked applying in the statement that records the first step this attempt starts.
      let marked = false
      for (const [index, step] of steps.entries()) {
        const prior = before.find((r) => r.step === index + 1)
        if (prior?.status === "succeeded" && prior.output !== null) {
          ids = { ...ids, ...prior.output.ids }
          touched.push(prior.output.touched)
          warnings.push(...prior.output.warnings)
          continue
        }
        const context: StepContext = { client, accountId: account.upstreamAccountId, ids, acceptDrift }
        // Recorded by the fence of the step's first write (WriteFence.ts), which is then its lease check too.
        yield* fence.startOnWrite(
          marked
            ? records.recordStart(action, run, "apply", index, step, lease)
            : records.markApplying(action, lease, [records.startWrite(action, run, "apply", index, step)])
        )
        marked = true
        const outcome = yield* step.apply(context).pipe(Effect.either)
        if (outcome._tag === "Left" && outcome.left._tag === "UpstreamUnavailable") {
          // Not processed upstream (or unknown): the next attempt reconciles this step by reading first. A step
          // that had not written yet has nothing to reconcile: its start is not recorded.
          yield* fence.dropStart
          return { _tag: "Unavailable" as const, error: outcome.left }
        }
        yield* fence.started
        if (outcome._tag === "Left") {
          const error = outcome.left
          yield* records.recordEnd(action, run, "apply", index, { error: messageOf(error) }, lease)
          const undone = yield* rollback(action, run, steps, index, context, lease, fence)
          yield* behindLease(sql, lease, (fence) =>
            sql`SELECT ${writeBackCall(sql, account.projectId, mergeTouched([...touched, ...undone]))} WHERE ${fence}`)
          if (error._tag === "Drift") return { _tag: "Drift" as const, reason: error.reason }
          const failure: Failure = {
            step: definition.composite ? index + 1 : null,
            stepName: step.name,
            message: definition.composite
              ? `step ${index + 1} (${step.name}) failed: ${messageOf(error)}; the steps before it were rolled back`
              : messageOf(error),
            upstreamRequestId: requestIdOf(error)
          }
          return {
            _tag: "Failed" as const,
            failure,
            readOnly: error._tag === "ReadOnlyAccount",
            refusedCredentials: error._tag === "ConnectionError" ? error.message : null
          }
        }
        ids = { ...ids, ...outcome.right.ids }
        touched.push(outcome.right.touched)
        warnings.push(...outcome.right.warnings)
        // The last step's outcome is recorded with the action's (`Applied` below), in the transaction ending the run.
        if (index < steps.length - 1) yield* records.recordEnd(action, run, "apply", index, { output: outcome.right }, lease)
        else last = { index, output: outcome.right }
      }
      // Every step had succeeded before this attempt (it ends a run a crash interrupted after its last step).
      if (!marked) yield* records.markApplying(action, lease)
      return { _tag: "Applied" as const, ids, touched: mergeTouched(touched), warnings, last }
    })

  return runSteps
}
