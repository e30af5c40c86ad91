/** default_bid_change: an ad group's default bid. Never auto-applies; refused on a MAX_CONVERSIONS campaign, whose
 * bids the platform sets (docs/contract.md 7 `bid_strategy_conflict`). */
import { BidStrategyConflict } from "@acs/domain/Errors"
import { defaultBidChange as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import { adGroupField, adGroupFieldDrift, adGroupWithCampaign } from "./AdGroupField.ts"
import { decodeBody, fieldStep, holds, money, noOp, percent } from "./KindSupport.ts"

export const DefaultBidChangePayload = Schema.Struct({
  adGroupId: Schema.String,
  adGroupName: Schema.String,
  campaignId: Schema.String,
  campaignName: Schema.String,
  currency: Schema.String,
  newDefaultBidMicros: Schema.Int,
  priorDefaultBidMicros: Schema.Int
})
type Payload = typeof DefaultBidChangePayload.Type

const decode = decodeBody(declaration.body)

const bidStrategyAllows = (campaign: UpstreamCampaign) =>
  campaign.bidStrategy === "MAX_CONVERSIONS"
    ? Effect.fail(new BidStrategyConflict({
      message: `campaign ${campaign.campaignId} bids with MAX_CONVERSIONS: its ad groups take no default bid`
    }))
    : Effect.void

const change = (p: Payload) =>
  adGroupField({
    campaignId: p.campaignId,
    adGroupId: p.adGroupId,
    name: "update ad group default bid",
    what: "default bid",
    fields: (adGroup) => adGroup.defaultBidMicros,
    prior: p.priorDefaultBidMicros,
    target: p.newDefaultBidMicros,
    change: { defaultBidMicros: p.newDefaultBidMicros }
  })

const summary = (p: Payload) =>
  `Change the default bid of ad group "${p.adGroupName}" from ${money(p.priorDefaultBidMicros, p.currency)} to ${
    money(p.newDefaultBidMicros, p.currency)
  } (${percent(p.priorDefaultBidMicros, p.newDefaultBidMicros)})`

const already = (adGroupId: string, bid: string) => `the default bid of ad group ${adGroupId} is already ${bid}`

export const DefaultBidChange = defineKind<Payload>({
  kind: "default_bid_change",
  declaration,
  reviewTier: "review",
  rule: "never: a default bid change always needs review",
  composite: false,
  payload: DefaultBidChangePayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const { adGroup, campaign } = yield* adGroupWithCampaign(view, request.adGroupId)
      yield* bidStrategyAllows(campaign)
      if (adGroup.defaultBidMicros === request.newDefaultBidMicros) {
        return yield* noOp(already(adGroup.adGroupId, money(adGroup.defaultBidMicros, view.account.currency)))
      }
      const payload: Payload = {
        adGroupId: adGroup.adGroupId,
        adGroupName: adGroup.name,
        campaignId: campaign.campaignId,
        campaignName: campaign.name,
        currency: view.account.currency,
        newDefaultBidMicros: request.newDefaultBidMicros,
        priorDefaultBidMicros: adGroup.defaultBidMicros
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const { adGroup, campaign } = yield* adGroupWithCampaign(view, p.adGroupId, `ad group ${p.adGroupId} is no longer in this account`)
      yield* bidStrategyAllows(campaign)
      if (adGroup.defaultBidMicros === p.newDefaultBidMicros) {
        return yield* noOp(already(p.adGroupId, money(p.newDefaultBidMicros, p.currency)))
      }
    }),
  autoApply: (p) =>
    Effect.succeed(holds(`default bid change of ad group "${p.adGroupName}" (${
      percent(p.priorDefaultBidMicros, p.newDefaultBidMicros)
    }) always needs review`)),
  steps: (p) => [fieldStep(change(p))],
  drift: (p, context) => adGroupFieldDrift(change(p))(context),
  inverse: (p) => {
    const payload: Payload = { ...p, newDefaultBidMicros: p.priorDefaultBidMicros, priorDefaultBidMicros: p.newDefaultBidMicros }
    return { kind: "default_bid_change", payload, summary: `Revert: ${summary(payload)}` }
  }
})
