/** keyword_bid_change: one new bid for keywords that may span ad groups and campaigns. Never auto-applies;
 * the payload keeps each keyword's prior bid, which the inverse restores. */
import { BidStrategyConflict } from "@acs/domain/Errors"
import { keywordBidChange as declaration } from "@acs/domain/ProposalKinds"
import { Effect, Schema } from "effect"
import { keywordEditsStep } from "./BulkParts.ts"
import { defineKind } from "./Kind.ts"
import type { WarehouseView } from "./WarehouseView.ts"
import { decodeBody, holds, money, noOp } from "./KindSupport.ts"
import { type KeywordEdits, keywordEditsDrift, knownKeywords, listed, plural } from "./KeywordSupport.ts"

const BidChange = Schema.Struct({
  keywordId: Schema.String,
  adGroupId: Schema.String,
  campaignId: Schema.String,
  text: Schema.String,
  /** null: the keyword had no bid of its own (the ad group's default applied). */
  priorBidMicros: Schema.NullOr(Schema.Int),
  newBidMicros: Schema.NullOr(Schema.Int)
})

export const KeywordBidChangePayload = Schema.Struct({ currency: Schema.String, keywords: Schema.Array(BidChange) })
type Payload = typeof KeywordBidChangePayload.Type

const decode = decodeBody(declaration.body)

const bid = (micros: number | null, currency: string) => (micros === null ? "the ad group's default bid" : money(micros, currency))

const summary = (p: Payload) =>
  `Change the bid of ${plural(p.keywords.length, "keyword")}: ${
    listed(p.keywords.map((k) => `"${k.text}" ${bid(k.priorBidMicros, p.currency)} → ${bid(k.newBidMicros, p.currency)}`))
  }`

const edits = (p: Payload): KeywordEdits<number | null> => ({
  name: "update keyword bids",
  field: "bid",
  read: (keyword) => keyword.bidMicros,
  show: (micros) => bid(micros, p.currency),
  change: (keywordId, target) => ({ keywordId, bidMicros: target }),
  edits: p.keywords.map((k) => ({ ...k, prior: k.priorBidMicros, target: k.newBidMicros }))
})

/** Keyword bids are refused on MAX_CONVERSIONS campaigns (the platform sets them itself). */
const requireManualBids = (view: WarehouseView, keywords: ReadonlyArray<{ readonly campaignId: string }>) =>
  Effect.gen(function*() {
    const campaignIds = [...new Set(keywords.map((k) => k.campaignId))]
    const campaigns = yield* Effect.forEach(campaignIds, (id) => view.campaign(id))
    const automatic = campaigns.flatMap((c) =>
      c !== undefined && c.bidStrategy === "MAX_CONVERSIONS" ? [`"${c.name}" (${c.campaignId})`] : []
    )
    if (automatic.length > 0) {
      return yield* new BidStrategyConflict({
        message: `keywords of MAX_CONVERSIONS campaigns take no bid: ${automatic.join(", ")}`
      })
    }
  })

export const KeywordBidChange = defineKind<Payload>({
  kind: "keyword_bid_change",
  declaration,
  reviewTier: "review",
  rule: "never: keyword bid changes always need review",
  composite: false,
  payload: KeywordBidChangePayload,
  prepare: (body, view) =>
    Effect.gen(function*() {
      const request = yield* decode(body)
      const keywords = yield* knownKeywords(view, request.keywordIds)
      yield* requireManualBids(view, keywords)
      const changing = keywords.filter((k) => k.bidMicros !== request.newBidMicros)
      const currency = view.account.currency
      if (changing.length === 0) {
        return yield* noOp(`${keywords.length === 1 ? "the keyword is" : `all ${keywords.length} keywords are`} already bid at ${
          money(request.newBidMicros, currency)
        }`)
      }
      // Keywords already at the bid are left out: nothing to apply, nothing to restore.
      const payload: Payload = {
        currency,
        keywords: changing.map((k) => ({
          keywordId: k.keywordId,
          adGroupId: k.adGroupId,
          campaignId: k.campaignId,
          text: k.text,
          priorBidMicros: k.bidMicros,
          newBidMicros: request.newBidMicros
        }))
      }
      return { payload, summary: summary(payload) }
    }),
  recheck: (p, view) =>
    Effect.gen(function*() {
      const keywords = yield* knownKeywords(view, p.keywords.map((k) => k.keywordId))
      yield* requireManualBids(view, p.keywords.filter((k) => k.newBidMicros !== null))
      const now = new Map(keywords.map((k) => [k.keywordId, k.bidMicros]))
      if (p.keywords.every((k) => now.get(k.keywordId) === k.newBidMicros)) {
        return yield* noOp("every keyword already has the bid this action sets")
      }
    }),
  autoApply: () => Effect.succeed(holds("keyword bid changes always need review")),
  steps: (p) => [keywordEditsStep(edits(p))],
  drift: (p, context) => keywordEditsDrift(edits(p))(context),
  inverse: (p) => {
    const payload: Payload = {
      ...p,
      keywords: p.keywords.map((k) => ({ ...k, priorBidMicros: k.newBidMicros, newBidMicros: k.priorBidMicros }))
    }
    return { kind: "keyword_bid_change", payload, summary: `Revert: ${summary(payload)}` }
  }
})
