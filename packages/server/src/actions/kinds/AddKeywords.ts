/** add_keywords: targeting keywords into one ad group. Auto-applies up to 10 EXACT keywords whose bids stay within
 * 1.5 × the account's 30-day average cost per tap (docs/contract.md 3.1); its inverse removes what it created. */
import { BidStrategyConflict } from "@acs/domain/Errors"
import { addKeywords as declaration } from "@acs/domain/ProposalKinds"
import { Effect, Schema } from "effect"
import { bulkStep } from "./BulkParts.ts"
import { defineKind, type Step } from "./Kind.ts"
import type { WarehouseView } from "./WarehouseView.ts"
import { clears, decodeBody, found, holds, money, requireNone } from "./KindSupport.ts"
import { duplicatesIn, keywordKey, listed, MAX_KEYWORDS_PER_AD_GROUP, plural, quoted } from "./KeywordSupport.ts"
import type { RemoveKeywordsPayload } from "./RemoveKeywords.ts"

const NewKeyword = Schema.Struct({
  text: Schema.String,
  matchType: Schema.Literal("EXACT", "BROAD"),
  /** null: the ad group's default bid applies. */
  bidMicros: Schema.NullOr(Schema.Int)
})

export const AddKeywordsPayload = Schema.Struct({
  campaignId: Schema.String,
  campaignName: Schema.String,
  adGroupId: Schema.String,
  adGroupName: Schema.String,
  currency: Schema.String,
  /** The ad group's default bid at proposal: the effective bid of a keyword without its own. */
  defaultBidMicros: Schema.Int,
  keywords: Schema.Array(NewKeyword)
})
type Payload = typeof AddKeywordsPayload.Type

/** Bounds of docs/contract.md 3.1. */
export const MAX_AUTO_KEYWORDS = 10
/** 1.5 × the average CPT, kept as a fraction so the comparison stays in integers. */
const BID_BOUND = { numerator: 3, denominator: 2 } as const

/** The highest bid, in whole micros, that stays within 1.5 × the average CPT. */
export const maxAutoBid = (avgCptMicros: number): number => Math.floor((avgCptMicros * BID_BOUND.numerator) / BID_BOUND.denominator)

/** Where `apply` records the id of payload keyword `index` (absent when that row failed). */
export const keywordIdKey = (index: number): string => `keywordId:${index}`

const decode = decodeBody(declaration.body)

const summary = (p: Payload) =>
  `Add ${plural(p.keywords.length, "keyword")} to ad group "${p.adGroupName}" of campaign "${p.campaignName}": ${
    listed(p.keywords.map((k) => `${quoted(k)}${k.bidMicros === null ? "" : ` at ${money(k.bidMicros, p.currency)}`}`))
  }`

/** Checks that hold at proposal and again at apply: the ad group exists, and bids fit its campaign's strategy. */
const entities = (view: WarehouseView, adGroupId: string, keywords: ReadonlyArray<{ readonly bidMicros: number | null }>) =>
  Effect.gen(function*() {
    const adGroup = yield* found(yield* view.adGroup(adGroupId), `no ad group ${adGroupId} in this account`)
    const campaign = yield* found(yield* view.campaign(adGroup.campaignId), `no campaign ${adGroup.campaignId} in this account`)
    const bids = keywords.filter((k) => k.bidMicros !== null).length
    if (campaign.bidStrategy === "MAX_CONVERSIONS" && bids > 0) {
      return yield* new BidStrategyConflict({
        message: `campaign ${campaign.campaignId} bids with MAX_CONVERSIONS, so its keywords take no bid; ` +
          `${plural(bids, "keyword")} of the request set bidMicros`
      })
    }
    return { adGroup, campaign }
  })

const createStep = (p: Payload): Step =>
  bulkStep("create keywords", { _tag: "CreateKeywords", campaignId: p.campaignId, adGroupId: p.adGroupId, rows: p.keywords, idKey: keywordIdKey })

