/** clone_campaign: a copy of a campaign with its ad groups, keywords and negatives under a new name. The source
 * tree is read from the warehouse at proposal into the payload, so the reviewer approves exactly what will be
 * built; then it runs the same steps as create_campaign. Always reviewed; reverting deletes the copy. */
import { cloneCampaign as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamNegativeKeyword } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import type { AdGroupTree, TreeNegative } from "./AdGroupTree.ts"
import {
  CampaignTree,
  campaignTreeSteps,
  deleteCreatedCampaign,
  recheckTree,
  treeContents,
  treeDrift,
  treeReasons,
  treeSettings
} from "./CampaignTree.ts"
import { decodeBody, found, holds, requireNone } from "./KindSupport.ts"

export const CloneCampaignPayload = Schema.Struct({
  currency: Schema.String,
  sourceCampaignId: Schema.String,
  sourceCampaignName: Schema.String,
  campaign: CampaignTree
})
type Payload = typeof CloneCampaignPayload.Type

const decode = decodeBody(declaration.body)

// A paused negative excludes nothing, and the upstream creates negatives active: copying one would change
// what the copy excludes, so only active negatives are copied.
const activeNegatives = (negatives: ReadonlyArray<UpstreamNegativeKeyword>): ReadonlyArray<TreeNegative> =>
  negatives.filter((n) => n.status === "ACTIVE").map((n) => ({ text: n.text, matchType: n.matchType }))

const summary = (p: Payload) =>
  `Copy campaign "${p.sourceCampaignName}" as "${p.campaign.name}" (${treeSettings(p.campaign, p.currency)}) with ${
    treeContents(p.campaign)
  }`

export const CloneCampaign = defineKind<Payload>({
  kind: "clone_campaign",
  declaration,
  reviewTier: "high",
  rule: "never: copying a campaign always needs review",
  composite: true,
  payload: CloneCampaignPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const source = yield* found(
        yield* view.campaign(request.sourceCampaignId),
        `no campaign ${request.sourceCampaignId} in this account`
      )
      const maxConversions = source.bidStrategy === "MAX_CONVERSIONS"
      const adGroups: Array<AdGroupTree> = []
      for (const adGroup of yield* view.adGroupsOf(source.campaignId)) {
        const keywords = yield* view.keywordsOf(adGroup.adGroupId)
        adGroups.push({
          name: adGroup.name,
          status: adGroup.status,
          defaultBidMicros: adGroup.defaultBidMicros,
          cpaGoalMicros: adGroup.cpaGoalMicros,
          searchMatch: adGroup.searchMatch,
          // MAX_CONVERSIONS keywords take no bid upstream; the warehouse may still hold one from before a switch.
          keywords: keywords.map((k) => ({
            text: k.text,
            matchType: k.matchType,
            bidMicros: maxConversions ? null : k.bidMicros,
            status: k.status
          })),
          negativeKeywords: activeNegatives(yield* view.negativesOf(source.campaignId, adGroup.adGroupId))
        })
      }
      const dailyBudgetMicros = request.dailyBudgetMicros ?? source.dailyBudgetMicros
      const campaign: CampaignTree = {
        name: request.name,
        adamId: source.adamId,
        countriesOrRegions: request.countriesOrRegions ?? source.countriesOrRegions,
        dailyBudgetMicros: dailyBudgetMicros ?? 0,
        bidStrategy: source.bidStrategy,
        targetCpaMicros: maxConversions ? source.targetCpaMicros : null,
        status: source.status,
        negativeKeywords: activeNegatives(yield* view.negativesOf(source.campaignId, null)),
        adGroups
      }
      const reasons = yield* treeReasons(campaign, view)
      if (dailyBudgetMicros === null) {
        reasons.push(`campaign ${source.campaignId} has no daily budget to copy; give dailyBudgetMicros`)
      }
      if (maxConversions && source.targetCpaMicros === null) {
        reasons.push(`campaign ${source.campaignId} bids MAX_CONVERSIONS without a target CPA, which a new campaign needs`)
      }
      yield* requireNone(reasons)
      const payload: Payload = {
        currency: view.account.currency,
        sourceCampaignId: source.campaignId,
        sourceCampaignName: source.name,
        campaign
      }
      return { payload, summary: summary(payload) }
    }),
  // The source may change after proposal: the payload holds the approved copy, so only the new name is rechecked.
  recheck: (p, view) => recheckTree(p.campaign, view),
  autoApply: () => Effect.succeed(holds("copying a campaign always needs review")),
  steps: (p) => campaignTreeSteps(p.campaign),
  drift: (p, context) => treeDrift(p.campaign, context),
  inverse: (p, ids) => deleteCreatedCampaign(p.campaign, ids)
})
