/**
 * unharvest_search_terms: only the compensation of a harvest_search_terms revert, never proposed. Removes the
 * harvest's negatives first (so a term is never blocked at its source without its keyword), then its keywords: per
 * ad group in bulk where the platform has a bulk delete, one by one on v1. An item changed outside acs since the
 * harvest wrote it (a bid, a status) is a drift: the revert queues for a person, who may write over it. An item
 * removed outside acs since is `conflicted`: nothing is left to remove, and the revert says so per item in its
 * warnings while it removes the rest (and its revert names them in its policy reasons before it applies).
 */
import { InvalidRequest } from "@acs/domain/Errors"
import type { UpstreamKeyword, UpstreamNegativeKeyword } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { defineKind, Drift, type Step, type StepContext } from "./Kind.ts"
import { holds, rowWarnings } from "./KindSupport.ts"
import { groupBy, placeKey, placeText, quoted, stateText, upstreamKeywords, upstreamNegatives } from "./KeywordSupport.ts"
import { RemovedNegative } from "./NegativeKeywordPayloads.ts"
import { RemovedKeyword } from "./RemoveKeywords.ts"

/** What the harvest made, as it made it: the state the revert removes. */
export const UnharvestSearchTermsPayload = Schema.Struct({
  priorNegatives: Schema.Array(RemovedNegative),
  priorKeywords: Schema.Array(RemovedKeyword)
})
export type UnharvestSearchTermsPayload = typeof UnharvestSearchTermsPayload.Type
type Payload = UnharvestSearchTermsPayload
type Negative = typeof RemovedNegative.Type
type Keyword = typeof RemovedKeyword.Type

const readNegatives = (p: Payload, context: StepContext) =>
  upstreamNegatives(context, p.priorNegatives.map((n) => n.campaignId)).pipe(
    Effect.map((all) => new Map(all.map((n) => [n.negativeKeywordId, n])))
  )

const negativeMoved = (n: Negative, there: UpstreamNegativeKeyword): string | null =>
  there.status === n.status
    ? null
    : `negative keyword ${n.negativeKeywordId} ${quoted(n)} changed outside acs: it is now ${there.status} upstream; the harvest made it ${n.status}`

const keywordMoved = (k: Keyword, there: UpstreamKeyword): string | null =>
  there.status === k.status && there.bidMicros === k.bidMicros
    ? null
    : `keyword ${k.keywordId} ${quoted(k)} changed outside acs: it is now ${stateText(there)} upstream; the harvest made it ${stateText(k)}`

const driftOf = (p: Payload, negatives: ReadonlyMap<string, UpstreamNegativeKeyword>, keywords: ReadonlyMap<string, UpstreamKeyword>) => [
  ...p.priorNegatives.flatMap((n) => {
    const there = negatives.get(n.negativeKeywordId)
    const moved = there === undefined ? null : negativeMoved(n, there)
    return moved === null ? [] : [moved]
  }),
  ...p.priorKeywords.flatMap((k) => {
    const there = keywords.get(k.keywordId)
    const moved = there === undefined ? null : keywordMoved(k, there)
    return moved === null ? [] : [moved]
  })
]

const gone = (what: string) => `conflicted: ${what} was removed outside acs since the harvest added it; nothing left to remove`

/** What the harvest made that is gone upstream now: nothing left to remove, named per item. */
const goneItems = (p: Payload, negatives: ReadonlyMap<string, UpstreamNegativeKeyword>, keywords: ReadonlyMap<string, UpstreamKeyword>) => [
  ...p.priorNegatives.filter((n) => !negatives.has(n.negativeKeywordId))
    .map((n) => gone(`negative keyword ${n.negativeKeywordId} ${quoted(n)} of ${placeText(n)}`)),
  ...p.priorKeywords.filter((k) => !keywords.has(k.keywordId)).map((k) => gone(`keyword ${k.keywordId} ${quoted(k)}`))
]

