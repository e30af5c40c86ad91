/**
 * The Apple Ads Platform API v1 wire format (Apple's reference pages; where they are
 * silent or unclear: docs/decisions/upstream.md), as Effect Schemas. The v1 client decodes with them and the simulator's v1
 * routes encode with them, so both sides speak one format. Unknown fields pass through.
 */
import { Schema } from "effect"

export const V1Money = Schema.Struct({ amount: Schema.String, currency: Schema.String })
export type V1Money = typeof V1Money.Type

export const V1Status = Schema.Literal("ENABLED", "PAUSED")
export const V1MatchType = Schema.Literal("EXACT", "BROAD")
export const V1BidStrategyType = Schema.Literal("MANUAL_CPT", "MAX_CONVERSIONS")

/** `totalCount` only when the query asked for it. */
export const V1Pagination = Schema.Struct({
  offset: Schema.Int,
  pageSize: Schema.Int,
  totalCount: Schema.optional(Schema.NullOr(Schema.Int))
})

export const V1ErrorDetail = Schema.Struct({
  code: Schema.optional(Schema.String),
  message: Schema.optional(Schema.String),
  field: Schema.optional(Schema.NullOr(Schema.String))
})

/** `{code, message, details[]}`; one published example has `{errors: [...]}` instead: both parse. */
export const V1Error = Schema.Struct({
  code: Schema.optional(Schema.String),
  message: Schema.optional(Schema.String),
  details: Schema.optional(Schema.NullOr(Schema.Array(V1ErrorDetail))),
  errors: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({
    messageCode: Schema.optional(Schema.String),
    code: Schema.optional(Schema.String),
    message: Schema.optional(Schema.String),
    field: Schema.optional(Schema.NullOr(Schema.String))
  }))))
})
export type V1Error = typeof V1Error.Type

export const V1ErrorBody = Schema.Struct({ error: V1Error })

const makeV1Envelope = <A, I, R>(result: Schema.Schema<A, I, R>) =>
  Schema.Struct({
    result: Schema.NullOr(result),
    pagination: Schema.optional(Schema.NullOr(V1Pagination)),
    error: Schema.optional(Schema.NullOr(V1Error))
  })

/**
 * `make(schema)`, made once per schema: a schema built per call compiles its decoder per call (Schema caches
 * decoders by schema), once per answer or page.
 */
const onePerSchema = <T>(make: (schema: Schema.Schema.Any) => T) => {
  const made = new WeakMap<object, T>()
  return (schema: Schema.Schema.Any): T => {
    let value = made.get(schema)
    if (value === undefined) {
      value = make(schema)
      made.set(schema, value)
    }
    return value
  }
}

const arrayOf = onePerSchema((item) => Schema.Array(item))
const envelopeOf = onePerSchema(makeV1Envelope)

/** `Schema.Array(item)`, one per item schema: a new array schema per call would miss the envelope's cache below. */
export const V1Array = <A, I, R>(item: Schema.Schema<A, I, R>) => arrayOf(item) as Schema.Array$<Schema.Schema<A, I, R>>

/** Every answer: `{result, pagination, error}`, one envelope per result schema. */
export const V1Envelope = <A, I, R>(result: Schema.Schema<A, I, R>) => envelopeOf(result) as ReturnType<typeof makeV1Envelope<A, I, R>>

export const V1Acl = Schema.Struct({
  adAccountId: Schema.Int,
  adAccountName: Schema.String,
  orgId: Schema.Int,
  orgName: Schema.optional(Schema.NullOr(Schema.String)),
  currency: Schema.String,
  timeZone: Schema.String,
  roles: Schema.Array(Schema.String)
})
export type V1Acl = typeof V1Acl.Type

export const V1Me = Schema.Struct({ userId: Schema.Int, orgId: Schema.Int })

