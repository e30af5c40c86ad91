/** cpa_goal_change: an ad group's CPA goal. Auto-applies one step of at most 10 % on an existing goal (docs/contract.md 3.1);
 * setting a first goal needs review. */
import { cpaGoalChange as declaration } from "@acs/domain/ProposalKinds"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import { adGroupField, adGroupFieldDrift, adGroupWithCampaign } from "./AdGroupField.ts"
import { clears, decodeBody, fieldStep, holds, money, noOp, percent, withinPercent } from "./KindSupport.ts"

export const CpaGoalChangePayload = Schema.Struct({
  adGroupId: Schema.String,
  adGroupName: Schema.String,
  campaignId: Schema.String,
  currency: Schema.String,
  /** null only in a revert's compensation of a first goal: the goal is cleared again. */
  newCpaGoalMicros: Schema.NullOr(Schema.Int),
  priorCpaGoalMicros: Schema.NullOr(Schema.Int)
})
type Payload = typeof CpaGoalChangePayload.Type

/** docs/contract.md 3.1: one step of at most this many percent of the existing goal. */
export const MAX_AUTO_CPA_GOAL_STEP_PERCENT = 10

const decode = decodeBody(declaration.body)

const change = (p: Payload) =>
  adGroupField({
    campaignId: p.campaignId,
    adGroupId: p.adGroupId,
    name: "update ad group CPA goal",
    what: "CPA goal",
    fields: (adGroup) => adGroup.cpaGoalMicros,
    prior: p.priorCpaGoalMicros,
    target: p.newCpaGoalMicros,
    change: { cpaGoalMicros: p.newCpaGoalMicros }
  })

const summary = (p: Payload) => {
  const step = p.priorCpaGoalMicros === null || p.newCpaGoalMicros === null
    ? ""
    : ` (${percent(p.priorCpaGoalMicros, p.newCpaGoalMicros)})`
  return `Change the CPA goal of ad group "${p.adGroupName}" from ${money(p.priorCpaGoalMicros, p.currency)} to ${
    money(p.newCpaGoalMicros, p.currency)
  }${step}`
}

const already = (adGroupId: string, goal: string) => `the CPA goal of ad group ${adGroupId} is already ${goal}`

export const CpaGoalChange = defineKind<Payload>({
  kind: "cpa_goal_change",
  declaration,
  reviewTier: "review",
  rule: `one step of at most ${MAX_AUTO_CPA_GOAL_STEP_PERCENT}% on an existing CPA goal`,
  composite: false,
  payload: CpaGoalChangePayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const { adGroup } = yield* adGroupWithCampaign(view, request.adGroupId)
      if (adGroup.cpaGoalMicros === request.newCpaGoalMicros) {
        return yield* noOp(already(adGroup.adGroupId, money(adGroup.cpaGoalMicros, view.account.currency)))
      }
      const payload: Payload = {
        adGroupId: adGroup.adGroupId,
        adGroupName: adGroup.name,
        campaignId: adGroup.campaignId,
        currency: view.account.currency,
        newCpaGoalMicros: request.newCpaGoalMicros,
        priorCpaGoalMicros: adGroup.cpaGoalMicros
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const { adGroup } = yield* adGroupWithCampaign(view, p.adGroupId, `ad group ${p.adGroupId} is no longer in this account`)
      if (adGroup.cpaGoalMicros === p.newCpaGoalMicros) return yield* noOp(already(p.adGroupId, money(p.newCpaGoalMicros, p.currency)))
    }),
  autoApply: (p) =>
    Effect.sync(() => {
      const prior = p.priorCpaGoalMicros
      const next = p.newCpaGoalMicros
      const bound = `${MAX_AUTO_CPA_GOAL_STEP_PERCENT}%`
      if (next === null) return holds("clearing an ad group's CPA goal needs review")
      if (prior === null) {
        return holds(`a CPA goal auto-applies only as one step of at most ${bound} on an existing goal; ad group "${p.adGroupName}" has none`)
      }
      const step = `CPA goal step of ${percent(prior, next)} (${money(prior, p.currency)} to ${money(next, p.currency)})`
      return withinPercent(prior, next, MAX_AUTO_CPA_GOAL_STEP_PERCENT)
        ? clears(`${step} is within the ${bound} step rule`)
        : holds(`${step} is beyond the ${bound} auto-apply bound`)
    }),
  steps: (p) => [fieldStep(change(p))],
  drift: (p, context) => adGroupFieldDrift(change(p))(context),
  inverse: (p) => {
    const payload: Payload = { ...p, newCpaGoalMicros: p.priorCpaGoalMicros, priorCpaGoalMicros: p.newCpaGoalMicros }
    return { kind: "cpa_goal_change", payload, summary: `Revert: ${summary(payload)}` }
  }
})