const negativesStep = (p: Payload): Step => ({
  name: "remove negative keywords",
  apply: (context) =>
    Effect.gen(function*() {
      const current = yield* readNegatives(p, context)
      const moved = p.priorNegatives.flatMap((n) => {
        const there = current.get(n.negativeKeywordId)
        const reason = there === undefined ? null : negativeMoved(n, there)
        return reason === null ? [] : [reason]
      })
      if (moved.length > 0 && !context.acceptDrift) return yield* new Drift({ reason: moved.join("; ") })
      const warnings = p.priorNegatives.filter((n) => !current.has(n.negativeKeywordId))
        .map((n) => gone(`negative keyword ${n.negativeKeywordId} ${quoted(n)} of ${placeText(n)}`))
      const removed: Array<string> = []
      for (const rows of groupBy(p.priorNegatives.filter((n) => current.has(n.negativeKeywordId)), placeKey).values()) {
        const place = rows[0]!
        const result = yield* context.client.deleteNegativeKeywords(context.accountId, place.campaignId, place.adGroupId, rows.map((n) => n.negativeKeywordId))
        removed.push(...result.succeeded.map((row) => row.value))
        warnings.push(...rowWarnings(result, (index) => `negative keyword ${quoted(rows[index] ?? { text: `row ${index}`, matchType: "EXACT" })} of ${placeText(place)}`))
      }
      return { ids: {}, touched: { removedNegativeKeywords: removed }, warnings }
    })
})

const keywordsStep = (p: Payload): Step => ({
  name: "remove keywords",
  apply: (context) =>
    Effect.gen(function*() {
      const current = yield* upstreamKeywords(context, p.priorKeywords)
      const moved = p.priorKeywords.flatMap((k) => {
        const there = current.get(k.keywordId)
        const reason = there === undefined ? null : keywordMoved(k, there)
        return reason === null ? [] : [reason]
      })
      if (moved.length > 0 && !context.acceptDrift) return yield* new Drift({ reason: moved.join("; ") })
      const warnings = p.priorKeywords.filter((k) => !current.has(k.keywordId)).map((k) => gone(`keyword ${k.keywordId} ${quoted(k)}`))
      const removed: Array<string> = []
      for (const rows of groupBy(p.priorKeywords.filter((k) => current.has(k.keywordId)), (k) => k.adGroupId).values()) {
        const first = rows[0]!
        const result = yield* context.client.deleteKeywords(context.accountId, first.campaignId, first.adGroupId, rows.map((k) => k.keywordId))
        removed.push(...result.succeeded.map((row) => row.value))
        warnings.push(...rowWarnings(result, (index) => `keyword ${quoted(rows[index] ?? { text: `row ${index}`, matchType: "EXACT" })}`))
      }
      return { ids: {}, touched: { removedKeywords: removed }, warnings }
    })
})

export const UnharvestSearchTerms = defineKind<Payload>({
  kind: "unharvest_search_terms",
  reviewTier: "review",
  rule: "never proposed: removing a harvest's keywords and negatives is only the revert of the harvest",
  composite: true,
  payload: UnharvestSearchTermsPayload,
  prepare: () => Effect.fail(new InvalidRequest({ message: "unharvest_search_terms cannot be proposed: revert the harvest_search_terms action" })),
  recheck: () => Effect.void,
  autoApply: () => Effect.succeed(holds("removing a harvest is only the revert of the harvest")),
  steps: (p) => [negativesStep(p), keywordsStep(p)],
  conflicts: (p, context) =>
    Effect.all([readNegatives(p, context), upstreamKeywords(context, p.priorKeywords)]).pipe(
      Effect.map(([negatives, keywords]) => goneItems(p, negatives, keywords)),
      // A place gone upstream is the drift's to report (the revert then queues), not an item's.
      Effect.catchTag("NotFound", () => Effect.succeed([]))
    ),
  drift: (p, context) =>
    Effect.all([readNegatives(p, context), upstreamKeywords(context, p.priorKeywords)]).pipe(Effect.map(([negatives, keywords]) => {
      const reasons = driftOf(p, negatives, keywords)
      return reasons.length === 0 ? null : reasons.join("; ")
    }))
})
