/**
 * The Apple Search Ads Campaign Management API v5 wire format (Apple's v5 reference), as Effect Schemas. The
 * client decodes with them and the simulator encodes with them, so both sides speak one format.
 * Fields not used by acs are allowed through (the real API sends many more).
 */
import { Schema } from "effect"

export const WireMoney = Schema.Struct({ amount: Schema.String, currency: Schema.String })
export type WireMoney = typeof WireMoney.Type

export const WireStatus = Schema.Literal("ENABLED", "PAUSED")
export const WireKeywordStatus = Schema.Literal("ACTIVE", "PAUSED")
export const WireMatchType = Schema.Literal("EXACT", "BROAD")
export const WireBiddingStrategy = Schema.Literal("MANUAL_CPT", "MAX_CONVERSIONS")

export const WirePagination = Schema.Struct({
  totalResults: Schema.Int,
  startIndex: Schema.Int,
  itemsPerPage: Schema.Int
})

export const WireErrorItem = Schema.Struct({
  messageCode: Schema.String,
  message: Schema.String,
  field: Schema.optional(Schema.NullOr(Schema.String))
})
export type WireErrorItem = typeof WireErrorItem.Type

export const WireError = Schema.Struct({ errors: Schema.Array(WireErrorItem) })

const makeWireEnvelope = <A, I, R>(data: Schema.Schema<A, I, R>) =>
  Schema.Struct({
    data: Schema.NullOr(data),
    pagination: Schema.optional(Schema.NullOr(WirePagination)),
    error: Schema.optional(Schema.NullOr(WireError))
  })

const wireEnvelopes = new WeakMap<object, unknown>()

/**
 * Every answer: `{data, pagination, error}`. One envelope per data schema, so its decoder is compiled once
 * (Schema caches decoders by schema) rather than on every answer.
 */
export const WireEnvelope = <A, I, R>(data: Schema.Schema<A, I, R>): ReturnType<typeof makeWireEnvelope<A, I, R>> => {
  const known = wireEnvelopes.get(data)
  if (known !== undefined) return known as ReturnType<typeof makeWireEnvelope<A, I, R>>
  const made = makeWireEnvelope(data)
  wireEnvelopes.set(data, made)
  return made
}

export const WireAcl = Schema.Struct({
  orgId: Schema.Int,
  orgName: Schema.String,
  parentOrgId: Schema.optional(Schema.NullOr(Schema.Int)),
  currency: Schema.String,
  timeZone: Schema.String,
  paymentModel: Schema.optional(Schema.NullOr(Schema.String)),
  roleNames: Schema.Array(Schema.String),
  displayName: Schema.optional(Schema.NullOr(Schema.String))
})
export type WireAcl = typeof WireAcl.Type

export const WireMe = Schema.Struct({ userId: Schema.Int, parentOrgId: Schema.Int })

export const WireCampaign = Schema.Struct({
  id: Schema.Int,
  orgId: Schema.Int,
  name: Schema.String,
  adamId: Schema.Int,
  adChannelType: Schema.optional(Schema.String),
  billingEvent: Schema.optional(Schema.String),
  supplySources: Schema.optional(Schema.Array(Schema.String)),
  countriesOrRegions: Schema.Array(Schema.String),
  dailyBudgetAmount: Schema.NullOr(WireMoney),
  status: WireStatus,
  servingStatus: Schema.optional(Schema.String),
  displayStatus: Schema.optional(Schema.String),
  biddingStrategy: Schema.optional(Schema.NullOr(WireBiddingStrategy)),
  targetCpa: Schema.optional(Schema.NullOr(WireMoney)),
  deleted: Schema.Boolean
})
export type WireCampaign = typeof WireCampaign.Type

export const WireAdGroup = Schema.Struct({
  id: Schema.Int,
  campaignId: Schema.Int,
  orgId: Schema.optional(Schema.Int),
  name: Schema.String,
  status: WireStatus,
  pricingModel: Schema.optional(Schema.String),
  defaultBidAmount: WireMoney,
  cpaGoal: Schema.optional(Schema.NullOr(WireMoney)),
  automatedKeywordsOptIn: Schema.Boolean,
  automatedKeywordsRequired: Schema.optional(Schema.Boolean),
  deleted: Schema.Boolean
})
export type WireAdGroup = typeof WireAdGroup.Type

export const WireKeyword = Schema.Struct({
  id: Schema.Int,
  adGroupId: Schema.Int,
  campaignId: Schema.optional(Schema.Int),
  text: Schema.String,
  matchType: WireMatchType,
  status: WireKeywordStatus,
  bidAmount: Schema.optional(Schema.NullOr(WireMoney)),
  deleted: Schema.Boolean
})
export type WireKeyword = typeof WireKeyword.Type

