/** create_campaign: a campaign with its ad groups, keywords and negatives, built in recorded steps (a composite).
 * Always reviewed: it starts new spend. Reverting it deletes the campaign it created. */
import { createCampaign as declaration } from "@acs/domain/ProposalKinds"
import { Effect, Schema } from "effect"
import { defineKind } from "./Kind.ts"
import {
  CampaignTree,
  campaignTreeSteps,
  deleteCreatedCampaign,
  recheckTree,
  refuseBidsOnMaxConversions,
  treeContents,
  treeDrift,
  treeReasons,
  treeSettings
} from "./CampaignTree.ts"
import { decodeBody, holds, requireNone, targetCpaFor } from "./KindSupport.ts"

export const CreateCampaignPayload = Schema.Struct({
  currency: Schema.String,
  campaign: CampaignTree
})
type Payload = typeof CreateCampaignPayload.Type

const decode = decodeBody(declaration.body)

const summary = (p: Payload) =>
  `Create campaign "${p.campaign.name}" (${treeSettings(p.campaign, p.currency)}) with ${treeContents(p.campaign)}`

export const CreateCampaign = defineKind<Payload>({
  kind: "create_campaign",
  declaration,
  reviewTier: "high",
  rule: "never: creating a campaign always needs review",
  composite: true,
  payload: CreateCampaignPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const targetCpaMicros = yield* targetCpaFor(request.bidStrategy, request.targetCpaMicros)
      const campaign: CampaignTree = {
        name: request.name,
        adamId: request.adamId,
        countriesOrRegions: request.countriesOrRegions,
        dailyBudgetMicros: request.dailyBudgetMicros,
        bidStrategy: request.bidStrategy,
        targetCpaMicros,
        status: "ENABLED",
        negativeKeywords: [],
        adGroups: request.adGroups.map((a) => ({
          name: a.name,
          status: "ENABLED",
          defaultBidMicros: a.defaultBidMicros,
          cpaGoalMicros: a.cpaGoalMicros ?? null,
          searchMatch: a.searchMatch,
          keywords: a.keywords.map((k) => ({ text: k.text, matchType: k.matchType, bidMicros: k.bidMicros ?? null, status: "ACTIVE" })),
          negativeKeywords: a.negativeKeywords
        }))
      }
      yield* refuseBidsOnMaxConversions(campaign)
      yield* requireNone(yield* treeReasons(campaign, view))
      const payload: Payload = { currency: view.account.currency, campaign }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) => recheckTree(p.campaign, view),
  autoApply: () => Effect.succeed(holds("creating a campaign always needs review")),
  steps: (p) => campaignTreeSteps(p.campaign),
  drift: (p, context) => treeDrift(p.campaign, context),
  inverse: (p, ids) => deleteCreatedCampaign(p.campaign, ids)
})
