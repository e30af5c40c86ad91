/**
 * Applies one claimed action (docs/contract.md 3, "The apply worker"): re-runs the policy for auto-applied actions
 * (demotion), local validation and the budget hard cap, then runs the kind's steps, each recorded before its
 * first upstream write (by that write's fence: worker/WriteFence.ts) and after it. A drift demotes; a failure
 * rolls a composite back in reverse, best effort; `upstream_unavailable` hands the job back for a later
 * attempt, continuing after the last recorded step.
 * Every upstream write and every state write is fenced by the job's lease: a worker that lost its job (paused
 * past its lease, then claimed by another) stops before its next write and leaves the job to the new owner.
 * A state write is one statement behind the lease renewal (`WITH lease AS (...)`); the write that ends the run
 * deletes the job with it (an applied run in one statement, a failed or demoted one in a transaction), so the
 * outcome and the job's end commit together (docs/decisions/pipeline.md).
 */
import type { ActionRecord, Failure } from "@acs/domain/Actions"
import type { UpstreamCampaign, UpstreamClient } from "@acs/upstream/Upstream"
import { SqlClient, type Statement } from "@effect/sql"
import { Clock, Effect, Either, Layer, Option, Schema } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { Connections, type SavedConnection } from "../accounts/Connections.ts"
import { kindNamed } from "../actions/kinds/Catalog.ts"
import type { Ids, KindDefinition, PolicyFacts, Step, StepContext, StepFailure, Touched } from "../actions/kinds/Kind.ts"
import { actionColumns, type ActionRow, toRecord } from "../actions/pipeline/ActionRow.ts"
import { describeOutsideChange } from "../actions/outside/OutsideChangeText.ts"
import { outsideChangesTo } from "../actions/outside/OutsideChanges.ts"
import { touchedEntities } from "../actions/outside/TouchedEntities.ts"
import { type FencedWrite, Transitions } from "../actions/pipeline/Transitions.ts"
import {
  campaignJson,
  type CampaignRow,
  policyFactsWith,
  readTargetBand,
  toCampaign,
  type WarehouseView,
  warehouseView
} from "../actions/kinds/WarehouseView.ts"
import { BUDGET_HARD_CAP_MULTIPLE, stillClears } from "../policy/Policy.ts"
import { LeaseLost } from "../queue/Jobs.ts"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { SecretBox } from "../db/SecretBox.ts"
import { TestDatabase } from "../db/TestDatabase.ts"
import { observeApplyLag } from "../telemetry/Metrics.ts"
import { writeBackCall } from "./WarehouseWriteBack.ts"
import { makeWriteFence, type WriteFence } from "./WriteFence.ts"

/**
 * What became of the job: done (any terminal or demoted state), to be tried again later, or abandoned because
 * the lease was lost (another worker may own the job now and settles it).
 */
export type ApplyOutcome =
  /** `settled`: the job was deleted with the outcome's state change; otherwise the worker completes it. */
  | { readonly _tag: "Done"; readonly settled: boolean }
  | { readonly _tag: "Retry"; readonly error: string; readonly retryAfterMs: number | undefined }
  | { readonly _tag: "LeaseLost" }

/** The claimed job's lease as the apply uses it (made by the worker, Worker.ts). */
export interface Lease {
  /** Re-verifies (and renews) the lease in a statement of its own; fails when the job may be another worker's now. */
  readonly check: Effect.Effect<void, LeaseLost>
  /** The renewal for `WITH lease AS (...)`: a write that happens only while it answers a row is fenced in one statement. */
  readonly renewal: Statement.Fragment
  /** What a fenced write that found no lease answers: the job is no longer ours. */
  readonly lost: Effect.Effect<never, LeaseLost>
  /** Deletes the job while it is ours (`LeaseLost` otherwise): the first statement of the transaction that ends the run. */
  readonly settle: Effect.Effect<void, LeaseLost>
  /** The deletion for `WITH settled AS (...)`: a write that happens only while it answers a row ends the job in one statement. */
  readonly settlement: Statement.Fragment
}

/** The warehouse's row of the campaign an action's payload names, read with the action (undefined: no such row). */
interface NamedCampaign {
  readonly campaignId: string
  readonly campaign: UpstreamCampaign | undefined
}

interface RecordedStep {
  readonly step: number
  readonly status: "started" | "succeeded" | "failed"
  readonly output: { readonly ids: Ids; readonly touched: Touched; readonly warnings: ReadonlyArray<string> } | null
}

