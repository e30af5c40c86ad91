/**
 * The plan (`GET /accounts/{projectId}/plan`): suggested changes computed from the warehouse's 30-day window
 * and the operator's target band, each a proposal body that passes its kind's validation as is. Five rules:
 * negative keywords for search terms that spend without installs, keyword pauses and bid cuts where the CPA
 * is far over the band, budget raises for budget-limited campaigns inside the band, CPA-goal steps toward
 * the band, and harvests of converting search terms that are not keywords yet. Ranked by spend at stake, descending, ties by item id. A budget raise the account's guardrails would
 * refuse (past the ceiling) or hold (inside the budget cooldown) is not suggested: it is listed in `withheld` with
 * the reason (docs/contract.md 3.3). Each rule is its own file; this one gathers the facts they share and ranks
 * what they suggest.
 */
import type { Plan as PlanDocument, PlanItem, WithheldItem } from "@acs/domain/Plan"
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { money } from "../actions/kinds/KindSupport.ts"
import { microsPerMinorUnit } from "../actions/pipeline/MinorUnits.ts"
import { policyFacts } from "../actions/kinds/WarehouseView.ts"
import type { Granted } from "../auth/Access.ts"
import { accountEnvelope } from "../policy/AutoApplyWindow.ts"
import { cooldownReason, lastChangeWithin } from "../policy/Cooldown.ts"
import { envelopeReasons } from "../policy/Envelope.ts"
import { readGuardrails } from "../policy/Guardrails.ts"
import { freshnessFor } from "../warehouse/Reads.ts"
import { budgetLimited, campaignTotals, FACT_DAYS, factWindow } from "./AccountFacts.ts"
import { budgetItems } from "./BudgetItems.ts"
import { cpaGoalItems } from "./CpaGoalItems.ts"
import { harvestItems } from "./HarvestItems.ts"
import { keywordItems } from "./KeywordItems.ts"
import { NEGATIVE_CPA_MULTIPLE, NEGATIVE_TAPS_FLOOR, negativeItems } from "./NegativeKeywordItems.ts"
import { type Context, cpaOf, sum } from "./PlanItems.ts"

export class Plan extends Effect.Service<Plan>()("acs/Plan", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** The items the guardrails let through, and the budget raises they would refuse or hold, each with why. */
    const guarded = (projectId: string, currency: string, items: ReadonlyArray<PlanItem>) =>
      Effect.gen(function*() {
        const raises = items.flatMap((item) => {
          const body = item.proposal.body
          return "newDailyBudgetMicros" in body && "campaignId" in body ? [{ item, body }] : []
        })
        if (raises.length === 0) return { suggested: items, withheld: [] }
        const [rails, { state }] = yield* Effect.all([readGuardrails(sql, projectId), accountEnvelope(projectId)])
        const hours = rails.cooldownHours.budget
        const withheld: Array<WithheldItem> = []
        for (const { body, item } of raises) {
          const prior = item.evidence.dailyBudgetMicros ?? 0
          const payload = { campaignId: body.campaignId, priorDailyBudgetMicros: prior, newDailyBudgetMicros: body.newDailyBudgetMicros }
          const { ceiling } = envelopeReasons(state, body.newDailyBudgetMicros - prior, (micros) => money(micros, currency))
          const earlier = ceiling === undefined && hours > 0 ? yield* lastChangeWithin(projectId, "budget_change", payload, hours) : undefined
          const reason = ceiling ?? (earlier === undefined ? undefined : cooldownReason("budget", hours, earlier))
          if (reason !== undefined) withheld.push({ itemId: item.itemId, title: item.title, reason })
        }
        const out = new Set(withheld.map((item) => item.itemId))
        return { suggested: items.filter((item) => !out.has(item.itemId)), withheld }
      })

    const get = (grant: Granted<"getPlan">, limit: number) =>
      Effect.gen(function*() {
        const account = grant.account
        const now = yield* Clock.currentTimeMillis
        const window = factWindow(account, now)
        const facts = yield* policyFacts(account)
        const campaigns = yield* campaignTotals(account, window)
        const bands = new Map(
          yield* Effect.forEach(campaigns, (c) => facts.cpaBand(c.campaignId).pipe(Effect.map((band) => [c.campaignId, band] as const)))
        )
        const context: Context = {
          account,
          window,
          bands,
          unit: microsPerMinorUnit(account.currency)
        }
        const all = sum(campaigns)
        const accountCpa = cpaOf(all)
        const accountCpt = all.taps > 0 ? Math.round(all.spendMicros / all.taps) : null
        const negatives = accountCpa !== null
          ? negativeItems(context, NEGATIVE_CPA_MULTIPLE * accountCpa, `${NEGATIVE_CPA_MULTIPLE}× the account's ${FACT_DAYS}-day CPA of ${
            money(accountCpa, account.currency)
          }`)
          : accountCpt !== null
          ? negativeItems(context, NEGATIVE_TAPS_FLOOR * accountCpt, `the account has no install in ${FACT_DAYS} days: ` +
            `${NEGATIVE_TAPS_FLOOR} taps at its average cost per tap of ${money(accountCpt, account.currency)}`)
          : Effect.succeed([])
        const items = [
          ...(yield* negatives),
          ...(yield* keywordItems(context)),
          ...(yield* budgetItems(context, budgetLimited(account, window, campaigns), facts.campaignCpa30d)),
          ...(yield* cpaGoalItems(context)),
          ...(yield* harvestItems(context, accountCpa))
        ].sort((a, b) => b.impactMicros - a.impactMicros || (a.itemId < b.itemId ? -1 : a.itemId > b.itemId ? 1 : 0))
        const { suggested, withheld } = yield* guarded(account.projectId, account.currency, items)
        const slice = suggested.slice(0, limit)
        const plan: PlanDocument = {
          items: slice,
          total: suggested.length,
          truncated: slice.length < suggested.length,
          withheld,
          dataFreshness: freshnessFor(account, window, now)
        }
        return plan
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie, Effect.withSpan("Plan.get"))

    return { get } as const
  })
}) {}