export const V1Campaign = Schema.Struct({
  id: Schema.Int,
  adAccountId: Schema.Int,
  name: Schema.String,
  promotedObjectType: Schema.optional(Schema.String),
  promotedObjectId: Schema.String,
  billingEvent: Schema.optional(Schema.String),
  targeting: Schema.Struct({
    countryOrRegion: Schema.Struct({ include: Schema.Array(Schema.String) })
  }),
  dailyBudget: Schema.NullOr(Schema.Struct({ value: V1Money })),
  status: V1Status,
  bidStrategy: Schema.Struct({
    bidStrategyType: V1BidStrategyType,
    bidStrategyGoal: Schema.optional(Schema.String),
    bid: Schema.optional(Schema.NullOr(V1Money))
  }),
  deleted: Schema.Boolean
})
export type V1Campaign = typeof V1Campaign.Type

export const V1AdGroup = Schema.Struct({
  id: Schema.Int,
  adAccountId: Schema.Int,
  campaignId: Schema.Int,
  name: Schema.String,
  status: V1Status,
  pricingModel: Schema.optional(Schema.String),
  defaultBid: V1Money,
  cpaGoal: Schema.optional(Schema.NullOr(V1Money)),
  automatedKeywordsOptIn: Schema.Boolean,
  deleted: Schema.Boolean
})
export type V1AdGroup = typeof V1AdGroup.Type

export const V1Keyword = Schema.Struct({
  id: Schema.Int,
  adAccountId: Schema.optional(Schema.Int),
  campaignId: Schema.Int,
  adGroupId: Schema.Int,
  text: Schema.String,
  matchType: V1MatchType,
  bid: Schema.optional(Schema.NullOr(V1Money)),
  status: V1Status,
  deleted: Schema.Boolean
})
export type V1Keyword = typeof V1Keyword.Type

export const V1NegativeKeyword = Schema.Struct({
  id: Schema.Int,
  adAccountId: Schema.optional(Schema.Int),
  campaignId: Schema.Int,
  adGroupId: Schema.optional(Schema.NullOr(Schema.Int)),
  text: Schema.String,
  matchType: V1MatchType,
  status: V1Status,
  deleted: Schema.Boolean
})
export type V1NegativeKeyword = typeof V1NegativeKeyword.Type

export const V1Ad = Schema.Struct({
  id: Schema.Int,
  adAccountId: Schema.optional(Schema.Int),
  campaignId: Schema.Int,
  adGroupId: Schema.Int,
  name: Schema.String,
  creative: Schema.Struct({ id: Schema.Int, creativeType: Schema.String }),
  status: V1Status,
  deleted: Schema.Boolean
})
export type V1Ad = typeof V1Ad.Type

export const V1Filter = Schema.Struct({
  field: Schema.String,
  operator: Schema.Literal("EQUALS", "NOT_EQUALS", "IN", "CONTAINS", "STARTSWITH", "ENDSWITH", "LESS_THAN", "GREATER_THAN"),
  value: Schema.Union(Schema.String, Schema.Number, Schema.Boolean, Schema.Array(Schema.Union(Schema.String, Schema.Number, Schema.Boolean))),
  ignoreCase: Schema.optional(Schema.Boolean)
})
export type V1Filter = typeof V1Filter.Type

export const V1Query = Schema.Struct({
  filters: Schema.optional(Schema.Array(V1Filter)),
  sorting: Schema.optional(Schema.Array(Schema.Struct({ field: Schema.String, order: Schema.Literal("ASC", "DESC") }))),
  pagination: Schema.optional(Schema.Struct({ offset: Schema.Int, pageSize: Schema.Int })),
  returnTotalCount: Schema.optional(Schema.Boolean)
})
export type V1Query = typeof V1Query.Type

/** One item of a bulk answer, in request order; `operation` as Apple's examples show it. */
const makeV1BulkItem = <A, I, R>(result: Schema.Schema<A, I, R>) =>
  Schema.Struct({
    correlationId: Schema.Union(Schema.Int, Schema.String),
    operation: Schema.optional(Schema.String),
    success: Schema.Boolean,
    result: Schema.optional(Schema.NullOr(result)),
    error: Schema.optional(Schema.NullOr(V1Error))
  })