/**
 * What an apply starts from (`startingPoint`): the action, its run, the kill switch, the run's steps, its
 * account's columns, its connection, the campaign its payload names.
 */
export type StartingRow = ActionRow & {
  /** Always true: tells a row found from the nulls of a claim that carried none. */
  readonly found: boolean
  readonly applyRun: number
  readonly platformAutoApply: boolean
  readonly recordedSteps: ReadonlyArray<RecordedStep>
  /** Null when the account is gone (the other account columns with it). */
  readonly accountOrgId: string | null
  readonly accountUpstreamAccountId: string
  readonly accountName: string
  readonly accountStatus: AccountRecord["status"]
  readonly accountCurrency: string
  readonly accountTimeZone: string
  readonly accountReadOnly: boolean
  readonly accountLastSyncedAt: string | null
  readonly accountFirstSyncedDay: string | null
  readonly accountLastSyncedDay: string | null
  /** Null when the org has no connection (the other connection columns with it). */
  readonly connectionStatus: SavedConnection["status"] | null
  readonly connectionApiVersion: SavedConnection["apiVersion"]
  readonly connectionCredentialsEncrypted: string | null
  /** The campaign the payload names (`campaignId`), null when it names none; `namedCampaign` null when there is no such row. */
  readonly namedCampaignId: string | null
  readonly namedCampaign: CampaignRow | null
}