export const AddKeywords = defineKind<Payload>({
  kind: "add_keywords",
  declaration,
  reviewTier: "review",
  rule: `at most ${MAX_AUTO_KEYWORDS} keywords, all EXACT, each bid (its own, else the ad group's default bid) at most ` +
    "1.5 × the account's 30-day average cost per tap",
  composite: false,
  payload: AddKeywordsPayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const keywords = request.keywords.map((k) => ({ text: k.text, matchType: k.matchType, bidMicros: k.bidMicros ?? null }))
      const { adGroup, campaign } = yield* entities(view, request.adGroupId, keywords)
      const [existing, negatives] = yield* Effect.all([
        view.keywordsOf(adGroup.adGroupId),
        view.negativesOf(campaign.campaignId, adGroup.adGroupId)
      ])
      const there = new Set(existing.map((k) => keywordKey(k.text, k.matchType)))
      const total = existing.length + negatives.length + keywords.length
      yield* requireNone([
        ...duplicatesIn(keywords),
        ...keywords.filter((k) => there.has(keywordKey(k.text, k.matchType)))
          .map((k) => `${quoted(k)} is already in ad group "${adGroup.name}"`),
        ...(total > MAX_KEYWORDS_PER_AD_GROUP
          ? [
            `ad group "${adGroup.name}" would hold ${total} keywords and negative keywords (it holds ${
              existing.length + negatives.length
            }); the platform allows at most ${MAX_KEYWORDS_PER_AD_GROUP}`
          ]
          : [])
      ])
      const payload: Payload = {
        campaignId: campaign.campaignId,
        campaignName: campaign.name,
        adGroupId: adGroup.adGroupId,
        adGroupName: adGroup.name,
        currency: view.account.currency,
        defaultBidMicros: adGroup.defaultBidMicros,
        keywords
      }
      return { payload, summary: summary(payload) }
    }),
  // Only the entity checks run again: keywords already there at apply are this action's own from an
  // interrupted run, which the step takes rather than refuses.
  recheck: (p, view) => Effect.asVoid(entities(view, p.adGroupId, p.keywords)),
  autoApply: (p, facts) =>
    Effect.gen(function*() {
      const held: Array<string> = []
      if (p.keywords.length > MAX_AUTO_KEYWORDS) {
        held.push(`${p.keywords.length} keywords is more than the ${MAX_AUTO_KEYWORDS} that auto-apply`)
      }
      const broad = p.keywords.filter((k) => k.matchType !== "EXACT")
      if (broad.length > 0) {
        held.push(`only EXACT keywords auto-apply, and ${listed(broad.map(quoted))} ${broad.length === 1 ? "is" : "are"} not`)
      }
      const avg = yield* facts.accountAvgCpt30d
      if (avg === null) {
        held.push("the account has no taps in the last 30 days, so there is no average cost per tap to bound the bids")
        return holds(held.join("; "))
      }
      const limit = maxAutoBid(avg)
      const bound = `1.5 × the account's 30-day average cost per tap ${money(avg, p.currency)} = ${money(limit, p.currency)}`
      const over = p.keywords
        .map((k) => ({ keyword: k, bid: k.bidMicros ?? p.defaultBidMicros }))
        .filter(({ bid }) => bid * BID_BOUND.denominator > avg * BID_BOUND.numerator)
      if (over.length > 0) {
        held.push(`${listed(over.map(({ bid, keyword }) => `the bid of ${quoted(keyword)} (${money(bid, p.currency)})`))} ${
          over.length === 1 ? "is" : "are"
        } above ${bound}`)
      }
      return held.length > 0
        ? holds(held.join("; "))
        : clears(`${plural(p.keywords.length, "EXACT keyword")} (at most ${MAX_AUTO_KEYWORDS}), each bid at most ${bound}`)
    }),
  steps: (p) => [createStep(p)],
  // Nothing recorded at proposal can be overwritten by creating keywords: a keyword someone else added
  // with the same text meanwhile is taken as is.
  drift: () => Effect.succeed(null),
  inverse: (p, ids) => {
    const created = p.keywords.flatMap((k, index) => {
      const keywordId = ids[keywordIdKey(index)]
      return typeof keywordId === "string"
        ? [{
          keywordId,
          adGroupId: p.adGroupId,
          campaignId: p.campaignId,
          text: k.text,
          matchType: k.matchType,
          status: "ACTIVE" as const,
          bidMicros: k.bidMicros
        }]
        : []
    })
    const payload: RemoveKeywordsPayload = { priorKeywords: created }
    return {
      kind: "remove_keywords",
      payload,
      summary: `Revert: remove the ${plural(created.length, "keyword")} added to ad group "${p.adGroupName}": ${
        listed(created.map(quoted))
      }`
    }
  }
})
