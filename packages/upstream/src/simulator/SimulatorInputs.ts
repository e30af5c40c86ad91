/**
 * Request bodies the simulator accepts, as Schemas (the wire read shapes of Wire.ts carry ids and
 * server fields a request does not). Unknown properties are ignored, as the platform ignores them.
 */
import { Schema } from "effect"
import { WireBiddingStrategy, WireKeywordStatus, WireMatchType, WireMoney, WireStatus } from "../Wire.ts"

const Name = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
const KeywordText = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(80))
const Countries = Schema.Array(Schema.String.pipe(Schema.pattern(/^[A-Z]{2}$/))).pipe(Schema.minItems(1))

export const CampaignCreate = Schema.Struct({
  name: Name,
  adamId: Schema.Int,
  countriesOrRegions: Countries,
  dailyBudgetAmount: WireMoney,
  status: Schema.optional(WireStatus),
  biddingStrategy: Schema.optional(WireBiddingStrategy),
  targetCpa: Schema.optional(Schema.NullOr(WireMoney))
})

export const CampaignUpdate = Schema.Struct({
  name: Schema.optional(Name),
  status: Schema.optional(WireStatus),
  countriesOrRegions: Schema.optional(Countries),
  dailyBudgetAmount: Schema.optional(WireMoney),
  biddingStrategy: Schema.optional(WireBiddingStrategy),
  targetCpa: Schema.optional(Schema.NullOr(WireMoney))
})

export const AdGroupCreate = Schema.Struct({
  name: Name,
  defaultBidAmount: WireMoney,
  cpaGoal: Schema.optional(Schema.NullOr(WireMoney)),
  automatedKeywordsOptIn: Schema.optional(Schema.Boolean),
  status: Schema.optional(WireStatus),
  pricingModel: Schema.optional(Schema.Literal("CPC"))
})

export const AdGroupUpdate = Schema.Struct({
  name: Schema.optional(Name),
  defaultBidAmount: Schema.optional(WireMoney),
  cpaGoal: Schema.optional(Schema.NullOr(WireMoney)),
  automatedKeywordsOptIn: Schema.optional(Schema.Boolean),
  status: Schema.optional(WireStatus)
})

export const KeywordCreate = Schema.Struct({
  text: KeywordText,
  matchType: WireMatchType,
  bidAmount: Schema.optional(Schema.NullOr(WireMoney)),
  status: Schema.optional(WireKeywordStatus)
})

/** text and matchType may be echoed back unchanged; changing them is refused per row. */
export const KeywordUpdate = Schema.Struct({
  id: Schema.Int,
  status: Schema.optional(WireKeywordStatus),
  bidAmount: Schema.optional(Schema.NullOr(WireMoney)),
  text: Schema.optional(Schema.String),
  matchType: Schema.optional(Schema.String)
})

export const NegativeCreate = Schema.Struct({
  text: KeywordText,
  matchType: WireMatchType,
  status: Schema.optional(WireKeywordStatus)
})

export const NegativeUpdate = Schema.Struct({
  id: Schema.Int,
  status: Schema.optional(WireKeywordStatus),
  text: Schema.optional(Schema.String),
  matchType: Schema.optional(Schema.String)
})

export const AdCreate = Schema.Struct({
  creativeId: Schema.Int,
  name: Name,
  status: Schema.optional(WireStatus),
  creativeType: Schema.optional(Schema.Literal("CUSTOM_PRODUCT_PAGE", "DEFAULT_PRODUCT_PAGE"))
})

export const AdUpdate = Schema.Struct({
  name: Schema.optional(Name),
  status: Schema.optional(WireStatus)
})

/** Bulk delete bodies: the ids to delete. */
export const IdList = Schema.Array(Schema.Int)
