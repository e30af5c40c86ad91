/** change_match_type: the platform cannot update a keyword's match type, so this composite creates the keyword
 * again with the new match type (same text, bid and status, same ad group), then removes the old one. Never
 * auto-applies; the inverse changes it back, starting from the new keyword. */
import { changeMatchType as declaration } from "@acs/domain/ProposalKinds"
import type { UpstreamKeyword } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { defineKind, Drift, type Ids, type Step, type StepContext, StepRefused } from "./Kind.ts"
import { decodeBody, found, holds, noOp, requireNone } from "./KindSupport.ts"
import { keywordKey, MAX_KEYWORDS_PER_AD_GROUP, quoted, stateText } from "./KeywordSupport.ts"

const MatchType = Schema.Literal("EXACT", "BROAD")

export const ChangeMatchTypePayload = Schema.Struct({
  keywordId: Schema.String,
  adGroupId: Schema.String,
  adGroupName: Schema.String,
  campaignId: Schema.String,
  text: Schema.String,
  priorMatchType: MatchType,
  newMatchType: MatchType,
  /** The old keyword's bid and status at proposal: the state it must still hold, copied onto the new keyword. */
  priorBidMicros: Schema.NullOr(Schema.Int),
  priorStatus: Schema.Literal("ACTIVE", "PAUSED")
})
type Payload = typeof ChangeMatchTypePayload.Type

/** Where step 1 records the id of the keyword it created. */
export const NEW_KEYWORD_ID = "newKeywordId"

const decode = decodeBody(declaration.body)

const summary = (p: Payload) =>
  `Change keyword "${p.text}" in ad group "${p.adGroupName}" from ${p.priorMatchType} to ${p.newMatchType} ` +
  `(a new ${p.newMatchType} keyword with the same bid and status replaces it)`

const read = (context: StepContext, p: Payload) =>
  context.client.keywords(context.accountId, p.campaignId, p.adGroupId).pipe(Effect.map((keywords) => ({
    old: keywords.find((k) => k.keywordId === p.keywordId),
    replacement: keywords.find((k) => keywordKey(k.text, k.matchType) === keywordKey(p.text, p.newMatchType))
  })))

/** The old keyword no longer as recorded: copying the recorded bid and status would undo someone's change. */
const changed = (p: Payload, old: UpstreamKeyword): string | null =>
  old.status === p.priorStatus && old.bidMicros === p.priorBidMicros
    ? null
    : `keyword ${p.keywordId} "${p.text}" changed outside acs: it is now ${stateText(old)} upstream; acs recorded ${
      stateText({ status: p.priorStatus, bidMicros: p.priorBidMicros })
    } at proposal`

const removedOutside = (p: Payload) => `keyword ${p.keywordId} "${p.text}" (${p.priorMatchType}) was removed outside acs`

/** Drift before step 1: neither the old keyword as recorded nor (after a completed apply) its replacement. */
const driftOf = (p: Payload, seen: { readonly old: UpstreamKeyword | undefined; readonly replacement: UpstreamKeyword | undefined }) =>
  seen.old !== undefined ? changed(p, seen.old) : seen.replacement !== undefined ? null : removedOutside(p)

const createStep = (p: Payload): Step => ({
  name: `create the ${p.newMatchType} keyword`,
  apply: (context) =>
    Effect.gen(function*() {
      const { old, replacement } = yield* read(context, p)
      // Reconciled by text and match type: proposal refused an existing one, so one there now is ours.
      if (replacement !== undefined) {
        return { ids: { [NEW_KEYWORD_ID]: replacement.keywordId }, touched: { keywords: [replacement] }, warnings: [] }
      }
      const reason = old === undefined ? removedOutside(p) : changed(p, old)
      if (reason !== null) return yield* new Drift({ reason })
      const result = yield* context.client.createKeywords(context.accountId, p.campaignId, p.adGroupId, [
        { text: p.text, matchType: p.newMatchType, bidMicros: p.priorBidMicros, status: p.priorStatus }
      ])
      const created = result.succeeded[0]?.value
      if (created === undefined) {
        return yield* new StepRefused({ message: result.failed.map((f) => f.message).join("; ") || "the platform created nothing" })
      }
      return { ids: { [NEW_KEYWORD_ID]: created.keywordId }, touched: { keywords: [created] }, warnings: [] }
    }),
  undo: (context) =>
    Effect.gen(function*() {
      const created = context.ids[NEW_KEYWORD_ID]
      if (typeof created !== "string") return {}
      // A row failure here means it is already gone; either way it is not in the ad group any more.
      yield* context.client.deleteKeywords(context.accountId, p.campaignId, p.adGroupId, [created])
      return { removedKeywords: [created] }
    })
})

