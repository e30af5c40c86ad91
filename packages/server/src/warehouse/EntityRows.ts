/**
 * The entity tables' rows (`campaigns`, `ad_groups`, `keywords`, `negative_keywords`, `ads`), declared once for
 * their readers (actions/kinds/WarehouseView.ts, Reads.ts); their owner, SyncEntities.ts, writes them whole on
 * every sync. `search_terms`, whose copy SwapCopy.ts makes the account's, is declared here beside them.
 * The account's id is left out: every read names it. int8 columns are text (db/Database.ts).
 */
import { Schema } from "effect"
import { columnsOf, decodeRows } from "../db/Rows.ts"

const EntityStatus = Schema.Literal("ENABLED", "PAUSED")
const KeywordStatus = Schema.Literal("ACTIVE", "PAUSED")
const MatchType = Schema.Literal("EXACT", "BROAD")

export const CampaignRow = Schema.Struct({
  campaignId: Schema.String,
  name: Schema.String,
  adamId: Schema.String,
  countriesOrRegions: Schema.Array(Schema.String),
  dailyBudgetMicros: Schema.NullOr(Schema.String),
  status: EntityStatus,
  bidStrategy: Schema.Literal("MANUAL_CPT", "MAX_CONVERSIONS"),
  targetCpaMicros: Schema.NullOr(Schema.String)
})
export type CampaignRow = typeof CampaignRow.Type

export const AdGroupRow = Schema.Struct({
  adGroupId: Schema.String,
  campaignId: Schema.String,
  name: Schema.String,
  status: EntityStatus,
  defaultBidMicros: Schema.String,
  cpaGoalMicros: Schema.NullOr(Schema.String),
  searchMatch: Schema.Boolean
})
export type AdGroupRow = typeof AdGroupRow.Type

export const KeywordRow = Schema.Struct({
  keywordId: Schema.String,
  adGroupId: Schema.String,
  campaignId: Schema.String,
  text: Schema.String,
  matchType: MatchType,
  status: KeywordStatus,
  bidMicros: Schema.NullOr(Schema.String)
})
export type KeywordRow = typeof KeywordRow.Type

export const NegativeRow = Schema.Struct({
  negativeKeywordId: Schema.String,
  campaignId: Schema.String,
  adGroupId: Schema.NullOr(Schema.String),
  text: Schema.String,
  matchType: MatchType,
  status: KeywordStatus
})
export type NegativeRow = typeof NegativeRow.Type

export const AdRow = Schema.Struct({
  adId: Schema.String,
  adGroupId: Schema.String,
  campaignId: Schema.String,
  name: Schema.String,
  creativeType: Schema.String,
  status: EntityStatus
})
export type AdRow = typeof AdRow.Type

export const SearchTermRow = Schema.Struct({
  entityKey: Schema.String,
  campaignId: Schema.String,
  adGroupId: Schema.String,
  keywordId: Schema.NullOr(Schema.String),
  text: Schema.NullOr(Schema.String),
  keywordText: Schema.NullOr(Schema.String),
  matchType: Schema.NullOr(MatchType)
})
export type SearchTermRow = typeof SearchTermRow.Type

/** Each entity table's select list and decoder, derived from its row. */
export const entityRows = {
  campaigns: { columns: columnsOf(CampaignRow), decode: decodeRows(CampaignRow) },
  adGroups: { columns: columnsOf(AdGroupRow), decode: decodeRows(AdGroupRow) },
  keywords: { columns: columnsOf(KeywordRow), decode: decodeRows(KeywordRow) },
  negatives: { columns: columnsOf(NegativeRow), decode: decodeRows(NegativeRow) },
  ads: { columns: columnsOf(AdRow), decode: decodeRows(AdRow) },
  searchTerms: { columns: columnsOf(SearchTermRow), decode: decodeRows(SearchTermRow) }
} as const
