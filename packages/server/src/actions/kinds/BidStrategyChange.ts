/** bid_strategy_change: switch a campaign between MANUAL_CPT and MAX_CONVERSIONS (with its target CPA).
 * Always reviewed (docs/contract.md 3, reason 4): a switch changes how every keyword of the campaign bids. */
import { bidStrategyChange as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import { decodeBody, type FieldChange, fieldDrift, fieldStep, found, holds, money, noOp, targetCpaFor } from "./KindSupport.ts"

const Strategy = Schema.Literal("MANUAL_CPT", "MAX_CONVERSIONS")

export const BidStrategyChangePayload = Schema.Struct({
  campaignId: Schema.String,
  campaignName: Schema.String,
  currency: Schema.String,
  bidStrategy: Strategy,
  /** The target after the switch: the requested one for MAX_CONVERSIONS, the campaign's own (untouched) for MANUAL_CPT. */
  targetCpaMicros: Schema.NullOr(Schema.Int),
  priorBidStrategy: Strategy,
  priorTargetCpaMicros: Schema.NullOr(Schema.Int)
})
type Payload = typeof BidStrategyChangePayload.Type

interface Bidding {
  readonly bidStrategy: Payload["bidStrategy"]
  readonly targetCpaMicros: number | null
}

const decode = decodeBody(declaration.body)

const biddingOf = (campaign: UpstreamCampaign): Bidding => ({
  bidStrategy: campaign.bidStrategy,
  targetCpaMicros: campaign.targetCpaMicros
})

const change = (p: Payload): FieldChange<UpstreamCampaign, Bidding> => ({
  name: "update campaign bid strategy",
  label: `the bid strategy of campaign ${p.campaignId}`,
  read: (c) => c.client.campaign(c.accountId, p.campaignId),
  fields: biddingOf,
  prior: { bidStrategy: p.priorBidStrategy, targetCpaMicros: p.priorTargetCpaMicros },
  target: { bidStrategy: p.bidStrategy, targetCpaMicros: p.targetCpaMicros },
  write: (c) =>
    c.client.updateCampaign(c.accountId, p.campaignId, { bidStrategy: p.bidStrategy, targetCpaMicros: p.targetCpaMicros }),
  touched: (campaign) => ({ campaigns: [campaign] })
})

const strategyText = (bidding: Bidding, currency: string) =>
  bidding.bidStrategy === "MAX_CONVERSIONS"
    ? `MAX_CONVERSIONS (target CPA ${money(bidding.targetCpaMicros, currency)})`
    : "MANUAL_CPT"

const summary = (p: Payload) =>
  `Switch campaign "${p.campaignName}" from ${
    strategyText({ bidStrategy: p.priorBidStrategy, targetCpaMicros: p.priorTargetCpaMicros }, p.currency)
  } to ${strategyText(p, p.currency)}`

/** Already bidding that way: the same strategy, and for MAX_CONVERSIONS the same target. */
const holdsAlready = (campaign: UpstreamCampaign, target: Bidding) =>
  campaign.bidStrategy === target.bidStrategy &&
  (target.bidStrategy === "MANUAL_CPT" || campaign.targetCpaMicros === target.targetCpaMicros)

const alreadyMessage = (campaignId: string, target: Bidding, currency: string) =>
  `campaign ${campaignId} already bids ${strategyText(target, currency)}`

export const BidStrategyChange = defineKind<Payload>({
  kind: "bid_strategy_change",
  declaration,
  reviewTier: "high",
  rule: "never: a bid strategy switch always needs review",
  composite: false,
  payload: BidStrategyChangePayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const requestedTarget = yield* targetCpaFor(request.bidStrategy, request.targetCpaMicros)
      const campaign = yield* found(yield* view.campaign(request.campaignId), `no campaign ${request.campaignId} in this account`)
      const target: Bidding = {
        bidStrategy: request.bidStrategy,
        // MANUAL_CPT leaves the campaign's target CPA as it is, so switching back later finds it again.
        targetCpaMicros: request.bidStrategy === "MAX_CONVERSIONS" ? requestedTarget : campaign.targetCpaMicros
      }
      const currency = view.account.currency
      if (holdsAlready(campaign, target)) return yield* noOp(alreadyMessage(campaign.campaignId, target, currency))
      const payload: Payload = {
        campaignId: campaign.campaignId,
        campaignName: campaign.name,
        currency,
        ...target,
        priorBidStrategy: campaign.bidStrategy,
        priorTargetCpaMicros: campaign.targetCpaMicros
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const campaign = yield* found(yield* view.campaign(p.campaignId), `campaign ${p.campaignId} is no longer in this account`)
      if (holdsAlready(campaign, p)) return yield* noOp(alreadyMessage(p.campaignId, p, p.currency))
    }),
  autoApply: () => Effect.succeed(holds("a bid strategy switch always needs review")),
  steps: (p) => [fieldStep(change(p))],
  drift: (p, context) => fieldDrift(change(p))(context),
  inverse: (p) => {
    const payload: Payload = {
      ...p,
      bidStrategy: p.priorBidStrategy,
      targetCpaMicros: p.priorTargetCpaMicros,
      priorBidStrategy: p.bidStrategy,
      priorTargetCpaMicros: p.targetCpaMicros
    }
    return { kind: "bid_strategy_change", payload, summary: `Revert: ${summary(payload)}` }
  }
})