/** The account as `Accounts.find` reads it (the same columns, the same raw text for times and days). */
const accountOf = (row: StartingRow): AccountRecord | undefined =>
  row.accountOrgId === null ? undefined : {
    projectId: row.projectId,
    orgId: row.accountOrgId,
    upstreamAccountId: row.accountUpstreamAccountId,
    name: row.accountName,
    status: row.accountStatus,
    currency: row.accountCurrency,
    timeZone: row.accountTimeZone,
    readOnly: row.accountReadOnly,
    lastSyncedAt: row.accountLastSyncedAt,
    firstSyncedDay: row.accountFirstSyncedDay,
    lastSyncedDay: row.accountLastSyncedDay
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

export class Apply extends Effect.Service<Apply>()("acs/Apply", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const connections = yield* Connections
    const transitions = yield* Transitions
    const columns = actionColumns(sql)

    /**
     * Runs the write that ends the run in one transaction with the job's deletion (which fails first when the
     * job is no longer ours): the outcome, its event and the job's end commit together or not at all.
     */
    const settled = <A, E, R>(lease: Lease, write: Effect.Effect<A, E, R>) =>
      sql.withTransaction(Effect.zipRight(lease.settle, write)).pipe(Effect.catchTag("SqlError", (error) => Effect.die(error)))

    /** A one-statement write fenced by `lease.renewal` answered no row: the job is no longer ours. */
    const requireRow = (lease: Lease) => (rows: ReadonlyArray<unknown>) => rows.length > 0 ? Effect.void : lease.lost

    /**
     * Fails the action and ends the job with it. `readOnly`: the upstream refused a write for the role, so the
     * account is marked until a sync sees it back.
     */
    const fail = (action: ActionRecord, failure: Failure, lease: Lease, options: { readonly readOnly?: boolean } = {}) =>
      settled(
        lease,
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

    const demote = (action: ActionRecord, reasons: ReadonlyArray<string>, lease: Lease) =>
      settled(lease, transitions.demote(action.actionId, reasons)).pipe(
        Effect.tap(() => Effect.logInfo("action demoted").pipe(Effect.annotateLogs({ actionId: action.actionId, reasons })))
      )

    /**
     * What an apply starts from, as one query: the action and its run, the org's kill switch, and the steps this
     * run recorded already (empty for a run not yet begun). The claim carries it (Worker.ts), so claiming a job
     * and reading what it needs is one round trip; `projectId` and `actionId` are values or the claim's columns.
     */
    const startingPoint = (projectId: string | Statement.Fragment, actionId: string | Statement.Fragment) =>
      sql`SELECT true AS found, a.*, acc.org_id AS account_org_id, acc.upstream_account_id AS account_upstream_account_id,
          acc.name AS account_name, acc.status AS account_status, acc.currency AS account_currency,
          acc.time_zone AS account_time_zone, acc.read_only AS account_read_only, acc.last_synced_at AS account_last_synced_at,
          acc.first_synced_day AS account_first_synced_day, acc.last_synced_day AS account_last_synced_day,
          c.api_version AS connection_api_version, c.credentials_encrypted AS connection_credentials_encrypted,
          c.status AS connection_status,
          a.payload->>'campaignId' AS named_campaign_id, ${campaignJson(sql, "cmp")} AS named_campaign
        FROM (
          SELECT ${columns}, apply_run,
            (SELECT platform_auto_apply FROM orgs WHERE orgs.org_id = actions.org_id) AS platform_auto_apply,
            (SELECT coalesce(json_agg(json_build_object('step', s.step, 'status', s.status, 'output', s.output) ORDER BY s.step), '[]'::json)
              FROM action_steps s WHERE s.action_id = actions.action_id AND s.run = actions.apply_run AND s.phase = 'apply') AS recorded_steps
          FROM actions WHERE project_id = ${projectId} AND action_id = ${actionId}
        ) a LEFT JOIN accounts acc ON acc.project_id = a.project_id
        LEFT JOIN connections c ON c.org_id = acc.org_id
        LEFT JOIN campaigns cmp ON cmp.project_id = a.project_id AND cmp.campaign_id = a.payload->>'campaignId'`

    /** `startingPoint` read on its own. */
    const forApply = (projectId: string, actionId: string) =>
      sql<StartingRow>`/* prepared */ ${startingPoint(projectId, actionId)}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie)

    /** The starting point as the apply uses it; undefined when there is no such action. */
    const startFrom = (row: StartingRow | undefined) =>
      row === undefined || !row.found
        ? undefined
        : {
          action: toRecord(row),
          run: row.applyRun,
          killSwitchOn: row.platformAutoApply,
          before: row.recordedSteps,
          account: accountOf(row),
          namedCampaign: row.namedCampaignId === null
            ? undefined
            : { campaignId: row.namedCampaignId, campaign: row.namedCampaign === null ? undefined : toCampaign(row.namedCampaign) },
          connection: row.connectionStatus === null ? undefined : {
            apiVersion: row.connectionApiVersion,
            credentialsEncrypted: row.connectionCredentialsEncrypted,
            status: row.connectionStatus
          }
        }

    /** The step is under way (recorded before its upstream call), as a statement answering its row, written only where `fence` holds. */
    const stepStart = (action: ActionRecord, run: number, phase: "apply" | "rollback", index: number, step: Step): FencedWrite => (fence) =>
      sql`INSERT INTO action_steps (action_id, run, phase, step, name, status)
          SELECT ${action.actionId}, ${run}::int, ${phase}, ${index + 1}::int, ${step.name}, 'started' WHERE ${fence}
          ON CONFLICT (action_id, run, phase, step) DO UPDATE SET status = 'started', started_at = clock_timestamp()
          RETURNING step`

    /** `stepStart`, fenced by the lease's renewal in the same statement. */
    const recordStart = (action: ActionRecord, run: number, phase: "apply" | "rollback", index: number, step: Step, lease: Lease) =>
      sql`/* prepared */ WITH lease AS (${lease.renewal})
        ${stepStart(action, run, phase, index, step)(sql`EXISTS (SELECT 1 FROM lease)`)}`.pipe(Effect.orDie, Effect.flatMap(requireRow(lease)))

    type StepEnd = { readonly output: unknown } | { readonly error: string }

    /** The step's outcome as a statement answering its row, written only where `fence` holds. */
    const stepEnd = (action: ActionRecord, run: number, phase: "apply" | "rollback", index: number, outcome: StepEnd, fence: Statement.Fragment) =>
      sql`UPDATE action_steps SET finished_at = clock_timestamp(),
            status = ${"error" in outcome ? "failed" : "succeeded"},
            output = ${"output" in outcome ? JSON.stringify(outcome.output) : null}::jsonb,
            error = ${"error" in outcome ? outcome.error : null}
          WHERE action_id = ${action.actionId} AND run = ${run} AND phase = ${phase} AND step = ${index + 1} AND ${fence}
          RETURNING step`

    /** The step's outcome, fenced by the lease's renewal in the same statement. */
    const recordEnd = (action: ActionRecord, run: number, phase: "apply" | "rollback", index: number, outcome: StepEnd, lease: Lease) =>
      sql`/* prepared */ WITH lease AS (${lease.renewal})
        ${stepEnd(action, run, phase, index, outcome, sql`EXISTS (SELECT 1 FROM lease)`)}`.pipe(Effect.orDie, Effect.flatMap(requireRow(lease)))

    /**
     * Marks the action applying behind the lease (one statement, with `alongside`: the run's first step record);
     * a lost lease stops the apply.
     */
    const markApplying = (action: ActionRecord, lease: Lease, alongside: ReadonlyArray<FencedWrite> = []) =>
      transitions.markApplying(action.actionId, lease.renewal, alongside).pipe(
        // No row: the job is no longer ours, or (never on this path) the action left approved/applying.
        Effect.flatMap((changed) => changed ? Effect.void : lease.check)
      )

    /** The policy's facts, with the target band read only when a rule asks for it (a budget raise does, a cut does not). */
    const factsFor = (account: AccountRecord) =>
      Effect.gen(function*() {
        const withBand = yield* Effect.cached(
          Effect.flatMap(readTargetBand(account.projectId), (band) => policyFactsWith(account, band)).pipe(
            Effect.provideService(SqlClient.SqlClient, sql)
          )
        )
        const facts: PolicyFacts = {
          ...(yield* policyFactsWith(account, null)),
          cpaBand: (campaignId) => Effect.flatMap(withBand, (facts) => facts.cpaBand(campaignId))
        }
        return facts
      })

    /**
     * One read of a campaign per apply: the re-check and the hard cap ask for the same row, and the one the
     * payload names came with the action (`startingPoint`).
     */
    const withCampaignsRead = (view: WarehouseView, named: NamedCampaign | undefined): WarehouseView => {
      const seen = new Map<string, UpstreamCampaign | undefined>()
      if (named !== undefined) seen.set(named.campaignId, named.campaign)
      return {
        ...view,
        campaign: (campaignId) =>
          Effect.suspend(() =>
            seen.has(campaignId)
              ? Effect.succeed(seen.get(campaignId))
              : view.campaign(campaignId).pipe(Effect.tap((campaign) => Effect.sync(() => seen.set(campaignId, campaign))))
          )
      }
    }

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
          yield* fence.startOnWrite(recordStart(action, run, "rollback", index, step, lease))
          const undone = yield* step.undo(context).pipe(Effect.either)
          yield* fence.started
          if (undone._tag === "Right") touched.push(undone.right)
          yield* recordEnd(action, run, "rollback", index, undone._tag === "Right" ? { output: {} } : { error: undone.left.message }, lease)
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
            marked ? recordStart(action, run, "apply", index, step, lease) : markApplying(action, lease, [stepStart(action, run, "apply", index, step)])
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
            yield* recordEnd(action, run, "apply", index, { error: messageOf(error) }, lease)
            const undone = yield* rollback(action, run, steps, index, context, lease, fence)
            yield* sql`/* prepared */ WITH lease AS (${lease.renewal})
              SELECT ${writeBackCall(sql, account.projectId, mergeTouched([...touched, ...undone]))} FROM lease`.pipe(
              Effect.orDie,
              Effect.flatMap(requireRow(lease))
            )
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
          if (index < steps.length - 1) yield* recordEnd(action, run, "apply", index, { output: outcome.right }, lease)
          else last = { index, output: outcome.right }
        }
        // Every step had succeeded before this attempt (it ends a run a crash interrupted after its last step).
        if (!marked) yield* markApplying(action, lease)
        return { _tag: "Applied" as const, ids, touched: mergeTouched(touched), warnings, last }
      })

    interface Claimed {
      readonly action: ActionRecord
      readonly namedCampaign: NamedCampaign | undefined
      readonly run: number
      readonly killSwitchOn: boolean
      readonly before: ReadonlyArray<RecordedStep>
      readonly connection: SavedConnection | undefined
    }

    const runAction = <P>(definition: KindDefinition<P>, claimed: Claimed, account: AccountRecord, lease: Lease) =>
      Effect.gen(function*() {
        const { action, before, run } = claimed
        const payload = yield* Schema.decodeUnknown(definition.payload)(action.payload).pipe(Effect.orDie)
        // Checks run before the first upstream call of a run; a run already under way (a retry after
        // upstream_unavailable, or a crash) is only reconciled, since its writes may have landed and a sync
        // may already show them.
        const begun = before.length > 0
        const autoApplied = action.mode === "auto_applied" && action.decidedBy === null && action.revertOf === null
        if (autoApplied && !begun) {
          const facts = yield* factsFor(account)
          const demotions = stillClears({
            killSwitchOn: claimed.killSwitchOn,
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
          }, lease)
        }
        const view = withCampaignsRead(yield* warehouseView(account), claimed.namedCampaign)
        const recheck = begun ? Either.right(undefined) : yield* definition.recheck(payload, view).pipe(Effect.either)
        if (recheck._tag === "Left") {
          const error = recheck.left
          const message = error._tag === "ValidationFailed" ? error.validation_errors.join("; ") : error.message
          return yield* fail(action, { step: null, stepName: null, message: `local validation at apply: ${message}`, upstreamRequestId: null }, lease)
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
            }, lease)
          }
        }
        const fence = makeWriteFence(lease.check)
        const client = fence.fenced(yield* connections.clientFor(account.orgId, { reuse: true, saved: claimed.connection }))
        const outcome = yield* runSteps(definition, action, run, payload, client, account, before, lease, fence)
        switch (outcome._tag) {
          case "Unavailable":
            return yield* outcome.error
          case "Drift":
            return yield* demote(action, [`drift: ${outcome.reason}${yield* whoChanged(client, account, action)}`], lease)
          case "Failed":
            // The kept client's credentials were refused (a token refresh): a new client next time, the connection marked.
            if (outcome.refusedCredentials !== null) yield* connections.refused(account.orgId, outcome.refusedCredentials)
            return yield* fail(action, outcome.failure, lease, { readOnly: outcome.readOnly })
          case "Applied": {
            const last = outcome.last
            // One statement ends the run: the job's deletion fences the last step's record, the write-back and
            // the status change with its event (and, for a compensation, its original's reversal).
            const ended = yield* transitions.markAppliedEndingRun(action.actionId, { warnings: outcome.warnings, result: outcome.ids }, {
              settlement: lease.settlement,
              alongside: [
                ...(last === undefined ? [] : [(fence: Statement.Fragment) => stepEnd(action, run, "apply", last.index, { output: last.output }, fence)]),
                (fence) => sql`SELECT ${writeBackCall(sql, account.projectId, outcome.touched)} WHERE ${fence}`
              ]
            })
            if (!ended.fenced) return yield* lease.lost
            yield* Effect.logInfo("action applied").pipe(Effect.annotateLogs({ actionId: action.actionId, kind: action.kind }))
            yield* observeApplyLag(action.kind, ((yield* Clock.currentTimeMillis) - Date.parse(action.decidedAt ?? action.created_at)) / 1000)
          }
        }
      })

    const done = (settledJob: boolean): ApplyOutcome => ({ _tag: "Done", settled: settledJob })

    /**
     * Runs one claimed action to a terminal or demoted state (ending its job in the same transaction), or says
     * to retry it later. `lease` guards every write: once it fails, the apply stops where it is and the
     * outcome is `LeaseLost`.
     */
    const apply = (actionId: string, projectId: string, lease: Lease, carried: StartingRow | undefined) =>
      Effect.gen(function*() {
        const pending = (start: ReturnType<typeof startFrom>) =>
          start !== undefined && (start.action.status === "approved" || start.action.status === "applying")
        let found = startFrom(carried)
        // The claim read the action with its statement's snapshot, which may predate a re-enqueue the claim
        // saw (an approval committed meanwhile): "nothing to do" is confirmed by a read of its own.
        if (!pending(found)) found = startFrom(yield* forApply(projectId, actionId))
        // A job whose action was decided or applied meanwhile has nothing left to do.
        if (found === undefined || !pending(found)) return done(false)
        const { account, action } = found
        if (account === undefined) return done(false)
        const failed = (message: string, upstreamRequestId: string | null = null, readOnly = false) =>
          fail(action, { step: null, stepName: null, message, upstreamRequestId }, lease, { readOnly }).pipe(Effect.as(done(true)))
        // Outside changes are recorded applied and never queued; nothing applies them.
        if (action.kind === "external_change") return done(false)
        return yield* kindNamed(action.kind).use((definition) => runAction(definition, found, account, lease)).pipe(
          // Every way through runAction ends the run with `settled` (or fails, below).
          Effect.as(done(true)),
          Effect.catchTags({
            UpstreamUnavailable: (error) =>
              markApplying(action, lease).pipe(
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
        Effect.withSpan("Apply.apply", { attributes: { actionId }, ...HOT_SPAN })
      )

    return { startingPoint, apply, fail } as const
  }),
  // Connections (over the upstream port) comes from the application layer.
  dependencies: [Transitions.Default]
}) {
  /**
   * Over the embedded test database (db/TestDatabase.ts), with the connections it applies through, for
   * in-process tests; the upstream port stays the caller's (the simulator's: upstream/ sits above worker/).
   */
  static readonly Test = Apply.Default.pipe(
    Layer.provideMerge(Connections.Default),
    Layer.provideMerge(Layer.mergeAll(SecretBox.Default, TestDatabase))
  )
}
