/** add_negative_keywords: negatives at campaign level, or in one ad group. Always in the auto-apply set
 * (docs/contract.md 3.1); the inverse removes what it created. Also the compensation of remove_negative_keywords, whose
 * negatives may come from several places, so every row carries its own place. */
import { NotFound } from "@acs/domain/Errors"
import { addNegativeKeywords as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamNegativeKeyword } from "@acs/upstream/Upstream"
import { Effect } from "effect"
import { defineKind, type Ids, type Step } from "./Kind.ts"
import { clears, decodeBody, found, requireNone, rowWarnings, someRowWorked } from "./KindSupport.ts"
import {
  duplicatesIn,
  groupBy,
  keywordKey,
  MAX_KEYWORDS_PER_AD_GROUP,
  negativesText,
  placeKey,
  placeText,
  quoted,
  upstreamNegatives
} from "./KeywordSupport.ts"
import { AddNegativeKeywordsPayload, type RemoveNegativeKeywordsPayload } from "./NegativeKeywordPayloads.ts"

type Payload = AddNegativeKeywordsPayload

/** Where `apply` records the id of payload negative `index` (absent when that row failed). */
export const negativeIdKey = (index: number): string => `negativeKeywordId:${index}`

const decode = decodeBody(declaration.body)

const summary = (p: Payload) => `Add ${negativesText(p.negatives, "to")}`

const createStep = (p: Payload): Step => ({
  name: "create negative keywords",
  apply: (context) =>
    Effect.gen(function*() {
      // One already there with the same text and match type (in the same place) is taken, not created twice.
      const existing = yield* upstreamNegatives(context, p.negatives.map((n) => n.campaignId))
      const byKey = new Map(existing.map((n) => [`${placeKey(n)}|${keywordKey(n.text, n.matchType)}`, n]))
      const made = new Map<number, UpstreamNegativeKeyword>()
      const pending: Array<{ readonly index: number; readonly negative: Payload["negatives"][number] }> = []
      p.negatives.forEach((negative, index) => {
        const there = byKey.get(`${placeKey(negative)}|${keywordKey(negative.text, negative.matchType)}`)
        if (there !== undefined) made.set(index, there)
        else pending.push({ index, negative })
      })
      const warnings: Array<string> = []
      // One bulk call per place; a body holds at most 1,000 negatives.
      for (const rows of groupBy(pending, (row) => placeKey(row.negative)).values()) {
        const place = rows[0]!.negative
        const result = yield* context.client.createNegativeKeywords(
          context.accountId,
          place.campaignId,
          place.adGroupId,
          rows.map(({ negative }) => ({ text: negative.text, matchType: negative.matchType }))
        )
        for (const row of result.succeeded) {
          const at = rows[row.index]
          if (at !== undefined) made.set(at.index, row.value)
        }
        warnings.push(...rowWarnings(result, (row) => {
          const negative = rows[row]?.negative
          return negative === undefined ? `row ${row}` : `negative keyword ${quoted(negative)} to ${placeText(negative)}`
        }))
      }
      yield* someRowWorked(made.size, warnings)
      const ids: Ids = Object.fromEntries([...made].map(([index, n]) => [negativeIdKey(index), n.negativeKeywordId]))
      return { ids, touched: { negativeKeywords: [...made.values()] }, warnings }
    })
})

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
