/** ad_group_status: enable or pause an ad group. Pausing auto-applies (it only stops spend, docs/contract.md 3.1); enabling
 * needs review. */
import { adGroupStatus as declaration } from "@acs/domain/ProposalKinds"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import { adGroupField, adGroupFieldDrift, adGroupWithCampaign } from "./AdGroupField.ts"
import { clears, decodeBody, fieldStep, holds, noOp } from "./KindSupport.ts"

const Status = Schema.Literal("ENABLED", "PAUSED")

export const AdGroupStatusPayload = Schema.Struct({
  adGroupId: Schema.String,
  adGroupName: Schema.String,
  campaignId: Schema.String,
  campaignName: Schema.String,
  status: Status,
  priorStatus: Status
})
type Payload = typeof AdGroupStatusPayload.Type

const decode = decodeBody(declaration.body)

const change = (p: Payload) =>
  adGroupField({
    campaignId: p.campaignId,
    adGroupId: p.adGroupId,
    name: "update ad group status",
    what: "status",
    fields: (adGroup) => adGroup.status,
    prior: p.priorStatus,
    target: p.status,
    change: { status: p.status }
  })

const summary = (p: Payload) =>
  `${p.status === "PAUSED" ? "Pause" : "Enable"} ad group "${p.adGroupName}" of campaign "${p.campaignName}" (now ${p.priorStatus})`

const already = (adGroupId: string, status: string) => `ad group ${adGroupId} is already ${status}`

export const AdGroupStatus = defineKind<Payload>({
  kind: "ad_group_status",
  declaration,
  reviewTier: "review",
  rule: "pausing an ad group; enabling one needs review",
  composite: false,
  payload: AdGroupStatusPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const { adGroup, campaign } = yield* adGroupWithCampaign(view, request.adGroupId)
      if (adGroup.status === request.status) return yield* noOp(already(adGroup.adGroupId, request.status))
      const payload: Payload = {
        adGroupId: adGroup.adGroupId,
        adGroupName: adGroup.name,
        campaignId: campaign.campaignId,
        campaignName: campaign.name,
        status: request.status,
        priorStatus: adGroup.status
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const { adGroup } = yield* adGroupWithCampaign(view, p.adGroupId, `ad group ${p.adGroupId} is no longer in this account`)
      if (adGroup.status === p.status) return yield* noOp(already(p.adGroupId, p.status))
    }),
  autoApply: (p) =>
    Effect.succeed(
      p.status === "PAUSED"
        ? clears(`pausing ad group "${p.adGroupName}" is in the auto-apply set (pausing only stops spend)`)
        : holds(`enabling ad group "${p.adGroupName}" needs review; only pausing an ad group auto-applies`)
    ),
  steps: (p) => [fieldStep(change(p))],
  drift: (p, context) => adGroupFieldDrift(change(p))(context),
  inverse: (p) => {
    const payload: Payload = { ...p, status: p.priorStatus, priorStatus: p.status }
    return { kind: "ad_group_status", payload, summary: `Revert: ${summary(payload)}` }
  }
})
