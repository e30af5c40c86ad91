/** remove_negative_keywords: deletes negatives, at campaign or ad group level, possibly from several places.
 * Always in the auto-apply set (docs/contract.md 3.1); the inverse adds them back. Also the compensation of
 * add_negative_keywords. */
import { removeNegativeKeywords as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamNegativeKeyword } from "@acs/upstream/Upstream"
import { Effect } from "effect"
import { defineKind, Drift, type Step, type StepContext } from "./Kind.ts"
import type { WarehouseView } from "./WarehouseView.ts"
import { clears, decodeBody, rowWarnings, someRowWorked } from "./KindSupport.ts"
import { groupBy, negativesText, placeKey, placeText, quoted, requireAll, upstreamNegatives } from "./KeywordSupport.ts"
import {
  type AddNegativeKeywordsPayload,
  RemovedNegative,
  RemoveNegativeKeywordsPayload
} from "./NegativeKeywordPayloads.ts"

type Payload = RemoveNegativeKeywordsPayload
type Removed = typeof RemovedNegative.Type

const decode = decodeBody(declaration.body)

const summary = (p: Payload) => `Remove ${negativesText(p.priorNegatives, "from")}`

/** Still there but no longer as recorded: removing it would discard someone else's change. */
const driftOf = (p: Payload, current: ReadonlyMap<string, UpstreamNegativeKeyword>): Array<string> =>
  p.priorNegatives.flatMap((n) => {
    const there = current.get(n.negativeKeywordId)
    return there === undefined || there.status === n.status
      ? []
      : [`negative keyword ${n.negativeKeywordId} ${quoted(n)} changed outside acs: it is now ${there.status} upstream; ` +
        `acs recorded ${n.status} at proposal`]
  })

const read = (p: Payload) => (context: StepContext) =>
  upstreamNegatives(context, p.priorNegatives.map((n) => n.campaignId))
    .pipe(Effect.map((all) => new Map(all.map((n) => [n.negativeKeywordId, n]))))

const removeStep = (p: Payload): Step => ({
  name: "remove negative keywords",
  apply: (context) =>
    Effect.gen(function*() {
      const current = yield* read(p)(context)
      const drift = driftOf(p, current)
      if (drift.length > 0) return yield* new Drift({ reason: drift.join("; ") })
      // Negatives already gone were removed by an earlier, unrecorded run (or by someone else): nothing to do.
      const removed = p.priorNegatives.filter((n) => !current.has(n.negativeKeywordId)).map((n) => n.negativeKeywordId)
      const warnings: Array<string> = []
      const pending = p.priorNegatives.filter((n) => current.has(n.negativeKeywordId))
      for (const rows of groupBy(pending, placeKey).values()) {
        const place = rows[0]!
        const result = yield* context.client.deleteNegativeKeywords(
          context.accountId,
          place.campaignId,
          place.adGroupId,
          rows.map((n) => n.negativeKeywordId)
        )
        removed.push(...result.succeeded.map((row) => row.value))
        warnings.push(...rowWarnings(result, (index) => {
          const negative = rows[index]
          return negative === undefined ? `row ${index}` : `negative keyword ${quoted(negative)} of ${placeText(negative)}`
        }))
      }
      yield* someRowWorked(removed.length, warnings)
      return { ids: {}, touched: { removedNegativeKeywords: removed }, warnings }
    })
})

/** Names of the campaigns and ad groups the negatives live in, for summaries. */
const named = (view: WarehouseView, negatives: ReadonlyArray<UpstreamNegativeKeyword>) =>
  Effect.gen(function*() {
    const campaigns = new Map<string, string>()
    const adGroups = new Map<string, string>()
    for (const n of negatives) {
      if (!campaigns.has(n.campaignId)) campaigns.set(n.campaignId, (yield* view.campaign(n.campaignId))?.name ?? n.campaignId)
      if (n.adGroupId !== null && !adGroups.has(n.adGroupId)) {
        adGroups.set(n.adGroupId, (yield* view.adGroup(n.adGroupId))?.name ?? n.adGroupId)
      }
    }
    return negatives.map((n): Removed => ({
      negativeKeywordId: n.negativeKeywordId,
      campaignId: n.campaignId,
      campaignName: campaigns.get(n.campaignId) ?? n.campaignId,
      adGroupId: n.adGroupId,
      adGroupName: n.adGroupId === null ? null : adGroups.get(n.adGroupId) ?? n.adGroupId,
      text: n.text,
      matchType: n.matchType,
      status: n.status
    }))
  })

export const RemoveNegativeKeywords = defineKind<Payload>({
  kind: "remove_negative_keywords",
  declaration,
  reviewTier: "review",
  rule: "always: removing negative keywords is in the auto-apply set",
  composite: false,
  payload: RemoveNegativeKeywordsPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const ids = [...new Set(request.negativeKeywordIds)]
      const rows = new Map((yield* view.negativeKeywords(ids)).map((n) => [n.negativeKeywordId, n]))
      yield* requireAll("negative keyword", ids, [...rows.keys()])
      const payload: Payload = { priorNegatives: yield* named(view, ids.flatMap((id) => rows.get(id) ?? [])) }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const ids = p.priorNegatives.map((n) => n.negativeKeywordId)
      yield* requireAll("negative keyword", ids, (yield* view.negativeKeywords(ids)).map((n) => n.negativeKeywordId))
    }),
  autoApply: () => Effect.succeed(clears("removing negative keywords is in the auto-apply set")),
  steps: (p) => [removeStep(p)],
  drift: (p, context) =>
    read(p)(context).pipe(Effect.map((current) => {
      const reasons = driftOf(p, current)
      return reasons.length === 0 ? null : reasons.join("; ")
    })),
  inverse: (p) => {
    // The platform creates negatives ACTIVE; a removed PAUSED one comes back active.
    const payload: AddNegativeKeywordsPayload = {
      negatives: p.priorNegatives.map(({ negativeKeywordId: _id, status: _status, ...negative }) => negative)
    }
    return { kind: "add_negative_keywords", payload, summary: `Revert: add back the ${negativesText(p.priorNegatives, "to")}` }
  }
})
