/** clone_ad_group: a copy of an ad group with its keywords and negatives, into its own campaign or another. The
 * source is read from the warehouse at proposal into the payload, so the apply creates what the reviewer saw.
 * Always review; its inverse deletes the copy. */
import { cloneAdGroup as declaration } from "@acs/domain/ProposalKinds"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import { AdGroupTree, adGroupTreeSteps, keywordBidsAllowed, treeDescription, treeDrift, treeProblems } from "./AdGroupTree.ts"
import { deleteAdGroupInverse } from "./DeleteAdGroup.ts"
import { plural } from "./KeywordSupport.ts"
import { decodeBody, found, holds, requireNone } from "./KindSupport.ts"

export const CloneAdGroupPayload = Schema.Struct({
  sourceAdGroupId: Schema.String,
  sourceAdGroupName: Schema.String,
  sourceCampaignId: Schema.String,
  campaignId: Schema.String,
  campaignName: Schema.String,
  currency: Schema.String,
  /** The copy as it will be created: the source's settings, keywords and active negatives at proposal. */
  copy: AdGroupTree,
  /** Keyword bids of the source left out because the target campaign bids with MAX_CONVERSIONS. */
  keywordBidsDropped: Schema.Int
})
type Payload = typeof CloneAdGroupPayload.Type

const decode = decodeBody(declaration.body)

const summary = (p: Payload) =>
  `Copy ad group "${p.sourceAdGroupName}" as "${p.copy.name}" into campaign "${p.campaignName}" ${
    treeDescription(p.copy, p.currency)
  }${
    p.keywordBidsDropped > 0
      ? `; ${plural(p.keywordBidsDropped, "keyword bid")} not copied (the campaign bids with MAX_CONVERSIONS)`
      : ""
  }`

export const CloneAdGroup = defineKind<Payload>({
  kind: "clone_ad_group",
  declaration,
  reviewTier: "high",
  rule: "never: copying an ad group with its keywords and negatives always needs review",
  composite: true,
  payload: CloneAdGroupPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const source = yield* found(yield* view.adGroup(request.sourceAdGroupId), `no ad group ${request.sourceAdGroupId} in this account`)
      const targetId = request.targetCampaignId ?? source.campaignId
      const campaign = yield* found(yield* view.campaign(targetId), `no campaign ${targetId} in this account`)
      const [keywords, negatives, taken] = yield* Effect.all([
        view.keywordsOf(source.adGroupId),
        view.negativesOf(source.campaignId, source.adGroupId),
        view.adGroupNamed(campaign.campaignId, request.name)
      ])
      // A MAX_CONVERSIONS campaign refuses keyword bids (the platform bids there), so the copy goes without them.
      const bidless = campaign.bidStrategy === "MAX_CONVERSIONS"
      const copy: AdGroupTree = {
        name: request.name,
        defaultBidMicros: source.defaultBidMicros,
        cpaGoalMicros: source.cpaGoalMicros,
        searchMatch: source.searchMatch,
        status: source.status,
        keywords: keywords.map((k) => ({ text: k.text, matchType: k.matchType, bidMicros: bidless ? null : k.bidMicros, status: k.status })),
        // A paused negative excludes nothing; copied, it would start excluding.
        negativeKeywords: negatives.filter((n) => n.status === "ACTIVE").map((n) => ({ text: n.text, matchType: n.matchType }))
      }
      yield* requireNone(treeProblems(copy, campaign, taken !== undefined))
      const payload: Payload = {
        sourceAdGroupId: source.adGroupId,
        sourceAdGroupName: source.name,
        sourceCampaignId: source.campaignId,
        campaignId: campaign.campaignId,
        campaignName: campaign.name,
        currency: view.account.currency,
        copy,
        keywordBidsDropped: bidless ? keywords.filter((k) => k.bidMicros !== null).length : 0
      }
      return { payload, summary: summary(payload) }
    }),
  // As for create_ad_group, the name is left to the first step, which tells this action's own ad group apart.
  recheck: (p, view) =>
    Effect.gen(function*() {
      const campaign = yield* found(yield* view.campaign(p.campaignId), `campaign ${p.campaignId} is no longer in this account`)
      yield* keywordBidsAllowed(campaign, p.copy.keywords)
    }),
  autoApply: (p) =>
    Effect.succeed(holds(`copying ad group "${p.sourceAdGroupName}" with ${plural(p.copy.keywords.length, "keyword")} and ${
      plural(p.copy.negativeKeywords.length, "negative keyword")
    } always needs review`)),
  steps: (p) => adGroupTreeSteps(p.copy, { campaignId: () => p.campaignId }),
  drift: (p, context) => treeDrift(p.copy, p.campaignId)(context),
  inverse: (p, ids) => deleteAdGroupInverse(ids, p.campaignId, p.copy.name)
})