const bulkItemOf = onePerSchema(makeV1BulkItem)

/** A bulk answer's item, one per result schema (as `V1Envelope`). */
export const V1BulkItem = <A, I, R>(result: Schema.Schema<A, I, R>) => bulkItemOf(result) as ReturnType<typeof makeV1BulkItem<A, I, R>>

/** v1 report metric names (`cpt`/`cpm` instead of v5's `avgCPT`/`avgCPM`). */
export const V1Metrics = Schema.Struct({
  impressions: Schema.Int,
  taps: Schema.Int,
  tapInstalls: Schema.Int,
  localSpend: V1Money,
  cpt: Schema.optional(Schema.NullOr(V1Money)),
  cpm: Schema.optional(Schema.NullOr(V1Money)),
  ttr: Schema.optional(Schema.NullOr(Schema.Number))
})
export type V1Metrics = typeof V1Metrics.Type

export const V1ReportRow = Schema.Struct({
  metadata: Schema.Struct({
    campaignId: Schema.Int,
    adGroupId: Schema.optional(Schema.NullOr(Schema.Int)),
    keywordId: Schema.optional(Schema.NullOr(Schema.Int)),
    adId: Schema.optional(Schema.NullOr(Schema.Int)),
    searchTermText: Schema.optional(Schema.NullOr(Schema.String)),
    matchType: Schema.optional(Schema.NullOr(Schema.String))
  }),
  totalMetrics: V1Metrics,
  granularMetrics: Schema.optional(Schema.NullOr(Schema.Array(Schema.extend(V1Metrics, Schema.Struct({ date: Schema.String })))))
})
export type V1ReportRow = typeof V1ReportRow.Type

export const V1ReportResult = Schema.Struct({ rows: Schema.Array(V1ReportRow) })

export const V1ReportRequest = Schema.Struct({
  timeRange: Schema.Struct({
    start: Schema.String,
    end: Schema.String,
    timeZone: Schema.optional(Schema.String),
    granularity: Schema.optional(Schema.Literal("HOURLY", "DAILY", "WEEKLY", "MONTHLY"))
  }),
  filters: Schema.optional(Schema.Array(V1Filter)),
  pagination: Schema.optional(Schema.Struct({ offset: Schema.Int, pageSize: Schema.Int })),
  /** `includeRows`: extra total rows (e.g. `GRAND_TOTAL`); refused by the search-term report. */
  options: Schema.optional(Schema.Struct({ includeRows: Schema.optional(Schema.Array(Schema.String)) }))
})
export type V1ReportRequest = typeof V1ReportRequest.Type

/** One `AuditSummary` row of `POST /change-history/query`; `metas` only with `options.metadata`. */
export const V1ChangeSummary = Schema.Struct({
  transactionId: Schema.String,
  eventType: Schema.String,
  eventTime: Schema.String,
  entityType: Schema.String,
  count: Schema.Int,
  metas: Schema.optional(Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown }))),
  userType: Schema.Literal("CUSTOMER", "CUSTOMER_API", "APPLE_SUPPORT"),
  modifiedBy: Schema.String
})
export type V1ChangeSummary = typeof V1ChangeSummary.Type

/** `GET /change-history/{detailId}`: Apple's `ChangeDetails`, one entity in one transaction. */
export const V1ChangeDetail = Schema.Struct({
  transactionId: Schema.String,
  detailId: Schema.String,
  eventType: Schema.String,
  entityType: Schema.String,
  entityId: Schema.String,
  eventTime: Schema.String,
  userType: Schema.Literal("CUSTOMER", "CUSTOMER_API", "APPLE_SUPPORT"),
  modifiedBy: Schema.String,
  entityMetaData: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  details: Schema.Array(Schema.Struct({
    transactionId: Schema.optional(Schema.String),
    changes: Schema.Array(Schema.Struct({
      field: Schema.String,
      oldValues: Schema.Array(Schema.Unknown),
      newValues: Schema.Array(Schema.Unknown)
    }))
  }))
})
export type V1ChangeDetail = typeof V1ChangeDetail.Type
