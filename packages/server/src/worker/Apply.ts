/**
 * Applies one claimed action (SPEC 3, "The apply worker"): re-runs the policy for auto-applied actions
 * (demotion), local validation and the budget hard cap, then runs the kind's steps, each recorded before
 * and after its upstream call. A drift demotes; a failure rolls a composite back in reverse, best effort;
 * `upstream_unavailable` hands the job back for a later attempt, continuing after the last recorded step.
 * Every upstream write and every state write is fenced by the job's lease: a worker that lost its job (paused
 * past its lease, then claimed by another) stops before its next write and leaves the job to the new owner.
 */
import type { ActionRecord, Failure } from "@acs/domain/Actions"
import type { UpstreamClient, UpstreamFailure } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Option, Schema } from "effect"
import { type AccountRecord, Accounts } from "../accounts/Accounts.ts"
import { Connections } from "../accounts/Connections.ts"
import { kindNamed } from "../actions/Catalog.ts"
import type { Ids, KindDefinition, Step, StepContext, StepFailure, Touched } from "../actions/Kind.ts"
import { Ledger } from "../actions/Ledger.ts"
import { describeOutsideChange } from "../actions/OutsideChangeText.ts"
import { outsideChangesTo } from "../actions/OutsideChanges.ts"
import { touchedEntities } from "../actions/TouchedEntities.ts"
import { Transitions } from "../actions/Transitions.ts"
import { policyFacts, warehouseView } from "../actions/WarehouseView.ts"
import { BUDGET_HARD_CAP_MULTIPLE, stillClears } from "../policy/Policy.ts"
import { OrgSettings } from "../settings/Settings.ts"
import { LeaseLost } from "../queue/Jobs.ts"
import { observeApplyLag } from "../telemetry/Metrics.ts"
import { writeBack } from "./WarehouseWriteBack.ts"

/**
 * What became of the job: done (any terminal or demoted state), to be tried again later, or abandoned because
 * the lease was lost (another worker may own the job now and settles it).
 */
export type ApplyOutcome =
  | { readonly _tag: "Done" }
  | { readonly _tag: "Retry"; readonly error: string; readonly retryAfterMs: number | undefined }
  | { readonly _tag: "LeaseLost" }

/** Re-verifies (and renews) the job's lease; fails when the job may belong to another worker now. */
export type LeaseCheck = Effect.Effect<void, LeaseLost>

interface RecordedStep {
  readonly step: number
  readonly status: "started" | "succeeded" | "failed"
  readonly output: { readonly ids: Ids; readonly touched: Touched; readonly warnings: ReadonlyArray<string> } | null
}

