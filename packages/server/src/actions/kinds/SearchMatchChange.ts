/** search_match_change: turn an ad group's Search Match (automated keywords) on or off. Never auto-applies. */
import { searchMatchChange as declaration } from "@acs/domain/ProposalKinds"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import { adGroupField, adGroupFieldDrift, adGroupWithCampaign } from "./AdGroupField.ts"
import { decodeBody, fieldStep, holds, noOp } from "./KindSupport.ts"

export const SearchMatchChangePayload = Schema.Struct({
  adGroupId: Schema.String,
  adGroupName: Schema.String,
  campaignId: Schema.String,
  enabled: Schema.Boolean,
  priorEnabled: Schema.Boolean
})
type Payload = typeof SearchMatchChangePayload.Type

const decode = decodeBody(declaration.body)

const onOff = (enabled: boolean) => (enabled ? "on" : "off")

const change = (p: Payload) =>
  adGroupField({
    campaignId: p.campaignId,
    adGroupId: p.adGroupId,
    name: "update ad group Search Match",
    what: "Search Match setting",
    fields: (adGroup) => adGroup.searchMatch,
    prior: p.priorEnabled,
    target: p.enabled,
    change: { searchMatch: p.enabled }
  })

const summary = (p: Payload) => `Turn Search Match ${onOff(p.enabled)} for ad group "${p.adGroupName}"`

const already = (adGroupId: string, enabled: boolean) => `Search Match is already ${onOff(enabled)} for ad group ${adGroupId}`

export const SearchMatchChange = defineKind<Payload>({
  kind: "search_match_change",
  declaration,
  reviewTier: "review",
  rule: "never: turning Search Match on or off always needs review",
  composite: false,
  payload: SearchMatchChangePayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const { adGroup } = yield* adGroupWithCampaign(view, request.adGroupId)
      if (adGroup.searchMatch === request.enabled) return yield* noOp(already(adGroup.adGroupId, request.enabled))
      const payload: Payload = {
        adGroupId: adGroup.adGroupId,
        adGroupName: adGroup.name,
        campaignId: adGroup.campaignId,
        enabled: request.enabled,
        priorEnabled: adGroup.searchMatch
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const { adGroup } = yield* adGroupWithCampaign(view, p.adGroupId, `ad group ${p.adGroupId} is no longer in this account`)
      if (adGroup.searchMatch === p.enabled) return yield* noOp(already(p.adGroupId, p.enabled))
    }),
  autoApply: (p) =>
    Effect.succeed(holds(`turning Search Match ${onOff(p.enabled)} for ad group "${p.adGroupName}" always needs review`)),
  steps: (p) => [fieldStep(change(p))],
  drift: (p, context) => adGroupFieldDrift(change(p))(context),
  inverse: (p) => {
    const payload: Payload = { ...p, enabled: p.priorEnabled, priorEnabled: p.enabled }
    return { kind: "search_match_change", payload, summary: `Revert: ${summary(payload)}` }
  }
})
