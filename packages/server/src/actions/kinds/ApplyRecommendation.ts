/**
 * apply_recommendation: one of Apple's recommendations (docs/contract.md 4.5), applied through the platform's own
 * apply with the amount acs reviewed (Apple's, or the override) always stated, so what applies is what was approved.
 * A daily cap is a budget change in every way the policy looks: the payload carries `newDailyBudgetMicros` and
 * `priorDailyBudgetMicros`, so the budget rule, the hard cap, the envelope, the cooldown and the high-risk line read
 * it as they read a budget_change (docs/decisions/recommendations.md). A target CPA is a target_cpa_change the same
 * way. Refused (422) when the recommendation has expired or was already applied or dismissed (404 when unknown), at
 * proposal and again at apply. The revert is the budget or target CPA change back to the prior value.
 */
import { applyRecommendation as declaration } from "@acs/domain/ProposalKinds"
import type { RecommendationRef, UpstreamCampaign } from "@acs/upstream/Upstream"
import { UpstreamError } from "@acs/domain/Errors"
import { Effect, Schema } from "effect"
import { budgetAutoApply, budgetReasons, hardCapReason } from "./BudgetChange.ts"
import { defineKind, type StepContext } from "./Kind.ts"
import { decodeBody, type FieldChange, fieldDrift, fieldStep, found, money, noOp, percent, requireNone } from "./KindSupport.ts"
import { actionableRecommendation } from "./RecommendationChecks.ts"
import { targetCpaAutoApply, targetCpaChecks } from "./TargetCpaChange.ts"

const Common = {
  recommendationId: Schema.String,
  adamId: Schema.String,
  campaignId: Schema.String,
  campaignName: Schema.String,
  currency: Schema.String,
  /** What Apple recommended: the applied amount differs when the request overrode it. */
  recommendedMicros: Schema.Int,
  expiresAt: Schema.String
}

export const ApplyRecommendationPayload = Schema.Union(
  Schema.Struct({
    ...Common,
    type: Schema.Literal("daily_cap"),
    newDailyBudgetMicros: Schema.Int,
    priorDailyBudgetMicros: Schema.Int
  }),
  Schema.Struct({
    ...Common,
    type: Schema.Literal("target_cpa"),
    newTargetCpaMicros: Schema.Int,
    priorTargetCpaMicros: Schema.NullOr(Schema.Int)
  })
)
type Payload = typeof ApplyRecommendationPayload.Type

const decode = decodeBody(declaration.body)

const refOf = (p: Payload): RecommendationRef => ({ recommendationId: p.recommendationId, type: p.type, adamId: p.adamId })

const applied = (p: Payload) => p.type === "daily_cap" ? p.newDailyBudgetMicros : p.newTargetCpaMicros

/** The campaign's field the apply sets, read and written through Apple's apply. */
const change = (p: Payload): FieldChange<UpstreamCampaign, number | null> => ({
  name: "apply Apple's recommendation",
  label: p.type === "daily_cap" ? `the daily budget of campaign ${p.campaignId}` : `the target CPA of campaign ${p.campaignId}`,
  read: (c: StepContext) => c.client.campaign(c.accountId, p.campaignId),
  fields: (campaign) => p.type === "daily_cap" ? campaign.dailyBudgetMicros : campaign.targetCpaMicros,
  prior: p.type === "daily_cap" ? p.priorDailyBudgetMicros : p.priorTargetCpaMicros,
  target: applied(p),
  write: (c) => {
    const apply = c.client.applyRecommendation
    if (apply === undefined) {
      return Effect.fail(new UpstreamError({ message: "this connection's API version has no recommendations (v1 only)" }))
    }
    return apply(c.accountId, refOf(p), applied(p)).pipe(Effect.zipRight(c.client.campaign(c.accountId, p.campaignId)))
  },
  touched: (campaign) => ({ campaigns: [campaign] })
})

const summary = (p: Payload) => {
  const override = applied(p) === p.recommendedMicros ? "" : ` (Apple recommended ${money(p.recommendedMicros, p.currency)})`
  return p.type === "daily_cap"
    ? `Apply Apple's recommendation ${p.recommendationId}: daily budget of campaign "${p.campaignName}" from ${
      money(p.priorDailyBudgetMicros, p.currency)
    } to ${money(p.newDailyBudgetMicros, p.currency)} (${percent(p.priorDailyBudgetMicros, p.newDailyBudgetMicros)})${override}`
    : `Apply Apple's recommendation ${p.recommendationId}: target CPA of campaign "${p.campaignName}" from ${
      money(p.priorTargetCpaMicros, p.currency)
    } to ${money(p.newTargetCpaMicros, p.currency)}${override}`
}