const mergeTouched = (all: ReadonlyArray<Touched>): Touched => {
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

/**
 * The client with the lease check in front of every write. The steps' error channel holds upstream failures
 * only, so a lost lease travels as a `LeaseLost` defect that `apply` turns back into an outcome.
 */
const fenceWrites = (client: UpstreamClient, lease: LeaseCheck): UpstreamClient => {
  const guard = Effect.orDie(lease)
  const fence = <Args extends ReadonlyArray<unknown>, A>(write: (...args: Args) => Effect.Effect<A, UpstreamFailure>) =>
  (...args: Args): Effect.Effect<A, UpstreamFailure> => Effect.zipRight(guard, Effect.suspend(() => write(...args)))
  return {
    ...client,
    createCampaign: fence(client.createCampaign),
    updateCampaign: fence(client.updateCampaign),
    deleteCampaign: fence(client.deleteCampaign),
    createAdGroup: fence(client.createAdGroup),
    updateAdGroup: fence(client.updateAdGroup),
    deleteAdGroup: fence(client.deleteAdGroup),
    createKeywords: fence(client.createKeywords),
    updateKeywords: fence(client.updateKeywords),
    deleteKeywords: fence(client.deleteKeywords),
    createNegativeKeywords: fence(client.createNegativeKeywords),
    deleteNegativeKeywords: fence(client.deleteNegativeKeywords),
    updateAd: fence(client.updateAd)
  }
}

export class Apply extends Effect.Service<Apply>()("acs/Apply", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const connections = yield* Connections
    const ledger = yield* Ledger
    const transitions = yield* Transitions
    const accounts = yield* Accounts
    const settings = yield* OrgSettings

    /**
     * Runs `write` in one transaction behind the lease check: the check renews the job's row and holds its lock
     * until the write commits, so no other worker can claim the job in between.
     */
    const fenced = <A, E, R>(lease: LeaseCheck, write: Effect.Effect<A, E, R>) =>
      sql.withTransaction(Effect.zipRight(lease, write)).pipe(Effect.catchTag("SqlError", (error) => Effect.die(error)))

    /** `readOnly`: the upstream refused a write for the role, so the account is marked until a sync sees it back. */
    const fail = (action: ActionRecord, failure: Failure, options: { readonly lease?: LeaseCheck; readonly readOnly?: boolean } = {}) =>
      fenced(
        options.lease ?? Effect.void,
        Effect.all([
          // A failed compensation frees its original (inside `fail`).
          transitions.fail(action.actionId, failure),
          options.readOnly === true
            ? sql`UPDATE accounts SET read_only = true WHERE project_id = ${action.projectId}`.pipe(Effect.orDie)
            : Effect.void
        ], { discard: true })
      ).pipe(Effect.tap(() => Effect.logWarning("action failed").pipe(Effect.annotateLogs({ actionId: action.actionId, ...failure }))))

    /**
     * What the change history says about a drift the re-read found: who changed the entity outside acs and
     * when (since the proposal), as a suffix of the demotion reason; empty when it says nothing more.
     */
    const whoChanged = (client: UpstreamClient, account: AccountRecord, action: ActionRecord) =>
      outsideChangesTo(client, account.upstreamAccountId, action.created_at, touchedEntities(action)).pipe(
        Effect.map((changes) => changes.length === 0 ? "" : `; ${describeOutsideChange(changes[0]!)}`),
        // The history is a better explanation, not a condition of the demotion.
        Effect.catchAll(() => Effect.succeed(""))
      )

    const demote = (action: ActionRecord, reasons: ReadonlyArray<string>, lease: LeaseCheck) =>
      fenced(lease, transitions.demote(action.actionId, reasons)).pipe(
        Effect.tap(() => Effect.logInfo("action demoted").pipe(Effect.annotateLogs({ actionId: action.actionId, reasons })))
      )

    const recorded = (action: ActionRecord, run: number, phase: "apply" | "rollback") =>
      sql<RecordedStep>`SELECT step, status, output FROM action_steps
        WHERE action_id = ${action.actionId} AND run = ${run} AND phase = ${phase} ORDER BY step`.pipe(Effect.orDie)

    const recordStart = (action: ActionRecord, run: number, phase: "apply" | "rollback", index: number, step: Step) =>
      sql`INSERT INTO action_steps (action_id, run, phase, step, name, status)
          VALUES (${action.actionId}, ${run}, ${phase}, ${index + 1}, ${step.name}, 'started')
          ON CONFLICT (action_id, run, phase, step) DO UPDATE SET status = 'started', started_at = clock_timestamp()`
        .pipe(Effect.asVoid, Effect.orDie)

    const recordEnd = (
      action: ActionRecord,
      run: number,
      phase: "apply" | "rollback",
      index: number,
      outcome: { readonly output: unknown } | { readonly error: string }
    ) =>
      sql`UPDATE action_steps SET finished_at = clock_timestamp(),
            status = ${"error" in outcome ? "failed" : "succeeded"},
            output = ${"output" in outcome ? JSON.stringify(outcome.output) : null}::jsonb,
            error = ${"error" in outcome ? outcome.error : null}
          WHERE action_id = ${action.actionId} AND run = ${run} AND phase = ${phase} AND step = ${index + 1}`
        .pipe(Effect.asVoid, Effect.orDie)

    /** Undoes completed steps in reverse, best effort; returns what the undo touched. */
    const rollback = (
      action: ActionRecord,
      run: number,
      steps: ReadonlyArray<Step>,
      done: number,
      context: StepContext,
      lease: LeaseCheck
    ) =>
      Effect.gen(function*() {
        const touched: Array<Touched> = []
        for (let index = done - 1; index >= 0; index--) {
          const step = steps[index]!
          if (step.undo === undefined) continue
          yield* fenced(lease, recordStart(action, run, "rollback", index, step))
          const undone = yield* step.undo(context).pipe(Effect.either)
          if (undone._tag === "Right") touched.push(undone.right)
          yield* fenced(
            lease,
            recordEnd(action, run, "rollback", index, undone._tag === "Right" ? { output: {} } : { error: undone.left.message })
          )
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
      lease: LeaseCheck
    ) =>
      Effect.gen(function*() {
        const steps = definition.steps(payload)
        // Approved by a person after a drift hold: they chose to write over the outside change.
        const acceptDrift = action.decidedBy !== null && action.policyReasons.some((reason) => reason.startsWith("drift:"))
        let ids: Ids = {}
        const touched: Array<Touched> = []
        const warnings: Array<string> = []
        for (const [index, step] of steps.entries()) {
          const prior = before.find((r) => r.step === index + 1)
          if (prior?.status === "succeeded" && prior.output !== null) {
            ids = { ...ids, ...prior.output.ids }
            touched.push(prior.output.touched)
            warnings.push(...prior.output.warnings)
            continue
          }
          const context: StepContext = { client, accountId: account.upstreamAccountId, ids, acceptDrift }
          yield* fenced(lease, recordStart(action, run, "apply", index, step))
          const outcome = yield* step.apply(context).pipe(Effect.either)
          if (outcome._tag === "Left") {
            const error = outcome.left
            if (error._tag === "UpstreamUnavailable") {
              // Not processed upstream (or unknown): the next attempt reconciles this step by reading first.
              return { _tag: "Unavailable" as const, error }
            }
            yield* fenced(lease, recordEnd(action, run, "apply", index, { error: messageOf(error) }))
            const undone = yield* rollback(action, run, steps, index, context, lease)
            yield* fenced(lease, writeBack(account.projectId, mergeTouched([...touched, ...undone])))
            if (error._tag === "Drift") return { _tag: "Drift" as const, reason: error.reason }
            const failure: Failure = {
              step: definition.composite ? index + 1 : null,
              stepName: step.name,
              message: definition.composite
                ? `step ${index + 1} (${step.name}) failed: ${messageOf(error)}; the steps before it were rolled back`
                : messageOf(error),
              upstreamRequestId: requestIdOf(error)
            }
            return { _tag: "Failed" as const, failure, readOnly: error._tag === "ReadOnlyAccount" }
          }
          yield* fenced(lease, recordEnd(action, run, "apply", index, { output: outcome.right }))
          ids = { ...ids, ...outcome.right.ids }
          touched.push(outcome.right.touched)
          warnings.push(...outcome.right.warnings)
        }
        return { _tag: "Applied" as const, ids, touched: mergeTouched(touched), warnings }
      })

    const runAction = <P>(definition: KindDefinition<P>, action: ActionRecord, run: number, account: AccountRecord, lease: LeaseCheck) =>
      Effect.gen(function*() {
        const payload = yield* Schema.decodeUnknown(definition.payload)(action.payload).pipe(Effect.orDie)
        const before = yield* recorded(action, run, "apply")
        // Checks run before the first upstream call of a run; a run already under way (a retry after
        // upstream_unavailable, or a crash) is only reconciled, since its writes may have landed and a sync
        // may already show them.
        const begun = before.length > 0
        const autoApplied = action.mode === "auto_applied" && action.decidedBy === null && action.revertOf === null
        if (autoApplied && !begun) {
          const [switchState, facts] = yield* Effect.all([settings.read(account.orgId), policyFacts(account)])
          const demotions = stillClears({
            killSwitchOn: switchState.platformAutoApply,
            accountStatus: account.status,
            reviewTier: definition.reviewTier,
            verdict: yield* definition.autoApply(payload, facts)
          })
          if (demotions.length > 0) return yield* demote(action, demotions, lease)
        }
        if (account.readOnly && !begun) {
          return yield* fail(action, {
            step: null,
            stepName: null,
            message: "read_only_account: the upstream credential cannot write to this account",
            upstreamRequestId: null
          }, { lease })
        }
        const view = yield* warehouseView(account)
        const recheck = begun ? Either.right(undefined) : yield* definition.recheck(payload, view).pipe(Effect.either)
        if (recheck._tag === "Left") {
          const error = recheck.left
          const message = error._tag === "ValidationFailed" ? error.validation_errors.join("; ") : error.message
          return yield* fail(action, { step: null, stepName: null, message: `local validation at apply: ${message}`, upstreamRequestId: null }, {
            lease
          })
        }
        const budget = begun ? undefined : definition.budgetChange?.(payload)
        if (budget !== undefined) {
          const campaign = yield* view.campaign(budget.campaignId)
          const warehouseBudget = campaign?.dailyBudgetMicros ?? null
          if (warehouseBudget !== null && budget.newDailyBudgetMicros > BUDGET_HARD_CAP_MULTIPLE * warehouseBudget) {
            return yield* fail(action, {
              step: null,
              stepName: null,
              message: `hard cap: the new daily budget is more than ${BUDGET_HARD_CAP_MULTIPLE} times the warehouse value ` +
                `(${warehouseBudget} micros); acs refuses it`,
              upstreamRequestId: null
            }, { lease })
          }
        }
        yield* fenced(lease, transitions.markApplying(action.actionId))
        const client = fenceWrites(yield* connections.clientFor(account.orgId), lease)
        const outcome = yield* runSteps(definition, action, run, payload, client, account, before, lease)
        switch (outcome._tag) {
          case "Unavailable":
            return yield* outcome.error
          case "Drift":
            return yield* demote(action, [`drift: ${outcome.reason}${yield* whoChanged(client, account, action)}`], lease)
          case "Failed":
            return yield* fail(action, outcome.failure, { lease, readOnly: outcome.readOnly })
          case "Applied":
            yield* fenced(
              lease,
              Effect.all([
                writeBack(account.projectId, outcome.touched),
                // An applied compensation reverts its original (inside `markApplied`).
                transitions.markApplied(action.actionId, { warnings: outcome.warnings, result: outcome.ids })
              ], { discard: true })
            )
            yield* Effect.logInfo("action applied").pipe(Effect.annotateLogs({ actionId: action.actionId, kind: action.kind }))
            yield* observeApplyLag(action.kind, ((yield* Clock.currentTimeMillis) - Date.parse(action.decidedAt ?? action.created_at)) / 1000)
        }
      })

    /**
     * Runs one claimed action to a terminal or demoted state, or says to retry it later. `lease` guards every
     * write: once it fails, the apply stops where it is and the outcome is `LeaseLost`.
     */
    const apply = (actionId: string, projectId: string, lease: LeaseCheck) =>
      Effect.gen(function*() {
        const found = yield* ledger.forApply(projectId, actionId)
        // A job whose action was decided or applied meanwhile has nothing left to do.
        if (found === undefined || (found.action.status !== "approved" && found.action.status !== "applying")) {
          return { _tag: "Done" } as ApplyOutcome
        }
        const { action, run } = found
        const account = yield* accounts.find(projectId)
        if (Option.isNone(account)) return { _tag: "Done" } as ApplyOutcome
        const failed = (message: string, upstreamRequestId: string | null = null, readOnly = false) =>
          fail(action, { step: null, stepName: null, message, upstreamRequestId }, { lease, readOnly }).pipe(
            Effect.as({ _tag: "Done" } as ApplyOutcome)
          )
        // Outside changes are recorded applied and never queued; nothing applies them.
        if (action.kind === "external_change") return { _tag: "Done" } as ApplyOutcome
        return yield* kindNamed(action.kind).use((definition) => runAction(definition, action, run, account.value, lease)).pipe(
          Effect.as({ _tag: "Done" } as ApplyOutcome),
          Effect.catchTags({
            UpstreamUnavailable: (error) =>
              fenced(lease, transitions.markApplying(action.actionId)).pipe(
                Effect.as({ _tag: "Retry", error: error.message, retryAfterMs: error.retry_after_ms } as ApplyOutcome)
              ),
            ConnectionError: (error) => failed(`connection_error: ${error.message}`),
            ReadOnlyAccount: (error) => failed(`read_only_account: ${error.message}`, null, true),
            UpstreamError: (error) => failed(`upstream_error: ${error.message}`, error.request_id ?? null),
            NotFound: (error) => failed(`not_found: ${error.message}`)
          })
        )
      }).pipe(
        Effect.catchSomeDefect((defect) => defect instanceof LeaseLost ? Option.some(Effect.fail(defect)) : Option.none()),
        Effect.catchTag("LeaseLost", (lost) =>
          Effect.logWarning("lease lost mid-apply: the job is left to the worker that holds it now").pipe(
            Effect.annotateLogs({ actionId, jobId: lost.jobId }),
            Effect.as({ _tag: "LeaseLost" } as ApplyOutcome)
          )),
        Effect.withSpan("Apply.apply", { attributes: { actionId } })
      )

    return { apply, fail } as const
  }),
  // Connections (over the upstream port) comes from the application layer.
  dependencies: [Ledger.Default, Transitions.Default, Accounts.Default, OrgSettings.Default]
}) {}
