/** add_negative_keywords: negatives at campaign level, or in one ad group. Always in the auto-apply set
 * (docs/contract.md 3.1); the inverse removes what it created. Also the compensation of remove_negative_keywords, whose
 * negatives may come from several places, so every row carries its own place. */
import { NotFound } from "@acs/domain/Errors"
import { addNegativeKeywords as declaration } from "@acs/domain/ProposalKinds"
import { Effect } from "effect"
import { bulkStep } from "./BulkParts.ts"
import { defineKind, type Step } from "./Kind.ts"
import { clears, decodeBody, found, requireNone } from "./KindSupport.ts"
import {
  duplicatesIn,
  groupBy,
  keywordKey,
  MAX_KEYWORDS_PER_AD_GROUP,
  negativesText,
  placeKey,
  placeText,
  quoted
} from "./KeywordSupport.ts"
import { AddNegativeKeywordsPayload, type RemoveNegativeKeywordsPayload } from "./NegativeKeywordPayloads.ts"

type Payload = AddNegativeKeywordsPayload

/** Where `apply` records the id of payload negative `index` (absent when that row failed). */
export const negativeIdKey = (index: number): string => `negativeKeywordId:${index}`

const decode = decodeBody(declaration.body)

const summary = (p: Payload) => `Add ${negativesText(p.negatives, "to")}`

const createStep = (p: Payload): Step =>
  bulkStep("create negative keywords", { _tag: "CreateNegatives", rows: p.negatives, idKey: negativeIdKey })

export const AddNegativeKeywords = defineKind<Payload>({
  kind: "add_negative_keywords",
  declaration,
  reviewTier: "review",
  rule: "always: adding negative keywords is in the auto-apply set",
  composite: false,
  payload: AddNegativeKeywordsPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const campaign = yield* found(yield* view.campaign(request.campaignId), `no campaign ${request.campaignId} in this account`)
      const adGroup = request.adGroupId === undefined ? null : yield* view.adGroup(request.adGroupId)
      if (adGroup === undefined || (adGroup !== null && adGroup.campaignId !== campaign.campaignId)) {
        return yield* new NotFound({ message: `no ad group ${request.adGroupId} in campaign ${campaign.campaignId}` })
      }
      const place = {
        campaignId: campaign.campaignId,
        campaignName: campaign.name,
        adGroupId: adGroup?.adGroupId ?? null,
        adGroupName: adGroup?.name ?? null
      }
      const [negatives, keywords] = yield* Effect.all([
        view.negativesOf(campaign.campaignId, place.adGroupId),
        // The platform's limit counts an ad group's targeting keywords with its negatives.
        adGroup === null ? Effect.succeed([]) : view.keywordsOf(adGroup.adGroupId)
      ])
      const there = new Set(negatives.map((n) => keywordKey(n.text, n.matchType)))
      const held = negatives.length + keywords.length
      const total = held + request.keywords.length
      yield* requireNone([
        ...duplicatesIn(request.keywords),
        ...request.keywords.filter((k) => there.has(keywordKey(k.text, k.matchType)))
          .map((k) => `${quoted(k)} is already a negative keyword of ${placeText(place)}`),
        ...(total > MAX_KEYWORDS_PER_AD_GROUP
          ? [`${placeText(place)} would hold ${total} keywords (it holds ${held}); the platform allows at most ` +
            `${MAX_KEYWORDS_PER_AD_GROUP}`]
          : [])
      ])
      const payload: Payload = { negatives: request.keywords.map((k) => ({ ...place, text: k.text, matchType: k.matchType })) }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.forEach(groupBy(p.negatives, placeKey).values(), ([place]) =>
      Effect.gen(function*() {
        if (place === undefined) return
        yield* found(yield* view.campaign(place.campaignId), `campaign ${place.campaignId} is no longer in this account`)
        if (place.adGroupId !== null) {
          yield* found(yield* view.adGroup(place.adGroupId), `ad group ${place.adGroupId} is no longer in this account`)
        }
      }), { discard: true }),
  autoApply: () => Effect.succeed(clears("adding negative keywords is in the auto-apply set")),
  steps: (p) => [createStep(p)],
  // Creating negatives overwrites nothing recorded at proposal: one added meanwhile is taken as is.
  drift: () => Effect.succeed(null),
  inverse: (p, ids) => {
    const created = p.negatives.flatMap((n, index) => {
      const negativeKeywordId = ids[negativeIdKey(index)]
      return typeof negativeKeywordId === "string" ? [{ ...n, negativeKeywordId, status: "ACTIVE" as const }] : []
    })
    const payload: RemoveNegativeKeywordsPayload = { priorNegatives: created }
    return { kind: "remove_negative_keywords", payload, summary: `Revert: remove the ${negativesText(created, "from")}` }
  }
})
