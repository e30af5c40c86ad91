/** budget_change: a campaign's daily budget. Auto-applies a cut of at most 30 %, or a raise of at most 30 % while
 * the campaign's 30-day CPA is inside the operator's target band (docs/contract.md 3.1). A budget above 3 × the warehouse
 * value is refused at proposal (a local validation failure) and again by the apply worker's hard cap. */
import { budgetChange as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { BUDGET_HARD_CAP_MULTIPLE } from "../../policy/Policy.ts"
import { defineKind, type PolicyFacts, type StepContext } from "./Kind.ts"
import { clears, decodeBody, type FieldChange, holds, fieldDrift, fieldStep, found, money, noOp, percent, requireNone } from "./KindSupport.ts"

export const BudgetChangePayload = Schema.Struct({
  campaignId: Schema.String,
  campaignName: Schema.String,
  currency: Schema.String,
  newDailyBudgetMicros: Schema.Int,
  priorDailyBudgetMicros: Schema.Int
})
type Payload = typeof BudgetChangePayload.Type

/** Bounds of docs/contract.md 3.1, in percent of the prior budget. */
export const MAX_AUTO_CUT_PERCENT = 30
export const MAX_AUTO_RAISE_PERCENT = 30

const decode = decodeBody(declaration.body)

/**
 * The hard cap (docs/contract.md 3.1) as a validation reason, or null within it: refused at proposal
 * rather than queued for a human only to fail at apply. Inclusive: exactly 3 × is accepted.
 */
export const hardCapReason = (warehouseBudgetMicros: number, newBudgetMicros: number, currency: string): string | null =>
  newBudgetMicros > BUDGET_HARD_CAP_MULTIPLE * warehouseBudgetMicros
    ? `hard cap: the new daily budget ${money(newBudgetMicros, currency)} is more than ${BUDGET_HARD_CAP_MULTIPLE} × the ` +
      `campaign's daily budget in the warehouse (${money(warehouseBudgetMicros, currency)}); at most ${
        money(BUDGET_HARD_CAP_MULTIPLE * warehouseBudgetMicros, currency)
      } is accepted`
    : null

/** Every reason the campaign's budget cannot take the new value (all at once, docs/contract.md 7). */
export const budgetReasons = (campaign: UpstreamCampaign, newBudgetMicros: number, currency: string): Array<string> => {
  if (campaign.dailyBudgetMicros === null) return [`campaign ${campaign.campaignId} has no daily budget to change`]
  const overCap = hardCapReason(campaign.dailyBudgetMicros, newBudgetMicros, currency)
  return overCap === null ? [] : [overCap]
}

const change = (p: Payload): FieldChange<UpstreamCampaign, number | null> => ({
  name: "update campaign budget",
  label: `the daily budget of campaign ${p.campaignId}`,
  read: (c: StepContext) => c.client.campaign(c.accountId, p.campaignId),
  fields: (campaign) => campaign.dailyBudgetMicros,
  prior: p.priorDailyBudgetMicros,
  target: p.newDailyBudgetMicros,
  write: (c) => c.client.updateCampaign(c.accountId, p.campaignId, { dailyBudgetMicros: p.newDailyBudgetMicros }),
  touched: (campaign) => ({ campaigns: [campaign] })
})

const summary = (p: Payload) =>
  `Change the daily budget of campaign "${p.campaignName}" from ${money(p.priorDailyBudgetMicros, p.currency)} to ${
    money(p.newDailyBudgetMicros, p.currency)
  } (${percent(p.priorDailyBudgetMicros, p.newDailyBudgetMicros)})`

/** The budget rule (docs/contract.md 3.1) on what it reads of a payload: also the rule of a daily-cap recommendation's apply. */
export const budgetAutoApply = (
  p: Pick<Payload, "campaignId" | "currency" | "newDailyBudgetMicros" | "priorDailyBudgetMicros">,
  facts: PolicyFacts
) =>
  Effect.gen(function*() {
    const prior = p.priorDailyBudgetMicros
    const next = p.newDailyBudgetMicros
    const delta = percent(prior, next).replace(/^-/, "")
    if (next < prior) {
      return (prior - next) * 100 <= MAX_AUTO_CUT_PERCENT * prior
        ? clears(`budget cut of ${delta} is within the ${MAX_AUTO_CUT_PERCENT}% cut rule`)
        : holds(`budget cut of ${delta} is beyond the ${MAX_AUTO_CUT_PERCENT}% auto-apply bound`)
    }
    if ((next - prior) * 100 > MAX_AUTO_RAISE_PERCENT * prior) {
      return holds(`budget raise of ${delta} is beyond the ${MAX_AUTO_RAISE_PERCENT}% auto-apply bound`)
    }
    const band = yield* facts.cpaBand(p.campaignId)
    if (band === null) {
      return holds("budget raises auto-apply only with a CPA target band set (PUT /targets); none is set")
    }
    const [evidence, minimum] = yield* Effect.all([facts.campaignEvidence30d(p.campaignId), facts.minimumEvidence])
    if (evidence.days < minimum.minDays || evidence.installs < minimum.minInstalls) {
      return holds(
        `budget raise of ${delta} needs at least ${minimum.minDays} complete days and ${minimum.minInstalls} installs of data ` +
          `in 30 days; the campaign has ${evidence.days} ${evidence.days === 1 ? "day" : "days"} and ${evidence.installs} ` +
          `${evidence.installs === 1 ? "install" : "installs"}`
      )
    }
    const cpa = yield* facts.campaignCpa30d(p.campaignId)
    const bandText = `${money(band.minMicros, p.currency)}–${money(band.maxMicros, p.currency)}`
    if (cpa === null) {
      return holds(`budget raise of ${delta} needs a 30-day CPA inside ${bandText}; the campaign has no installs in 30 days`)
    }
    return cpa >= band.minMicros && cpa <= band.maxMicros
      ? clears(`budget raise of ${delta} is within ${MAX_AUTO_RAISE_PERCENT}% and the 30-day CPA ${money(cpa, p.currency)} is inside the target band ${bandText}`)
      : holds(`budget raise of ${delta} needs a 30-day CPA inside the target band ${bandText}; it is ${money(cpa, p.currency)}`)
  })

export const BudgetChange = defineKind<Payload>({
  kind: "budget_change",
  declaration,
  reviewTier: "review",
  rule: `a cut of at most ${MAX_AUTO_CUT_PERCENT}%, or a raise of at most ${MAX_AUTO_RAISE_PERCENT}% while the campaign's ` +
    "30-day CPA is inside the target band, with the evidence the account's guardrails ask for behind it in those 30 days " +
    "(by default at least 7 complete days and 20 installs)",
  composite: false,
  payload: BudgetChangePayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const campaign = yield* found(yield* view.campaign(request.campaignId), `no campaign ${request.campaignId} in this account`)
      if (campaign.dailyBudgetMicros === request.newDailyBudgetMicros) {
        return yield* noOp(`the daily budget of campaign ${campaign.campaignId} is already ${
          money(campaign.dailyBudgetMicros, view.account.currency)
        }`)
      }
      yield* requireNone(budgetReasons(campaign, request.newDailyBudgetMicros, view.account.currency))
      const payload: Payload = {
        campaignId: campaign.campaignId,
        campaignName: campaign.name,
        currency: view.account.currency,
        newDailyBudgetMicros: request.newDailyBudgetMicros,
        priorDailyBudgetMicros: campaign.dailyBudgetMicros ?? 0
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const campaign = yield* found(yield* view.campaign(p.campaignId), `campaign ${p.campaignId} is no longer in this account`)
      if (campaign.dailyBudgetMicros === p.newDailyBudgetMicros) {
        return yield* noOp(`the daily budget of campaign ${p.campaignId} is already ${money(p.newDailyBudgetMicros, p.currency)}`)
      }
      // The cap against the warehouse as it is now: a sync may have seen the budget lowered since the proposal.
      const overCap = campaign.dailyBudgetMicros === null ? null : hardCapReason(campaign.dailyBudgetMicros, p.newDailyBudgetMicros, p.currency)
      yield* requireNone(overCap === null ? [] : [overCap])
    }),
  autoApply: budgetAutoApply,
  steps: (p) => [fieldStep(change(p))],
  drift: (p, context) => fieldDrift(change(p))(context),
  inverse: (p) => {
    const payload: Payload = { ...p, newDailyBudgetMicros: p.priorDailyBudgetMicros, priorDailyBudgetMicros: p.newDailyBudgetMicros }
    return { kind: "budget_change", payload, summary: `Revert: ${summary(payload)}` }
  },
  budgetChange: (p) => ({ campaignId: p.campaignId, newDailyBudgetMicros: p.newDailyBudgetMicros })
})
