/**
 * What an apply checks before the first upstream call of a run (docs/decisions/pipeline.md "What the worker
 * re-checks"): the policy again for an auto-applied action (a demotion), the account's read-only mark, the
 * kind's local validation against the warehouse, the budget hard cap, and the account's budget ceiling for a raise
 * (budgets raised outside acs since the approval count: docs/contract.md 3.3). A run already under way (a retry after
 * `upstream_unavailable`, or a crash) is only reconciled: its writes may have landed and a sync may show them.
 */
import type { AutoApplyPause } from "@acs/domain/Guardrails"
import type { ActionRecord } from "@acs/domain/Actions"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Effect, Either, Schema } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import type { KindDefinition, PolicyFacts } from "../actions/kinds/Kind.ts"
import { minimumEvidenceOf, policyFactsWith, readTargetBand, type WarehouseView, warehouseView } from "../actions/kinds/WarehouseView.ts"
import { BUDGET_HARD_CAP_MULTIPLE, stillClears } from "../policy/Policy.ts"
import { ceilingReason } from "../policy/Envelope.ts"
import { money } from "../actions/kinds/KindSupport.ts"
import { decodeRows } from "../db/Rows.ts"
import type { NamedCampaign } from "./StartingPoint.ts"

/** Go on with the steps, demote the action to wait for a person, or fail it before any upstream call. */
export type Verdict =
  | { readonly _tag: "Proceed" }
  | { readonly _tag: "Demote"; readonly reasons: ReadonlyArray<string> }
  | { readonly _tag: "Fail"; readonly message: string }

/** What the checks read of the claimed action. */
export interface Checked<P> {
  /** Of the action, what decides whether it was auto-applied (and so whether the policy is asked again). */
  readonly action: Pick<ActionRecord, "actionId" | "mode" | "decidedBy" | "revertOf">
  readonly payload: P
  readonly account: AccountRecord
  readonly killSwitchOn: boolean
  /** The account's circuit breaker when open: an auto-applied action is demoted. */
  readonly autoApplyPaused: AutoApplyPause | null
  readonly namedCampaign: NamedCampaign | undefined
  /** The run recorded a step already: it is reconciled, not checked. */
  readonly begun: boolean
  /** The warehouse as the members of one bulk call share it (read once for all of them: MemberBulk.ts). */
  readonly view?: WarehouseView
}

const PROCEED: Verdict = { _tag: "Proceed" }

const decodeCeiling = decodeRows(Schema.Struct({
  total: Schema.NumberFromString,
  committed: Schema.NumberFromString,
  maxTotal: Schema.NullOr(Schema.NumberFromString),
  own: Schema.NumberFromString
}))

export const makeApplyChecks = (sql: SqlClient.SqlClient) => {
  /** The policy's facts, with the target band read only when a rule asks for it (a budget raise does, a cut does not). */
  const factsFor = (account: AccountRecord) =>
    Effect.gen(function*() {
      const minimumEvidence = yield* Effect.cached(minimumEvidenceOf(sql, account.projectId))
      const withBand = yield* Effect.cached(
        Effect.flatMap(readTargetBand(account.projectId), (band) => policyFactsWith(account, band, minimumEvidence)).pipe(
          Effect.provideService(SqlClient.SqlClient, sql)
        )
      )
      const facts: PolicyFacts = {
        ...(yield* policyFactsWith(account, null, minimumEvidence)),
        cpaBand: (campaignId) => Effect.flatMap(withBand, (facts) => facts.cpaBand(campaignId))
      }
      return facts
    }).pipe(Effect.provideService(SqlClient.SqlClient, sql))

  /**
   * One read of a campaign per apply: the re-check and the hard cap ask for the same row, and the one the
   * payload names came with the action (StartingPoint.ts).
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

  /**
   * A raise against the account's ceiling now: the warehouse's budgets (outside raises synced since the approval
   * included) with the raises on their way, this one counted by what it changes now: one statement, which reads
   * nothing more when the account has no ceiling (`acs_account_envelope` without `whole`). A revert is never held
   * (undoing is never blocked).
   */
  const ceilingAtApply = (account: AccountRecord, actionId: string, raised: number) =>
    sql`SELECT e.total::text, e.committed::text, e.max_total::text,
        (SELECT budget_delta_micros FROM actions WHERE project_id = ${account.projectId} AND action_id = ${actionId})::text AS own
      FROM acs_account_envelope(${account.projectId}, false) e`.pipe(
      Effect.flatMap(decodeCeiling),
      Effect.orDie,
      Effect.map((rows): Verdict => {
        const state = rows[0]
        if (state === undefined || state.maxTotal === null) return PROCEED
        const after = state.total + state.committed - state.own + raised
        if (after <= state.maxTotal) return PROCEED
        const reason = ceilingReason({
          raise: money(raised, account.currency),
          after: money(after, account.currency),
          max: money(state.maxTotal, account.currency)
        })
        return { _tag: "Fail", message: `at apply, ${reason}` }
      })
    )

  /** The client is provided only to the reads that need it, not around every check (a bulk call checks 100 members). */
  const check = <P>(definition: KindDefinition<P>, checked: Checked<P>): Effect.Effect<Verdict> =>
    Effect.gen(function*() {
      const { account, action, begun, payload } = checked
      if (begun) return PROCEED
      const autoApplied = action.mode === "auto_applied" && action.decidedBy === null && action.revertOf === null
      if (autoApplied) {
        const facts = yield* factsFor(account)
        const reasons = stillClears({
          killSwitchOn: checked.killSwitchOn,
          autoApplyPaused: checked.autoApplyPaused,
          accountStatus: account.status,
          reviewTier: definition.reviewTier,
          verdict: yield* definition.autoApply(payload, facts)
        })
        if (reasons.length > 0) return { _tag: "Demote", reasons } satisfies Verdict
      }
      if (account.readOnly) {
        return { _tag: "Fail", message: "read_only_account: the upstream credential cannot write to this account" } satisfies Verdict
      }
      const view = checked.view ??
        withCampaignsRead(yield* warehouseView(account).pipe(Effect.provideService(SqlClient.SqlClient, sql)), checked.namedCampaign)
      const recheck = yield* definition.recheck(payload, view).pipe(Effect.either)
      if (Either.isLeft(recheck)) {
        const error = recheck.left
        const message = error._tag === "ValidationFailed" ? error.validation_errors.join("; ") : error.message
        return { _tag: "Fail", message: `local validation at apply: ${message}` } satisfies Verdict
      }
      const budget = definition.budgetChange?.(payload)
      if (budget !== undefined) {
        const campaign = yield* view.campaign(budget.campaignId)
        const warehouseBudget = campaign?.dailyBudgetMicros ?? null
        if (warehouseBudget !== null && budget.newDailyBudgetMicros > BUDGET_HARD_CAP_MULTIPLE * warehouseBudget) {
          return {
            _tag: "Fail",
            message: `hard cap: the new daily budget is more than ${BUDGET_HARD_CAP_MULTIPLE} times the warehouse value ` +
              `(${warehouseBudget} micros); acs refuses it`
          } satisfies Verdict
        }
        const raised = budget.newDailyBudgetMicros - (warehouseBudget ?? 0)
        if (raised > 0 && action.revertOf === null) return yield* ceilingAtApply(account, action.actionId, raised)
      }
      return PROCEED
    })

  return { check } as const
}

export type ApplyChecks = ReturnType<typeof makeApplyChecks>