export const ApplyRecommendation = defineKind<Payload>({
  kind: "apply_recommendation",
  declaration,
  reviewTier: "review",
  rule: "a daily cap as a budget change (its cut and raise bounds, target band and evidence), a target CPA as one " +
    "target CPA step; never once the recommendation has expired",
  composite: false,
  payload: ApplyRecommendationPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const recommendation = yield* actionableRecommendation(view, request.recommendationId)
      const currency = view.account.currency
      const wrongOverride = recommendation.type === "daily_cap"
        ? request.appliedTargetCpaMicros === undefined ? [] : ["appliedTargetCpaMicros: a daily cap recommendation takes appliedDailyBudgetMicros"]
        : request.appliedDailyBudgetMicros === undefined ? [] : ["appliedDailyBudgetMicros: a target CPA recommendation takes appliedTargetCpaMicros"]
      yield* requireNone(wrongOverride)
      const campaign = yield* found(
        yield* view.campaign(recommendation.campaignId),
        `recommendation ${recommendation.recommendationId} is for campaign ${recommendation.campaignId}, which is not in this account`
      )
      const common = {
        recommendationId: recommendation.recommendationId,
        adamId: recommendation.adamId,
        campaignId: campaign.campaignId,
        campaignName: campaign.name,
        currency,
        recommendedMicros: recommendation.recommendedMicros,
        expiresAt: recommendation.expiresAt
      }
      if (recommendation.type === "daily_cap") {
        const next = request.appliedDailyBudgetMicros ?? recommendation.recommendedMicros
        if (campaign.dailyBudgetMicros === next) {
          return yield* noOp(`the daily budget of campaign ${campaign.campaignId} is already ${money(next, currency)}`)
        }
        yield* requireNone(budgetReasons(campaign, next, currency))
        const payload: Payload = { ...common, type: "daily_cap", newDailyBudgetMicros: next, priorDailyBudgetMicros: campaign.dailyBudgetMicros ?? 0 }
        return { payload, summary: summary(payload) }
      }
      const next = request.appliedTargetCpaMicros ?? recommendation.recommendedMicros
      yield* targetCpaChecks(campaign, next, currency)
      const payload: Payload = { ...common, type: "target_cpa", newTargetCpaMicros: next, priorTargetCpaMicros: campaign.targetCpaMicros }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      yield* actionableRecommendation(view, p.recommendationId)
      const campaign = yield* found(yield* view.campaign(p.campaignId), `campaign ${p.campaignId} is no longer in this account`)
      if (p.type === "target_cpa") return yield* targetCpaChecks(campaign, p.newTargetCpaMicros, p.currency)
      if (campaign.dailyBudgetMicros === p.newDailyBudgetMicros) {
        return yield* noOp(`the daily budget of campaign ${p.campaignId} is already ${money(p.newDailyBudgetMicros, p.currency)}`)
      }
      const overCap = campaign.dailyBudgetMicros === null ? null : hardCapReason(campaign.dailyBudgetMicros, p.newDailyBudgetMicros, p.currency)
      yield* requireNone(overCap === null ? [] : [overCap])
    }),
  autoApply: (p, facts) => p.type === "daily_cap" ? budgetAutoApply(p, facts) : targetCpaAutoApply(p),
  steps: (p) => [fieldStep(change(p))],
  drift: (p, context) => fieldDrift(change(p))(context),
  inverse: (p) => {
    if (p.type === "daily_cap") {
      const payload = {
        campaignId: p.campaignId,
        campaignName: p.campaignName,
        currency: p.currency,
        newDailyBudgetMicros: p.priorDailyBudgetMicros,
        priorDailyBudgetMicros: p.newDailyBudgetMicros
      }
      return {
        kind: "budget_change",
        payload,
        summary: `Revert: change the daily budget of campaign "${p.campaignName}" back from ${money(p.newDailyBudgetMicros, p.currency)} to ${
          money(p.priorDailyBudgetMicros, p.currency)
        } (Apple's recommendation ${p.recommendationId})`
      }
    }
    // As target_cpa_change's own revert: a recorded prior of null keeps the current target (a no-op).
    const payload = {
      campaignId: p.campaignId,
      campaignName: p.campaignName,
      currency: p.currency,
      newTargetCpaMicros: p.priorTargetCpaMicros ?? p.newTargetCpaMicros,
      priorTargetCpaMicros: p.newTargetCpaMicros
    }
    return {
      kind: "target_cpa_change",
      payload,
      summary: `Revert: change the target CPA of campaign "${p.campaignName}" back from ${money(p.newTargetCpaMicros, p.currency)} to ${
        money(payload.newTargetCpaMicros, p.currency)
      } (Apple's recommendation ${p.recommendationId})`
    }
  },
  budgetChange: (p) => p.type === "daily_cap" ? { campaignId: p.campaignId, newDailyBudgetMicros: p.newDailyBudgetMicros } : undefined
})
