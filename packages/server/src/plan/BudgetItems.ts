/** Plan rule (c): budget-limited campaigns whose CPA is inside the band get a budget raise. */
import { budgetChange } from "@acs/domain/ProposalKinds"
import { Effect } from "effect"
import { money } from "../actions/kinds/KindSupport.ts"
import { type BudgetLimited, FACT_DAYS } from "./AccountFacts.ts"
import { type Context, baseEvidence, bandText, MAX_MICROS, pathOf, planItem } from "./PlanItems.ts"

/** Budget raise in percent: inside the 30% auto-apply bound with room for rounding. */
export const BUDGET_RAISE_PERCENT = 20

/** (c) Budget-limited campaigns whose 30-day CPA (as the policy computes it) is inside the band: +20%. */
export const budgetItems = (c: Context, limited: ReadonlyArray<BudgetLimited>, campaignCpa: (id: string) => Effect.Effect<number | null>) =>
  Effect.forEach(limited, (campaign) =>
    Effect.gen(function*() {
      const { account } = c
      const band = c.bands.get(campaign.campaignId) ?? null
      if (band === null) return []
      const cpa = yield* campaignCpa(campaign.campaignId)
      if (cpa === null || cpa < band.minMicros || cpa > band.maxMicros) return []
      const budget = campaign.dailyBudgetMicros
      const raised = Math.floor((budget * (100 + BUDGET_RAISE_PERCENT)) / 100 / c.unit) * c.unit
      // The proposal schema caps amounts at 10^12 micros: past it there is nothing valid to propose.
      if (raised <= budget || raised > MAX_MICROS) return []
      const share = Math.round((campaign.avgDailySpendMicros / budget) * 100)
      const title = `Raise the daily budget of campaign "${campaign.name}" from ${money(budget, account.currency)} to ${
        money(raised, account.currency)
      }`
      return [planItem(
        `budget:${campaign.campaignId}`,
        title,
        `It spent on average ${money(campaign.avgDailySpendMicros, account.currency)} a day (${share}% of its budget) over ` +
          `${FACT_DAYS} days at a CPA of ${money(cpa, account.currency)}, inside the target band ${bandText(band, account.currency)}: ` +
          "the budget, not the bids, limits installs at an acceptable cost.",
        (raised - budget) * FACT_DAYS,
        { ...baseEvidence(campaign, band), dailyBudgetMicros: budget, avgDailySpendMicros: campaign.avgDailySpendMicros },
        {
          kind: budgetChange.kind,
          path: pathOf(account.projectId, budgetChange.path),
          body: { campaignId: campaign.campaignId, newDailyBudgetMicros: raised, reason: `acs plan: ${title}` }
        }
      )]
    })).pipe(Effect.map((items) => items.flat()))
