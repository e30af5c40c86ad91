/** Full-row reports from the upstream and research queries (`POST /accounts/{projectId}/reports`, `POST /research/*`). */
import { Schema } from "effect"
import { DataFreshness } from "./Accounts.ts"
import { CalendarDate } from "./Dates.ts"
import { Metrics } from "./Warehouse.ts"

export const ReportLevel = Schema.Literal("campaigns", "adGroups", "keywords", "searchTerms")
export type ReportLevel = typeof ReportLevel.Type

export const ReportRequest = Schema.Struct({
  level: ReportLevel.annotations({ description: "Row level" }),
  startDate: CalendarDate,
  endDate: CalendarDate,
  granularity: Schema.Literal("DAILY", "WEEKLY", "MONTHLY").annotations({ description: "Period of each row's `periods`" }),
  campaignId: Schema.optional(Schema.String.pipe(Schema.pattern(/^\d{1,20}$/, { message: () => "must be a campaign id" }))
    .annotations({ description: "Required for every level but campaigns" })),
  offset: Schema.optional(Schema.Int.pipe(Schema.nonNegative()).annotations({ description: "Rows to skip" })),
  limit: Schema.optional(Schema.Int.annotations({ description: "default 50, clamped to 1–1000" }))
}).annotations({ identifier: "ReportRequest" })
export type ReportRequest = typeof ReportRequest.Type

const RawMetrics = Schema.Struct({
  impressions: Schema.Int,
  taps: Schema.Int,
  installs: Schema.Int,
  spendMicros: Schema.Int
})

export const ReportRow = Schema.Struct({
  campaignId: Schema.String,
  adGroupId: Schema.NullOr(Schema.String),
  keywordId: Schema.NullOr(Schema.String),
  searchTerm: Schema.NullOr(Schema.String).annotations({ description: "search-term rows: null when the platform hides the term" }),
  matchType: Schema.NullOr(Schema.String),
  total: Metrics,
  periods: Schema.Array(Schema.Struct({ date: Schema.String, ...RawMetrics.fields }))
}).annotations({ identifier: "ReportRow" })
export type ReportRow = typeof ReportRow.Type

export const Report = Schema.Struct({
  rows: Schema.Array(ReportRow),
  grandTotals: Metrics.annotations({ description: "Over every row of the report, not only this page" }),
  pagination: Schema.Struct({ offset: Schema.Int, limit: Schema.Int, totalResults: Schema.Int })
}).annotations({ identifier: "Report" })
export type Report = typeof Report.Type

const Query = Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" }), Schema.maxLength(200))

export const AppSearchRequest = Schema.Struct({
  query: Query.annotations({ description: "App name or developer" }),
  limit: Schema.optional(Schema.Int.annotations({ description: "default 50, clamped to 1–1000" }))
}).annotations({ identifier: "AppSearchRequest" })

export const AppSearch = Schema.Struct({
  apps: Schema.Array(Schema.Struct({
    adamId: Schema.String,
    appName: Schema.String,
    developerName: Schema.String,
    countryOrRegionCodes: Schema.Array(Schema.String)
  }))
}).annotations({ identifier: "AppSearch" })

export const GeoSearchRequest = Schema.Struct({
  query: Query.annotations({ description: "Place name" }),
  countryCode: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z]{2}$/, {
    message: () => "must be an ISO 3166-1 alpha-2 code such as US"
  })).annotations({ description: "Only this country (ISO 3166-1 alpha-2)" }))
}).annotations({ identifier: "GeoSearchRequest" })

export const GeoSearch = Schema.Struct({
  geo: Schema.Array(Schema.Struct({ id: Schema.String, entity: Schema.String, displayName: Schema.String }))
}).annotations({ identifier: "GeoSearch" })

export const KeywordIdeasRequest = Schema.Struct({
  projectId: Schema.String.pipe(Schema.minLength(1)).annotations({ description: "The account to mine, or `current`" }),
  seeds: Schema.Array(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(80))).pipe(
    Schema.minItems(1, { message: () => "give at least one seed" }),
    Schema.maxItems(50)
  ).annotations({ description: "Words the ideas must contain" }),
  days: Schema.optional(Schema.Int.pipe(Schema.between(1, 90, { message: () => "days must be an integer from 1 to 90" }))
    .annotations({ description: "Search-term window in days (default 30)" })),
  limit: Schema.optional(Schema.Int.annotations({ description: "default 50, clamped to 1–1000" }))
}).annotations({ identifier: "KeywordIdeasRequest" })

export const KeywordIdea = Schema.Struct({
  text: Schema.String,
  adGroups: Schema.Int.annotations({ description: "How many ad groups the term was searched in" }),
  ...Metrics.fields
}).annotations({ identifier: "KeywordIdea" })

export const KeywordIdeas = Schema.Struct({
  ideas: Schema.Array(KeywordIdea),
  total: Schema.Int,
  truncated: Schema.Boolean,
  dataFreshness: DataFreshness
}).annotations({ identifier: "KeywordIdeas" })