export const WireNegativeKeyword = Schema.Struct({
  id: Schema.Int,
  campaignId: Schema.Int,
  adGroupId: Schema.optional(Schema.NullOr(Schema.Int)),
  text: Schema.String,
  matchType: WireMatchType,
  status: WireKeywordStatus,
  deleted: Schema.Boolean
})
export type WireNegativeKeyword = typeof WireNegativeKeyword.Type

export const WireAd = Schema.Struct({
  id: Schema.Int,
  campaignId: Schema.Int,
  adGroupId: Schema.Int,
  creativeId: Schema.Int,
  name: Schema.String,
  creativeType: Schema.String,
  status: WireStatus,
  deleted: Schema.Boolean
})
export type WireAd = typeof WireAd.Type

export const WireApp = Schema.Struct({
  adamId: Schema.Int,
  appName: Schema.String,
  developerName: Schema.String,
  countryOrRegionCodes: Schema.Array(Schema.String)
})

export const WireGeo = Schema.Struct({ id: Schema.String, entity: Schema.String, displayName: Schema.String })

/** `POST .../find` selector. */
export const WireSelector = Schema.Struct({
  conditions: Schema.optional(Schema.Array(Schema.Struct({
    field: Schema.String,
    operator: Schema.String,
    values: Schema.Array(Schema.String)
  }))),
  fields: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
  orderBy: Schema.optional(Schema.Array(Schema.Struct({ field: Schema.String, sortOrder: Schema.Literal("ASCENDING", "DESCENDING") }))),
  pagination: Schema.optional(Schema.Struct({ offset: Schema.Int, limit: Schema.Int }))
})
export type WireSelector = typeof WireSelector.Type

export const WireReportRequest = Schema.Struct({
  startTime: Schema.String,
  endTime: Schema.String,
  timeZone: Schema.optional(Schema.Literal("ORTZ", "UTC")),
  granularity: Schema.optional(Schema.Literal("DAILY", "WEEKLY", "MONTHLY")),
  selector: WireSelector,
  returnRowTotals: Schema.optional(Schema.Boolean),
  returnGrandTotals: Schema.optional(Schema.Boolean),
  returnRecordsWithNoMetrics: Schema.optional(Schema.Boolean)
})
export type WireReportRequest = typeof WireReportRequest.Type

/** v5 metric names; `tapInstalls` is what acs calls installs. */
export const WireMetrics = Schema.Struct({
  impressions: Schema.Int,
  taps: Schema.Int,
  ttr: Schema.optional(Schema.Number),
  localSpend: WireMoney,
  avgCPT: Schema.optional(WireMoney),
  avgCPM: Schema.optional(WireMoney),
  tapInstalls: Schema.Int,
  tapNewDownloads: Schema.optional(Schema.Int),
  tapRedownloads: Schema.optional(Schema.Int),
  tapInstallCPI: Schema.optional(WireMoney),
  tapInstallRate: Schema.optional(Schema.Number),
  totalInstalls: Schema.optional(Schema.Int)
})
export type WireMetrics = typeof WireMetrics.Type

export const WireGranularityEntry = Schema.extend(WireMetrics, Schema.Struct({ date: Schema.String }))

/** Report row metadata: the ids of the row's entity, by level. */
export const WireReportMetadata = Schema.Struct({
  campaignId: Schema.optional(Schema.Int),
  campaignName: Schema.optional(Schema.String),
  adGroupId: Schema.optional(Schema.NullOr(Schema.Int)),
  adGroupName: Schema.optional(Schema.String),
  keywordId: Schema.optional(Schema.NullOr(Schema.Int)),
  keyword: Schema.optional(Schema.NullOr(Schema.String)),
  matchType: Schema.optional(Schema.NullOr(Schema.String)),
  searchTermText: Schema.optional(Schema.NullOr(Schema.String)),
  searchTermSource: Schema.optional(Schema.NullOr(Schema.String)),
  adId: Schema.optional(Schema.NullOr(Schema.Int)),
  adName: Schema.optional(Schema.String)
})

export const WireReportRow = Schema.Struct({
  metadata: WireReportMetadata,
  total: Schema.optional(WireMetrics),
  granularity: Schema.optional(Schema.Array(WireGranularityEntry))
})
export type WireReportRow = typeof WireReportRow.Type

export const WireReport = Schema.Struct({
  reportingDataResponse: Schema.Struct({
    row: Schema.Array(WireReportRow),
    grandTotals: Schema.optional(Schema.NullOr(Schema.Struct({ total: WireMetrics })))
  })
})

export const WireToken = Schema.Struct({
  access_token: Schema.String,
  token_type: Schema.String,
  expires_in: Schema.Int
})
