/** target_cpa_change: a MAX_CONVERSIONS campaign's target CPA. Auto-applies one step of at most 10 % on an
 * existing target (docs/contract.md 3.1). */
import { targetCpaChange as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import {
  clears,
  decodeBody,
  type FieldChange,
  fieldDrift,
  fieldStep,
  found,
  holds,
  money,
  noOp,
  percent,
  requireNone,
  withinPercent
} from "./KindSupport.ts"

export const TargetCpaChangePayload = Schema.Struct({
  campaignId: Schema.String,
  campaignName: Schema.String,
  currency: Schema.String,
  newTargetCpaMicros: Schema.Int,
  /** null: the campaign had no target (it cannot auto-apply then). */
  priorTargetCpaMicros: Schema.NullOr(Schema.Int)
})
type Payload = typeof TargetCpaChangePayload.Type

/** docs/contract.md 3.1: one step of at most this many percent of the existing target. */
export const MAX_AUTO_STEP_PERCENT = 10

const decode = decodeBody(declaration.body)

interface Target {
  readonly bidStrategy: UpstreamCampaign["bidStrategy"]
  readonly targetCpaMicros: number | null
}

// The strategy is part of the compared state: a switch to MANUAL_CPT outside acs is drift, not a target to overwrite.
const change = (p: Payload): FieldChange<UpstreamCampaign, Target> => ({
  name: "update campaign target CPA",
  label: `the target CPA of campaign ${p.campaignId}`,
  read: (c) => c.client.campaign(c.accountId, p.campaignId),
  fields: (campaign) => ({ bidStrategy: campaign.bidStrategy, targetCpaMicros: campaign.targetCpaMicros }),
  prior: { bidStrategy: "MAX_CONVERSIONS", targetCpaMicros: p.priorTargetCpaMicros },
  target: { bidStrategy: "MAX_CONVERSIONS", targetCpaMicros: p.newTargetCpaMicros },
  write: (c) => c.client.updateCampaign(c.accountId, p.campaignId, { targetCpaMicros: p.newTargetCpaMicros }),
  touched: (campaign) => ({ campaigns: [campaign] })
})

const summary = (p: Payload) =>
  `Change the target CPA of campaign "${p.campaignName}" from ${money(p.priorTargetCpaMicros, p.currency)} to ${
    money(p.newTargetCpaMicros, p.currency)
  }${p.priorTargetCpaMicros === null ? "" : ` (${percent(p.priorTargetCpaMicros, p.newTargetCpaMicros)})`}`

export const targetCpaChecks = (campaign: UpstreamCampaign, newTarget: number, currency: string) =>
  Effect.gen(function*() {
    yield* requireNone(
      campaign.bidStrategy === "MAX_CONVERSIONS"
        ? []
        : [`campaign ${campaign.campaignId} bids ${campaign.bidStrategy}: a target CPA applies only to MAX_CONVERSIONS campaigns`]
    )
    if (campaign.targetCpaMicros === newTarget) {
      return yield* noOp(`the target CPA of campaign ${campaign.campaignId} is already ${money(newTarget, currency)}`)
    }
  })

/** The target CPA step rule (docs/contract.md 3.1): also the rule of a target CPA recommendation's apply. */
export const targetCpaAutoApply = (p: Pick<Payload, "campaignId" | "newTargetCpaMicros" | "priorTargetCpaMicros">) => {
  const prior = p.priorTargetCpaMicros
  if (prior === null) {
    return Effect.succeed(holds(`target CPA steps auto-apply only on an existing target; campaign ${p.campaignId} has none`))
  }
  const step = percent(prior, p.newTargetCpaMicros).replace(/^[-+]/, "")
  return Effect.succeed(
    withinPercent(prior, p.newTargetCpaMicros, MAX_AUTO_STEP_PERCENT)
      ? clears(`target CPA step of ${step} is within the ${MAX_AUTO_STEP_PERCENT}% step rule`)
      : holds(`target CPA step of ${step} is beyond the ${MAX_AUTO_STEP_PERCENT}% auto-apply bound`)
  )
}

export const TargetCpaChange = defineKind<Payload>({
  kind: "target_cpa_change",
  declaration,
  reviewTier: "review",
  rule: `one step of at most ${MAX_AUTO_STEP_PERCENT}% on an existing target CPA`,
  composite: false,
  payload: TargetCpaChangePayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const campaign = yield* found(yield* view.campaign(request.campaignId), `no campaign ${request.campaignId} in this account`)
      yield* targetCpaChecks(campaign, request.newTargetCpaMicros, view.account.currency)
      const payload: Payload = {
        campaignId: campaign.campaignId,
        campaignName: campaign.name,
        currency: view.account.currency,
        newTargetCpaMicros: request.newTargetCpaMicros,
        priorTargetCpaMicros: campaign.targetCpaMicros
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const campaign = yield* found(yield* view.campaign(p.campaignId), `campaign ${p.campaignId} is no longer in this account`)
      yield* targetCpaChecks(campaign, p.newTargetCpaMicros, p.currency)
    }),
  autoApply: targetCpaAutoApply,
  steps: (p) => [fieldStep(change(p))],
  drift: (p, context) => fieldDrift(change(p))(context),
  inverse: (p) => {
    // A MAX_CONVERSIONS campaign always has a target upstream; were the recorded prior null, the revert keeps the
    // current target (a no-op) rather than asking for an invalid null one.
    const payload: Payload = {
      ...p,
      newTargetCpaMicros: p.priorTargetCpaMicros ?? p.newTargetCpaMicros,
      priorTargetCpaMicros: p.newTargetCpaMicros
    }
    return { kind: "target_cpa_change", payload, summary: `Revert: ${summary(payload)}` }
  }
})
