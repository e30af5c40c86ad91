/** remove_keywords: deletes targeting keywords, across ad groups. The payload keeps the removed keywords for the
 * record in `priorKeywords` (docs/contract.md 1: prior state lives in `prior…` fields), but there is no inverse (a re-created
 * keyword is a new keyword without its history): 422 not_revertible. Also the compensation of add_keywords. */
import { removeKeywords as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamKeyword } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { defineKind, Drift, type StepContext } from "./Kind.ts"
import { decodeBody, holds, rowWarnings, someRowWorked } from "./KindSupport.ts"
import { groupBy, keywordLabel, knownKeywords, listed, plural, quoted, requireAll, stateText, upstreamKeywords } from "./KeywordSupport.ts"

export const RemovedKeyword = Schema.Struct({
  keywordId: Schema.String,
  adGroupId: Schema.String,
  campaignId: Schema.String,
  text: Schema.String,
  matchType: Schema.Literal("EXACT", "BROAD"),
  status: Schema.Literal("ACTIVE", "PAUSED"),
  bidMicros: Schema.NullOr(Schema.Int)
})

/** `priorKeywords`: each keyword as the warehouse held it at proposal, the state the removal discards. */
export const RemoveKeywordsPayload = Schema.Struct({ priorKeywords: Schema.Array(RemovedKeyword) })
export type RemoveKeywordsPayload = typeof RemoveKeywordsPayload.Type
type Payload = RemoveKeywordsPayload
type Removed = typeof RemovedKeyword.Type

const decode = decodeBody(declaration.body)

const summary = (p: Payload) =>
  `Remove ${plural(p.priorKeywords.length, "keyword")}: ${listed(p.priorKeywords.map(quoted))} (cannot be reverted)`

/** A keyword still there but no longer as recorded: removing it would discard someone else's change. */
const changed = (recorded: Removed, current: UpstreamKeyword): string | null =>
  current.status === recorded.status && current.bidMicros === recorded.bidMicros
    ? null
    : `keyword ${recorded.keywordId} ${quoted(recorded)} changed outside acs: it is now ${stateText(current)} upstream; acs recorded ${
      stateText(recorded)
    } at proposal`

const driftOf = (p: Payload, current: ReadonlyMap<string, UpstreamKeyword>): Array<string> =>
  p.priorKeywords.flatMap((k) => {
    const there = current.get(k.keywordId)
    const reason = there === undefined ? null : changed(k, there)
    return reason === null ? [] : [reason]
  })

const removeStep = (p: Payload) => ({
  name: "remove keywords",
  apply: (context: StepContext) =>
    Effect.gen(function*() {
      const current = yield* upstreamKeywords(context, p.priorKeywords)
      const drift = driftOf(p, current)
      if (drift.length > 0) return yield* new Drift({ reason: drift.join("; ") })
      // Keywords already gone were removed by an earlier, unrecorded run (or by someone else): nothing to do.
      const removed = p.priorKeywords.filter((k) => !current.has(k.keywordId)).map((k) => k.keywordId)
      const warnings: Array<string> = []
      const pending = p.priorKeywords.filter((k) => current.has(k.keywordId))
      for (const keywords of groupBy(pending, (k) => k.adGroupId).values()) {
        const first = keywords[0]!
        const result = yield* context.client.deleteKeywords(
          context.accountId,
          first.campaignId,
          first.adGroupId,
          keywords.map((k) => k.keywordId)
        )
        removed.push(...result.succeeded.map((row) => row.value))
        warnings.push(...rowWarnings(result, (index) => keywordLabel(keywords[index], index)))
      }
      yield* someRowWorked(removed.length, warnings)
      return { ids: {}, touched: { removedKeywords: removed }, warnings }
    })
})

export const RemoveKeywords = defineKind<Payload>({
  kind: "remove_keywords",
  declaration,
  reviewTier: "review",
  rule: "never: removing keywords cannot be reverted",
  composite: false,
  payload: RemoveKeywordsPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const keywords = yield* knownKeywords(view, request.keywordIds)
      const payload: Payload = {
        priorKeywords: keywords.map((k) => ({
          keywordId: k.keywordId,
          adGroupId: k.adGroupId,
          campaignId: k.campaignId,
          text: k.text,
          matchType: k.matchType,
          status: k.status,
          bidMicros: k.bidMicros
        }))
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const ids = p.priorKeywords.map((k) => k.keywordId)
      yield* requireAll("keyword", ids, (yield* view.keywords(ids)).map((k) => k.keywordId))
    }),
  autoApply: () => Effect.succeed(holds("removing keywords cannot be reverted, so it always needs review")),
  steps: (p) => [removeStep(p)],
  drift: (p, context) =>
    upstreamKeywords(context, p.priorKeywords).pipe(Effect.map((current) => {
      const reasons = driftOf(p, current)
      return reasons.length === 0 ? null : reasons.join("; ")
    }))
})