const removeStep = (p: Payload): Step => ({
  name: `remove the ${p.priorMatchType} keyword`,
  apply: (context) =>
    Effect.gen(function*() {
      const { old } = yield* read(context, p)
      if (old === undefined) return { ids: {}, touched: { removedKeywords: [p.keywordId] }, warnings: [] }
      const reason = changed(p, old)
      if (reason !== null) return yield* new Drift({ reason })
      const result = yield* context.client.deleteKeywords(context.accountId, p.campaignId, p.adGroupId, [p.keywordId])
      if (result.succeeded.length === 0) {
        return yield* new StepRefused({ message: result.failed.map((f) => f.message).join("; ") || "the platform removed nothing" })
      }
      return { ids: {}, touched: { removedKeywords: [p.keywordId] }, warnings: [] }
    })
})

const newKeywordId = (p: Payload, ids: Ids): string => {
  const created = ids[NEW_KEYWORD_ID]
  // Every apply records it; without it the revert starts from the old id, which its drift check then reports.
  return typeof created === "string" ? created : p.keywordId
}

export const ChangeMatchType = defineKind<Payload>({
  kind: "change_match_type",
  declaration,
  reviewTier: "review",
  rule: "never: changing a match type replaces the keyword, so it always needs review",
  composite: true,
  payload: ChangeMatchTypePayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const keyword = yield* found((yield* view.keywords([request.keywordId]))[0], `no keyword ${request.keywordId} in this account`)
      if (keyword.matchType === request.matchType) {
        return yield* noOp(`keyword ${keyword.keywordId} "${keyword.text}" is already ${request.matchType}`)
      }
      const adGroup = yield* found(yield* view.adGroup(keyword.adGroupId), `no ad group ${keyword.adGroupId} in this account`)
      const [keywords, negatives] = yield* Effect.all([
        view.keywordsOf(adGroup.adGroupId),
        view.negativesOf(adGroup.campaignId, adGroup.adGroupId)
      ])
      const held = keywords.length + negatives.length
      yield* requireNone([
        ...keywords.filter((k) => keywordKey(k.text, k.matchType) === keywordKey(keyword.text, request.matchType))
          .map((k) => `ad group "${adGroup.name}" already has ${quoted(k)} (keyword ${k.keywordId})`),
        // The new keyword exists beside the old one until step 2 removes it.
        ...(held >= MAX_KEYWORDS_PER_AD_GROUP
          ? [`ad group "${adGroup.name}" holds ${held} keywords and negative keywords, the platform's limit of ` +
            `${MAX_KEYWORDS_PER_AD_GROUP}, ` +
            "so the replacement cannot be created before the old keyword is removed"]
          : [])
      ])
      const payload: Payload = {
        keywordId: keyword.keywordId,
        adGroupId: adGroup.adGroupId,
        adGroupName: adGroup.name,
        campaignId: adGroup.campaignId,
        text: keyword.text,
        priorMatchType: keyword.matchType,
        newMatchType: request.matchType,
        priorBidMicros: keyword.bidMicros,
        priorStatus: keyword.status
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      yield* found((yield* view.keywords([p.keywordId]))[0], `keyword ${p.keywordId} is no longer in this account`)
      yield* found(yield* view.adGroup(p.adGroupId), `ad group ${p.adGroupId} is no longer in this account`)
    }),
  autoApply: () => Effect.succeed(holds("changing a match type replaces the keyword, so it always needs review")),
  steps: (p) => [createStep(p), removeStep(p)],
  drift: (p, context) => read(context, p).pipe(Effect.map((seen) => driftOf(p, seen))),
  inverse: (p, ids) => {
    const payload: Payload = {
      ...p,
      keywordId: newKeywordId(p, ids),
      priorMatchType: p.newMatchType,
      newMatchType: p.priorMatchType
    }
    return { kind: "change_match_type", payload, summary: `Revert: ${summary(payload)}` }
  }
})
