/** delete_campaign: only the compensation of a create_campaign or clone_campaign revert (no endpoint). Deleting
 * the campaign removes its ad groups, keywords and negatives with it. */
import { InvalidRequest } from "@acs/domain/Errors"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import { deleteCampaignIfLive } from "./CampaignTree.ts"
import { holds } from "./KindSupport.ts"

export const DeleteCampaignPayload = Schema.Struct({
  campaignId: Schema.String.pipe(Schema.minLength(1)),
  campaignName: Schema.String
})
type Payload = typeof DeleteCampaignPayload.Type

export const DeleteCampaign = defineKind<Payload>({
  kind: "delete_campaign",
  reviewTier: "high",
  rule: "never proposed: deleting a campaign is only the revert of the create or clone that made it",
  composite: false,
  payload: DeleteCampaignPayload,
  prepare: () => Effect.fail(new InvalidRequest({ message: "delete_campaign exists only as the revert of create_campaign or clone_campaign" })),
  // Nothing to check locally: a campaign already gone from the warehouse is simply done.
  recheck: () => Effect.void,
  autoApply: () => Effect.succeed(holds("deleting a campaign happens only as a revert")),
  steps: (p) => [{
    name: `delete campaign "${p.campaignName}"`,
    apply: (c) =>
      deleteCampaignIfLive(c.client, c.accountId, p.campaignId).pipe(
        Effect.map((touched) => ({ ids: {}, touched, warnings: [] }))
      )
  }],
  // What happened inside the created campaign since does not matter: deleting it is the whole undo.
  drift: () => Effect.succeed(null)
})
