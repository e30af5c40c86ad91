/** campaign_status: enable or pause a campaign. Never auto-applies: pausing stops all of its delivery and
 * enabling starts spend, so a person reviews either (docs/contract.md 3.1: not in the auto-apply set). */
import { campaignStatus as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import { decodeBody, type FieldChange, fieldDrift, fieldStep, found, holds, noOp } from "./KindSupport.ts"

const Status = Schema.Literal("ENABLED", "PAUSED")

export const CampaignStatusPayload = Schema.Struct({
  campaignId: Schema.String,
  campaignName: Schema.String,
  status: Status,
  priorStatus: Status
})
type Payload = typeof CampaignStatusPayload.Type

const decode = decodeBody(declaration.body)

const change = (p: Payload): FieldChange<UpstreamCampaign, Payload["status"]> => ({
  name: "update campaign status",
  label: `the status of campaign ${p.campaignId}`,
  read: (c) => c.client.campaign(c.accountId, p.campaignId),
  fields: (campaign) => campaign.status,
  prior: p.priorStatus,
  target: p.status,
  write: (c) => c.client.updateCampaign(c.accountId, p.campaignId, { status: p.status }),
  touched: (campaign) => ({ campaigns: [campaign] })
})

const verb = (status: Payload["status"]) => (status === "PAUSED" ? "Pause" : "Enable")

const summary = (p: Payload) => `${verb(p.status)} campaign "${p.campaignName}" (now ${p.priorStatus})`

const alreadyMessage = (campaignId: string, status: string) => `campaign ${campaignId} is already ${status}`

export const CampaignStatus = defineKind<Payload>({
  kind: "campaign_status",
  declaration,
  reviewTier: "review",
  rule: "never: enabling or pausing a campaign always needs review",
  composite: false,
  payload: CampaignStatusPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const campaign = yield* found(yield* view.campaign(request.campaignId), `no campaign ${request.campaignId} in this account`)
      if (campaign.status === request.status) return yield* noOp(alreadyMessage(campaign.campaignId, campaign.status))
      const payload: Payload = {
        campaignId: campaign.campaignId,
        campaignName: campaign.name,
        status: request.status,
        priorStatus: campaign.status
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const campaign = yield* found(yield* view.campaign(p.campaignId), `campaign ${p.campaignId} is no longer in this account`)
      if (campaign.status === p.status) return yield* noOp(alreadyMessage(p.campaignId, p.status))
    }),
  autoApply: () => Effect.succeed(holds("enabling or pausing a campaign always needs review")),
  steps: (p) => [fieldStep(change(p))],
  drift: (p, context) => fieldDrift(change(p))(context),
  inverse: (p) => {
    const payload: Payload = { ...p, status: p.priorStatus, priorStatus: p.status }
    return { kind: "campaign_status", payload, summary: `Revert: ${summary(payload)}` }
  }
})
