/** create_ad_group: an ad group with its keywords and negatives in an existing campaign, as a composite of recorded
 * steps (AdGroupTree). Always review; its inverse deletes the ad group it created. */
import { createAdGroup as declaration } from "@acs/domain/ProposalKinds"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import { AdGroupTree, adGroupTreeSteps, keywordBidsAllowed, TreeNegative, treeDescription, treeDrift, treeProblems } from "./AdGroupTree.ts"
import { deleteAdGroupInverse } from "./DeleteAdGroup.ts"
import { plural } from "./KeywordSupport.ts"
import { decodeBody, found, holds, requireNone } from "./KindSupport.ts"

export const CreateAdGroupPayload = Schema.Struct({
  campaignId: Schema.String,
  campaignName: Schema.String,
  currency: Schema.String,
  name: Schema.String,
  defaultBidMicros: Schema.Int,
  cpaGoalMicros: Schema.NullOr(Schema.Int),
  searchMatch: Schema.Boolean,
  keywords: Schema.Array(Schema.Struct({
    text: Schema.String,
    matchType: Schema.Literal("EXACT", "BROAD"),
    bidMicros: Schema.NullOr(Schema.Int)
  })),
  negativeKeywords: Schema.Array(TreeNegative)
})
type Payload = typeof CreateAdGroupPayload.Type

const decode = decodeBody(declaration.body)

/** A new ad group starts enabled with active keywords, as the platform creates them by default. */
const treeOf = (p: Payload): AdGroupTree => ({
  name: p.name,
  defaultBidMicros: p.defaultBidMicros,
  cpaGoalMicros: p.cpaGoalMicros,
  searchMatch: p.searchMatch,
  status: "ENABLED",
  keywords: p.keywords.map((k) => ({ ...k, status: "ACTIVE" as const })),
  negativeKeywords: p.negativeKeywords
})

const summary = (p: Payload) =>
  `Create ad group "${p.name}" in campaign "${p.campaignName}" ${treeDescription(treeOf(p), p.currency)}`

export const CreateAdGroup = defineKind<Payload>({
  kind: "create_ad_group",
  declaration,
  reviewTier: "high",
  rule: "never: creating an ad group with its keywords and negatives always needs review",
  composite: true,
  payload: CreateAdGroupPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const campaign = yield* found(yield* view.campaign(request.campaignId), `no campaign ${request.campaignId} in this account`)
      const keywords = request.keywords.map((k) => ({ text: k.text, matchType: k.matchType, bidMicros: k.bidMicros ?? null }))
      yield* keywordBidsAllowed(campaign, keywords)
      const taken = yield* view.adGroupNamed(campaign.campaignId, request.name)
      yield* requireNone(treeProblems({ name: request.name, keywords, negativeKeywords: request.negativeKeywords }, campaign, taken !== undefined))
      const payload: Payload = {
        campaignId: campaign.campaignId,
        campaignName: campaign.name,
        currency: view.account.currency,
        name: request.name,
        defaultBidMicros: request.defaultBidMicros,
        cpaGoalMicros: request.cpaGoalMicros ?? null,
        searchMatch: request.searchMatch,
        keywords,
        negativeKeywords: request.negativeKeywords.map((n) => ({ text: n.text, matchType: n.matchType }))
      }
      return { payload, summary: summary(payload) }
    }),
  // The name is not checked again here: after an interrupted run a sync may already show this action's own ad
  // group, which the first step takes by name (and turns into drift when it is someone else's).
  recheck: (p, view) =>
    Effect.gen(function*() {
      const campaign = yield* found(yield* view.campaign(p.campaignId), `campaign ${p.campaignId} is no longer in this account`)
      yield* keywordBidsAllowed(campaign, p.keywords)
    }),
  autoApply: (p) =>
    Effect.succeed(holds(`creating ad group "${p.name}" with ${plural(p.keywords.length, "keyword")} and ${
      plural(p.negativeKeywords.length, "negative keyword")
    } always needs review`)),
  steps: (p) => adGroupTreeSteps(treeOf(p), { campaignId: () => p.campaignId }),
  drift: (p, context) => treeDrift(treeOf(p), p.campaignId)(context),
  inverse: (p, ids) => deleteAdGroupInverse(ids, p.campaignId, p.name)
})
