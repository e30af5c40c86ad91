/**
 * The two steps of harvest_search_terms (docs/contract.md 2.1.1): every term's keyword in bulk, then the negatives of
 * the terms whose keyword exists. Each reads its places before it writes, so a row that landed in a run whose outcome
 * was not recorded is taken, not written twice; v1's bulk create spans ad groups (PlacedCreates.ts).
 */
import type { UpstreamKeyword, UpstreamNegativeKeyword } from "@acs/upstream/Upstream"
import { Effect } from "effect"
import { EXACT, harvestKeywordIdKey, harvestNegativeIdKey, type HarvestPayload, placedTerms, type Term, termText } from "./HarvestPayload.ts"
import { type Step, StepRefused } from "./Kind.ts"
import { groupBy, keywordKey, upstreamNegatives } from "./KeywordSupport.ts"
import { createPlaced } from "./PlacedCreates.ts"

/** Step 1: every term's keyword, in bulk (v1: one call spans the ad groups; v5: one per ad group). */
export const keywordsStep = (p: HarvestPayload): Step => ({
  name: "create keywords",
  apply: (context) =>
    Effect.gen(function*() {
      const targets = [...groupBy(p.terms, (t) => t.targetAdGroupId).values()].map((same) => same[0]!)
      const lists = yield* Effect.forEach(targets, (t) => context.client.keywords(context.accountId, t.targetCampaignId, t.targetAdGroupId), {
        concurrency: 4
      })
      // A keyword already there is this action's own from a run whose outcome was not recorded: taken, not made twice.
      const there = new Map(lists.flat().map((k) => [`${k.adGroupId}|${keywordKey(k.text, k.matchType)}`, k]))
      const taken = (t: Term) => there.get(`${t.targetAdGroupId}|${keywordKey(t.text, EXACT)}`)
      const pending = placedTerms(p).filter(({ t }) => taken(t) === undefined)
      const sent = yield* createPlaced(
        pending.map(({ t }) => ({ campaignId: t.targetCampaignId, adGroupId: t.targetAdGroupId, text: t.text, matchType: EXACT, bidMicros: t.bidMicros })),
        context.client.createKeywordsAcross === undefined ? undefined : (rows) => context.client.createKeywordsAcross!(context.accountId, rows),
        (campaignId, adGroupId, rows) => context.client.createKeywords(context.accountId, campaignId, adGroupId, rows)
      )
      const outcomeOf = new Map(pending.map((row, k) => [row.index, sent[k]!]))
      const made: Array<readonly [number, UpstreamKeyword]> = []
      const warnings: Array<string> = []
      for (const { t, index } of placedTerms(p)) {
        const kept = taken(t)
        const outcome = outcomeOf.get(index)
        if (kept !== undefined) made.push([index, kept])
        else if (outcome !== undefined && "value" in outcome) made.push([index, outcome.value])
        else {
          warnings.push(`term ${termText(t)}: its keyword was not added to ad group "${t.targetAdGroupName}": ${outcome?.messages.join("; ") ?? "no answer"}` +
            (p.negateAtSource ? `; so it is not negated in ad group "${t.sourceAdGroupName}"` : ""))
        }
      }
      if (made.length === 0) return yield* new StepRefused({ message: `every keyword add failed: ${warnings.join("; ")}` })
      return {
        ids: Object.fromEntries(made.map(([index, k]) => [harvestKeywordIdKey(index), k.keywordId])),
        touched: { keywords: made.map(([, k]) => k) },
        warnings
      }
    }),
  // The negatives' call failed as a whole: the keywords go too, so a failed harvest leaves nothing behind.
  undo: (context) =>
    Effect.gen(function*() {
      const created = placedTerms(p).flatMap(({ t, index }) => {
        const keywordId = context.ids[harvestKeywordIdKey(index)]
        return typeof keywordId === "string" ? [{ ...t, keywordId }] : []
      })
      for (const same of groupBy(created, (t) => t.targetAdGroupId).values()) {
        yield* context.client.deleteKeywords(context.accountId, same[0]!.targetCampaignId, same[0]!.targetAdGroupId, same.map((t) => t.keywordId))
      }
      return { removedKeywords: created.map((t) => t.keywordId) }
    })
})

/** Step 2: the EXACT negative at the source of each term whose keyword exists (a failed add skips its negative). */
export const negativesStep = (p: HarvestPayload): Step => ({
  name: "create negative keywords",
  apply: (context) =>
    Effect.gen(function*() {
      const eligible = placedTerms(p).filter(({ index }) => typeof context.ids[harvestKeywordIdKey(index)] === "string")
      const existing = yield* upstreamNegatives(context, eligible.map(({ t }) => t.sourceCampaignId))
      const there = new Map(existing.map((n) => [`${n.adGroupId}|${keywordKey(n.text, n.matchType)}`, n]))
      const taken = (t: Term) => there.get(`${t.sourceAdGroupId}|${keywordKey(t.text, EXACT)}`)
      const pending = eligible.filter(({ t }) => taken(t) === undefined)
      const sent = yield* createPlaced(
        pending.map(({ t }) => ({ campaignId: t.sourceCampaignId, adGroupId: t.sourceAdGroupId, text: t.text, matchType: EXACT })),
        context.client.createNegativeKeywordsAcross === undefined
          ? undefined
          : (rows) => context.client.createNegativeKeywordsAcross!(context.accountId, rows),
        (campaignId, adGroupId, rows) => context.client.createNegativeKeywords(context.accountId, campaignId, adGroupId, rows)
      )
      const outcomeOf = new Map(pending.map((row, k) => [row.index, sent[k]!]))
      const made: Array<readonly [number, UpstreamNegativeKeyword]> = []
      const warnings: Array<string> = []
      for (const { t, index } of eligible) {
        const kept = taken(t)
        const outcome = outcomeOf.get(index)
        if (kept !== undefined) made.push([index, kept])
        else if (outcome !== undefined && "value" in outcome) made.push([index, outcome.value])
        else warnings.push(`term ${termText(t)}: its negative was not added to ad group "${t.sourceAdGroupName}": ${outcome?.messages.join("; ") ?? "no answer"}`)
      }
      // A negative that failed leaves its keyword competing with the source, which is safe: reported, not failed.
      return {
        ids: Object.fromEntries(made.map(([index, n]) => [harvestNegativeIdKey(index), n.negativeKeywordId])),
        touched: { negativeKeywords: made.map(([, n]) => n) },
        warnings
      }
    })
})
