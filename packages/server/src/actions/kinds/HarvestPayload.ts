/** The payload of harvest_search_terms (HarvestSearchTerms.ts), shared with its steps (HarvestSteps.ts). */
import { Schema } from "effect"

export const Term = Schema.Struct({
  text: Schema.String,
  sourceCampaignId: Schema.String,
  sourceCampaignName: Schema.String,
  sourceAdGroupId: Schema.String,
  sourceAdGroupName: Schema.String,
  targetCampaignId: Schema.String,
  targetAdGroupId: Schema.String,
  targetAdGroupName: Schema.String,
  /** null: the target ad group's default bid applies. */
  bidMicros: Schema.NullOr(Schema.Int)
})
export type Term = typeof Term.Type

const Totals = Schema.Struct({ spendMicros: Schema.Int, taps: Schema.Int, installs: Schema.Int })

/** A source ad group's delivery before the harvest, and the part of it its negated terms carried. */
const Delivery = Schema.Struct({
  campaignId: Schema.String,
  adGroupId: Schema.String,
  adGroupName: Schema.String,
  total: Totals,
  removed: Totals,
  /** Percentages of `total`, two decimals. */
  removedPct: Schema.Struct({ spend: Schema.Number, taps: Schema.Number, installs: Schema.Number })
})

export const HarvestSearchTermsPayload = Schema.Struct({
  currency: Schema.String,
  negateAtSource: Schema.Boolean,
  terms: Schema.Array(Term),
  /** The source ad groups' delivery over the window (30 complete days ending the day before the proposal). */
  priorDelivery: Schema.Struct({ start: Schema.String, end: Schema.String, adGroups: Schema.Array(Delivery) })
})
export type HarvestPayload = typeof HarvestSearchTermsPayload.Type

/** Where `apply` records term `index`'s new keyword and new negative (absent when that half was not made). */
export const harvestKeywordIdKey = (index: number): string => `keywordId:${index}`
export const harvestNegativeIdKey = (index: number): string => `negativeKeywordId:${index}`
/** Every term with its index: the index names its halves in the result. */
export const placedTerms = (p: HarvestPayload) => p.terms.map((t, index) => ({ t, index }))

/** Harvests create EXACT keywords and EXACT negatives only. */
export const EXACT = "EXACT" as const

export const termText = (t: { readonly text: string }) => `"${t.text}"`
