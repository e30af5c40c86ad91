/**
 * The Apple Ads Platform API v1 face of the simulator, over the same model and state as v5: `/v1/acls`,
 * `/v1/me`, the flat resources (`query`, get, partial `PUT`, delete, create), keyword and negative
 * bulk-create/bulk-update with `allowPartialSuccess` and per-item results, reports and the change
 * history. Writes delegate to the v5 handlers (one set of platform rules), through the change-history
 * recorder, and answer in the v1 encoding.
 */
import { Schema } from "effect"
import { V1Filter, V1Money, V1Query, V1ReportRequest, V1Status } from "../../v1/WireV1.ts"
import type { WireErrorItem } from "../../Wire.ts"
import { accountRoutes } from "../SimulatorAccountRoutes.ts"
import { campaignRoutes } from "../SimulatorCampaignRoutes.ts"
import { detailIdOf } from "../SimulatorChangeHistory.ts"
import { type Answer, decodeInput, failure, invalid, JsonText, notFound, WireFailure } from "../SimulatorHttp.ts"
import { keywordRoutes } from "../SimulatorKeywordRoutes.ts"
import type { SimAccount, SimCampaign } from "../SimulatorModel.ts"
import { prepareReport, type ReportPathLevel } from "../SimulatorReports.ts"
import type { HttpMethod, OrgRequest, Route, UserRequest } from "../SimulatorRouter.ts"
import { RouteTable } from "../SimulatorRouteTable.ts"
import type { SimEntity, SimulatorState } from "../SimulatorState.ts"
import type { WireObject } from "../SimulatorWire.ts"
import { recordingWrite } from "../SimulatorWriteRecorder.ts"
import { V1_PREFIX, v1ErrorBody, v1Ok, v1Path } from "./SimulatorV1Http.ts"
import { recommendationRoutes } from "./SimulatorV1Recommendations.ts"
import { v1ReportBytes } from "./SimulatorV1ReportJson.ts"
import { aclToV1, entityToV1 } from "./SimulatorV1Wire.ts"

const V5_ROUTES = new RouteTable([...accountRoutes, ...campaignRoutes, ...keywordRoutes])
const MAX_PAGE = 1000
const MAX_REPORT_PAGE = 5000
const MAX_BULK_ITEMS = 1000

type Kind = SimEntity["kind"]

const RESOURCES: Readonly<Record<string, Kind>> = {
  campaigns: "CAMPAIGN",
  adgroups: "ADGROUP",
  keywords: "KEYWORD",
  "negative-keywords": "NEGATIVE_KEYWORD",
  ads: "AD"
}

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Calls the v5 handler for `path` (a concrete /api/v5 path) as the same caller, recording writes. */
const delegate = (request: OrgRequest, method: HttpMethod, path: string, body: unknown): Answer => {
  const full = `/api/v5${path}`
  const route = V5_ROUTES.find(method, full)
  if (route === undefined || route.scope !== "org") throw new Error(`no v5 route for ${method} ${full}`)
  const ids = (route.pattern.exec(full) ?? []).slice(1).map(Number)
  const inner: OrgRequest = { ...request, method, path: full, ids, body, failingRows: new Set(), failingRowMessage: "" }
  return route.write ? recordingWrite(inner, route.handle) : route.handle(inner)
}

/** The entity `id` of `kind` in the caller's account, or 404. */
const owned = (request: OrgRequest, kind: Kind, id: number): SimEntity => {
  const found = request.state.entity(id)
  const campaign = found === undefined ? undefined : request.state.campaignOf(found)
  if (found === undefined || found.kind !== kind || campaign?.orgId !== request.account.orgId) {
    throw failure(404, "NOT_FOUND", `${kind} ${id} not found`)
  }
  return found
}

const pathOf = (found: SimEntity): string => {
  switch (found.kind) {
    case "CAMPAIGN":
      return `/campaigns/${found.entity.id}`
    case "ADGROUP":
      return `/campaigns/${found.entity.campaignId}/adgroups/${found.entity.id}`
    case "KEYWORD":
      return `/campaigns/${found.entity.campaignId}/adgroups/${found.entity.adGroupId}/targetingkeywords`
    case "NEGATIVE_KEYWORD":
      return found.entity.adGroupId === null
        ? `/campaigns/${found.entity.campaignId}/negativekeywords`
        : `/campaigns/${found.entity.campaignId}/adgroups/${found.entity.adGroupId}/negativekeywords`
    case "AD":
      return `/campaigns/${found.entity.campaignId}/adgroups/${found.entity.adGroupId}/ads/${found.entity.id}`
  }
}

const fresh = (request: OrgRequest, kind: Kind, id: number): WireObject => entityToV1(request.account, owned(request, kind, id))

const idOfAnswer = (answer: Answer): number => {
  const data = isObject(answer.body) ? answer.body["data"] : undefined
  const row = Array.isArray(data) ? data[0] : data
  if (!isObject(row) || typeof row["id"] !== "number") throw new Error("the v5 handler answered without an id")
  return row["id"]
}

/** A single-row v5 bulk answer: its error items (empty when the row went through). */
const bulkErrors = (answer: Answer): ReadonlyArray<WireErrorItem> => {
  const error = isObject(answer.body) ? answer.body["error"] : undefined
  return isObject(error) && Array.isArray(error["errors"]) ? (error["errors"] as ReadonlyArray<WireErrorItem>) : []
}

/** A bulk row's refusal, thrown as the failure it is (a 400 naming the field without the row prefix). */
const throwRowErrors = (errors: ReadonlyArray<WireErrorItem>): void => {
  if (errors.length > 0) {
    throw new WireFailure(400, errors.map((e) => ({ ...e, field: (e.field ?? "").replace(/^\[\d+\]\.?/, "") || null })))
  }
}

// ---- query ----------------------------------------------------------------------------------------

/** Deletes cascade: unless deleted rows are asked for, a deleted parent hides its children too. */
const entitiesOf = (account: SimAccount, kind: Kind, onlyCampaign: number | null, withDeleted: boolean): Array<SimEntity> => {
  const out: Array<SimEntity> = []
  for (const campaign of account.campaigns) {
    if (onlyCampaign !== null && campaign.id !== onlyCampaign) continue
    if (kind === "CAMPAIGN") out.push({ kind, entity: campaign })
    if (campaign.deleted && !withDeleted) continue
    if (kind === "NEGATIVE_KEYWORD") for (const n of campaign.negatives) out.push({ kind, entity: n })
    for (const adGroup of campaign.adGroups) {
      if (adGroup.deleted && !withDeleted && kind !== "ADGROUP") continue
      if (kind === "ADGROUP") out.push({ kind, entity: adGroup })
      else if (kind === "KEYWORD") for (const k of adGroup.keywords) out.push({ kind, entity: k })
      else if (kind === "NEGATIVE_KEYWORD") for (const n of adGroup.negatives) out.push({ kind, entity: n })
      else if (kind === "AD") for (const a of adGroup.ads) out.push({ kind, entity: a })
    }
  }
  return out
}

const fieldValue = (object: WireObject, field: string): unknown =>
  field.split(".").reduce<unknown>((value, key) => (isObject(value) ? value[key] : undefined), object)

const asText = (value: unknown, ignoreCase: boolean): string => {
  const text = typeof value === "string" ? value : typeof value === "number" || typeof value === "boolean" ? String(value) : JSON.stringify(value ?? null)
  return ignoreCase ? text.toLowerCase() : text
}

const matches = (object: WireObject, filter: V1Filter): boolean => {
  const ignoreCase = filter.ignoreCase === true
  const actual = asText(fieldValue(object, filter.field), ignoreCase)
  const values = (Array.isArray(filter.value) ? filter.value : [filter.value]).map((v) => asText(v, ignoreCase))
  const first = values[0] ?? ""
  switch (filter.operator) {
    case "EQUALS":
      return actual === first
    case "NOT_EQUALS":
      return actual !== first
    case "IN":
      return values.includes(actual)
    case "CONTAINS":
      return actual.includes(first)
    case "STARTSWITH":
      return actual.startsWith(first)
    case "ENDSWITH":
      return actual.endsWith(first)
    case "LESS_THAN":
      return Number(actual) < Number(first)
    case "GREATER_THAN":
      return Number(actual) > Number(first)
  }
}

const QUERY_CACHE_SIZE = 16
/** Per simulator state (several simulators may share a process). */
const queryCaches = new WeakMap<SimulatorState, Map<string, ReadonlyArray<WireObject>>>()

const matchAndSort = (
  account: SimAccount,
  kind: Kind,
  filters: ReadonlyArray<V1Filter>,
  sorting: NonNullable<V1Query["sorting"]>
): ReadonlyArray<WireObject> => {
  // A campaign filter narrows the walk: a 100,000-keyword account is queried campaign by campaign.
  const byCampaign = filters.find((f) => (f.field === "campaignId" || (kind === "CAMPAIGN" && f.field === "id")) && f.operator === "EQUALS")
  const onlyCampaign = byCampaign === undefined ? null : Number(byCampaign.value)
  const showDeleted = filters.some((f) => f.field === "deleted")
  let rows = entitiesOf(account, kind, onlyCampaign, showDeleted)
    .map((found) => entityToV1(account, found))
    .filter((row) => (showDeleted || row["deleted"] !== true) && filters.every((f) => matches(row, f)))
  for (const sort of [...sorting].reverse()) {
    const direction = sort.order === "DESC" ? -1 : 1
    rows = [...rows].sort((a, b) => {
      const x = fieldValue(a, sort.field)
      const y = fieldValue(b, sort.field)
      const order = typeof x === "number" && typeof y === "number" ? x - y : asText(x, false).localeCompare(asText(y, false))
      return order * direction
    })
  }
  return rows
}

const query = (kind: Kind) => (request: OrgRequest): Answer => {
  const body = decodeInput(V1Query, request.body ?? {})
  const filters = body.filters ?? []
  const offset = body.pagination?.offset ?? 0
  const pageSize = body.pagination?.pageSize ?? 20
  if (offset < 0) throw invalid("offset must not be negative", "pagination.offset")
  if (pageSize < 1 || pageSize > MAX_PAGE) throw invalid(`pageSize must be between 1 and ${MAX_PAGE}`, "pagination.pageSize")
  // A client pages through one query with the same body: match and sort once per world version.
  const key = JSON.stringify([request.state.version, request.account.orgId, kind, filters, body.sorting ?? []])
  const queryCache = queryCaches.get(request.state) ?? new Map<string, ReadonlyArray<WireObject>>()
  queryCaches.set(request.state, queryCache)
  const cached = queryCache.get(key)
  const rows = cached ?? matchAndSort(request.account, kind, filters, body.sorting ?? [])
  if (cached === undefined) {
    if (queryCache.size >= QUERY_CACHE_SIZE) queryCache.delete(queryCache.keys().next().value ?? "")
    queryCache.set(key, rows)
  }
  const page = rows.slice(offset, offset + pageSize)
  return v1Ok(page, { offset, pageSize, ...(body.returnTotalCount === true ? { totalCount: rows.length } : {}) })
}

// ---- single-entity writes ---------------------------------------------------------------------------

const CampaignCreateV1 = Schema.Struct({
  name: Schema.String,
  promotedObjectId: Schema.Union(Schema.String, Schema.Int),
  targeting: Schema.Struct({ countryOrRegion: Schema.Struct({ include: Schema.Array(Schema.String) }) }),
  dailyBudget: Schema.Struct({ value: V1Money }),
  status: Schema.optional(V1Status),
  bidStrategy: Schema.optional(Schema.Struct({
    bidStrategyType: Schema.Literal("MANUAL_CPT", "MAX_CONVERSIONS"),
    bidStrategyGoal: Schema.optional(Schema.String),
    bid: Schema.optional(Schema.NullOr(V1Money))
  }))
})

const CampaignUpdateV1 = Schema.Struct({
  name: Schema.optional(Schema.String),
  status: Schema.optional(V1Status),
  targeting: Schema.optional(Schema.Struct({ countryOrRegion: Schema.Struct({ include: Schema.Array(Schema.String) }) })),
  dailyBudget: Schema.optional(Schema.Struct({ value: V1Money })),
  bidStrategy: Schema.optional(Schema.Struct({
    bidStrategyType: Schema.optional(Schema.Literal("MANUAL_CPT", "MAX_CONVERSIONS")),
    bidStrategyGoal: Schema.optional(Schema.String),
    bid: Schema.optional(Schema.NullOr(V1Money))
  })),
  promotedObjectId: Schema.optional(Schema.Unknown),
  billingEvent: Schema.optional(Schema.Unknown)
})

const AdGroupFieldsV1 = {
  name: Schema.optional(Schema.String),
  status: Schema.optional(V1Status),
  defaultBid: Schema.optional(V1Money),
  cpaGoal: Schema.optional(Schema.NullOr(V1Money)),
  automatedKeywordsOptIn: Schema.optional(Schema.Boolean),
  campaignId: Schema.optional(Schema.Int),
  pricingModel: Schema.optional(Schema.String)
}
const AdGroupUpdateV1 = Schema.Struct(AdGroupFieldsV1)
const AdGroupCreateV1 = Schema.Struct({ ...AdGroupFieldsV1, campaignId: Schema.Int, name: Schema.String, defaultBid: V1Money })

const KeywordDataV1 = Schema.Struct({
  id: Schema.optional(Schema.Int),
  adGroupId: Schema.optional(Schema.Int),
  campaignId: Schema.optional(Schema.Int),
  text: Schema.optional(Schema.String),
  matchType: Schema.optional(Schema.String),
  bid: Schema.optional(Schema.NullOr(V1Money)),
  status: Schema.optional(V1Status)
})
type KeywordDataV1 = typeof KeywordDataV1.Type

const AdCreateV1 = Schema.Struct({
  adGroupId: Schema.Int,
  creativeId: Schema.Int,
  name: Schema.String,
  status: Schema.optional(V1Status)
})
const AdUpdateV1 = Schema.Struct({ name: Schema.optional(Schema.String), status: Schema.optional(V1Status) })

const v5KeywordStatus = (status: "ENABLED" | "PAUSED" | undefined) =>
  status === undefined ? {} : { status: status === "ENABLED" ? "ACTIVE" : "PAUSED" }

const campaignChange = (change: typeof CampaignUpdateV1.Type) => {
  if (change.promotedObjectId !== undefined || change.billingEvent !== undefined) {
    throw invalid("promotedObjectId and billingEvent cannot change after create", change.promotedObjectId !== undefined ? "promotedObjectId" : "billingEvent")
  }
  return {
    ...(change.name !== undefined ? { name: change.name } : {}),
    ...(change.status !== undefined ? { status: change.status } : {}),
    ...(change.targeting !== undefined ? { countriesOrRegions: change.targeting.countryOrRegion.include } : {}),
    ...(change.dailyBudget !== undefined ? { dailyBudgetAmount: change.dailyBudget.value } : {}),
    ...(change.bidStrategy?.bidStrategyType !== undefined ? { biddingStrategy: change.bidStrategy.bidStrategyType } : {}),
    ...(change.bidStrategy !== undefined && "bid" in change.bidStrategy ? { targetCpa: change.bidStrategy.bid ?? null } : {})
  }
}

const adGroupChange = (change: typeof AdGroupUpdateV1.Type, found: SimEntity | null) => {
  if (found !== null && found.kind === "ADGROUP" && change.campaignId !== undefined && change.campaignId !== found.entity.campaignId) {
    throw invalid("campaignId cannot change after create", "campaignId")
  }
  return {
    ...(change.name !== undefined ? { name: change.name } : {}),
    ...(change.status !== undefined ? { status: change.status } : {}),
    ...(change.defaultBid !== undefined ? { defaultBidAmount: change.defaultBid } : {}),
    ...(change.cpaGoal !== undefined ? { cpaGoal: change.cpaGoal } : {}),
    ...(change.automatedKeywordsOptIn !== undefined ? { automatedKeywordsOptIn: change.automatedKeywordsOptIn } : {})
  }
}

/** One keyword or negative write (create when `data.id` is absent), through the v5 bulk handler. */
const keywordWrite = (request: OrgRequest, kind: "KEYWORD" | "NEGATIVE_KEYWORD", data: KeywordDataV1, create: boolean): WireObject => {
  if (create) {
    if (kind === "KEYWORD") {
      if (data.adGroupId === undefined) throw invalid("adGroupId is required", "adGroupId")
      const adGroup = owned(request, "ADGROUP", data.adGroupId)
      if (adGroup.kind !== "ADGROUP") throw notFound("AdGroup")
      const answer = delegate(request, "POST", `/campaigns/${adGroup.entity.campaignId}/adgroups/${adGroup.entity.id}/targetingkeywords/bulk`, [{
        text: data.text,
        matchType: data.matchType,
        ...v5KeywordStatus(data.status),
        ...(data.bid !== undefined ? { bidAmount: data.bid } : {})
      }])
      throwRowErrors(bulkErrors(answer))
      return fresh(request, kind, idOfAnswer(answer))
    }
    const owner = data.adGroupId !== undefined && data.adGroupId !== null
      ? owned(request, "ADGROUP", data.adGroupId)
      : data.campaignId !== undefined ? owned(request, "CAMPAIGN", data.campaignId) : null
    if (owner === null) throw invalid("campaignId or adGroupId is required", "campaignId")
    const base = owner.kind === "ADGROUP"
      ? `/campaigns/${owner.entity.campaignId}/adgroups/${owner.entity.id}/negativekeywords`
      : `/campaigns/${owner.entity.id}/negativekeywords`
    const answer = delegate(request, "POST", `${base}/bulk`, [{ text: data.text, matchType: data.matchType, ...v5KeywordStatus(data.status) }])
    throwRowErrors(bulkErrors(answer))
    return fresh(request, kind, idOfAnswer(answer))
  }
  if (data.id === undefined) throw invalid("id is required", "id")
  const found = owned(request, kind, data.id)
  const row = kind === "KEYWORD"
    ? {
      id: data.id,
      ...v5KeywordStatus(data.status),
      ...(data.bid !== undefined ? { bidAmount: data.bid } : {}),
      ...(data.text !== undefined ? { text: data.text } : {}),
      ...(data.matchType !== undefined ? { matchType: data.matchType } : {})
    }
    : {
      id: data.id,
      ...v5KeywordStatus(data.status),
      ...(data.text !== undefined ? { text: data.text } : {}),
      ...(data.matchType !== undefined ? { matchType: data.matchType } : {})
    }
  const answer = delegate(request, "PUT", `${pathOf(found)}/bulk`, [row])
  throwRowErrors(bulkErrors(answer))
  return fresh(request, kind, data.id)
}

const remove = (kind: Kind) => (request: OrgRequest): Answer => {
  const found = owned(request, kind, request.ids[0] ?? -1)
  if (found.entity.deleted) throw failure(404, "NOT_FOUND", `${kind} ${found.entity.id} not found`)
  if (found.kind === "KEYWORD" || found.kind === "NEGATIVE_KEYWORD") {
    throwRowErrors(bulkErrors(delegate(request, "POST", `${pathOf(found)}/delete/bulk`, [found.entity.id])))
  } else delegate(request, "DELETE", pathOf(found), null)
  return { status: 204, body: null }
}

const update = (kind: Kind) => (request: OrgRequest): Answer => {
  const id = request.ids[0] ?? -1
  const found = owned(request, kind, id)
  switch (kind) {
    case "CAMPAIGN":
      delegate(request, "PUT", pathOf(found), { campaign: campaignChange(decodeInput(CampaignUpdateV1, request.body)) })
      break
    case "ADGROUP":
      delegate(request, "PUT", pathOf(found), adGroupChange(decodeInput(AdGroupUpdateV1, request.body), found))
      break
    case "AD":
      delegate(request, "PUT", pathOf(found), decodeInput(AdUpdateV1, request.body))
      break
    case "KEYWORD":
    case "NEGATIVE_KEYWORD":
      keywordWrite(request, kind, { ...decodeInput(KeywordDataV1, request.body), id }, false)
  }
  return v1Ok(fresh(request, kind, id))
}

const create = (kind: Kind) => (request: OrgRequest): Answer => {
  switch (kind) {
    case "CAMPAIGN": {
      const body = decodeInput(CampaignCreateV1, request.body)
      const answer = delegate(request, "POST", "/campaigns", {
        name: body.name,
        adamId: Number(body.promotedObjectId),
        countriesOrRegions: body.targeting.countryOrRegion.include,
        dailyBudgetAmount: body.dailyBudget.value,
        ...(body.status !== undefined ? { status: body.status } : {}),
        ...(body.bidStrategy !== undefined
          ? { biddingStrategy: body.bidStrategy.bidStrategyType, targetCpa: body.bidStrategy.bid ?? null }
          : {})
      })
      return v1Ok(fresh(request, kind, idOfAnswer(answer)))
    }
    case "ADGROUP": {
      const body = decodeInput(AdGroupCreateV1, request.body)
      owned(request, "CAMPAIGN", body.campaignId)
      const answer = delegate(request, "POST", `/campaigns/${body.campaignId}/adgroups`, adGroupChange(body, null))
      return v1Ok(fresh(request, kind, idOfAnswer(answer)))
    }
    case "AD": {
      const body = decodeInput(AdCreateV1, request.body)
      const adGroup = owned(request, "ADGROUP", body.adGroupId)
      const answer = delegate(request, "POST", `${pathOf(adGroup)}/ads`, {
        creativeId: body.creativeId,
        name: body.name,
        ...(body.status !== undefined ? { status: body.status } : {})
      })
      return v1Ok(fresh(request, kind, idOfAnswer(answer)))
    }
    case "KEYWORD":
    case "NEGATIVE_KEYWORD":
      return v1Ok(keywordWrite(request, kind, decodeInput(KeywordDataV1, request.body), true))
  }
}

// ---- bulk ---------------------------------------------------------------------------------------------

const BulkRequest = Schema.Struct({
  allowPartialSuccess: Schema.optional(Schema.Boolean),
  items: Schema.Array(Schema.Struct({ correlationId: Schema.Union(Schema.Int, Schema.String), data: Schema.Unknown }))
})

/**
 * Per-item results in request order. Without `allowPartialSuccess` the batch is checked first (shape,
 * chosen-row faults) and refused whole on the first bad item; rule failures found while applying are
 * then the only way a non-partial batch half-applies (see docs/decisions/upstream.md).
 */
const bulk = (kind: "KEYWORD" | "NEGATIVE_KEYWORD", create: boolean) => (request: OrgRequest): Answer => {
  const body = decodeInput(BulkRequest, request.body)
  if (body.items.length === 0) throw invalid("items is empty", "items")
  if (body.items.length > MAX_BULK_ITEMS) throw invalid(`at most ${MAX_BULK_ITEMS} items per call`, "items")
  const partial = body.allowPartialSuccess === true
  const decoded = body.items.map((item, index) => ({ item, data: decodeInput(KeywordDataV1, item.data, `items.${index}.data`) }))
  if (!partial) {
    const faulted = body.items.findIndex((_, index) => request.failingRows.has(index))
    if (faulted >= 0) throw failure(400, "INVALID_INPUT", request.failingRowMessage, `items.${faulted}`)
  }
  const operation = create ? "CREATE" : "UPDATE"
  const result = decoded.map(({ data, item }, index) => {
    const failed = (errors: ReadonlyArray<WireErrorItem>) => ({
      correlationId: item.correlationId,
      operation,
      success: false,
      ...v1ErrorBody(errors)
    })
    if (request.failingRows.has(index)) {
      return failed([{ messageCode: "INTERNAL_ERROR", message: request.failingRowMessage, field: null }])
    }
    try {
      return { correlationId: item.correlationId, operation, success: true, result: keywordWrite(request, kind, data, create) }
    } catch (error) {
      if (!(error instanceof WireFailure)) throw error
      if (!partial) throw error
      return failed(error.errors)
    }
  })
  return v1Ok(result)
}

// ---- reports ----------------------------------------------------------------------------------------

const REPORT_LEVELS: Readonly<Record<string, ReportPathLevel>> = {
  campaigns: "campaigns",
  adgroups: "adgroups",
  keywords: "keywords",
  searchterms: "searchterms",
  ads: "ads"
}

/**
 * The campaigns a report's `campaignId` filter names, each checked to be the caller's. Apple requires the
 * filter on every apps report, campaign level included; `EQUALS` names one campaign, `IN` several (at
 * campaign level only: below it the simulator reports one campaign at a time).
 */
const reportCampaigns = (request: OrgRequest, level: ReportPathLevel, filters: ReadonlyArray<V1Filter>): ReadonlyArray<SimCampaign> => {
  const index = filters.findIndex((f) => f.field === "campaignId")
  const filter = filters[index]
  if (filter === undefined) throw invalid("every apps report requires a campaignId filter", "filters")
  if (filter.operator !== "EQUALS" && filter.operator !== "IN") {
    throw invalid("the campaignId filter takes EQUALS or IN", `filters[${index}].operator`)
  }
  const values = Array.isArray(filter.value) ? filter.value : [filter.value]
  const ids = values.map(Number)
  if (ids.length === 0 || ids.some((id) => !Number.isSafeInteger(id) || id <= 0)) {
    throw invalid("the campaignId filter names campaign ids", `filters[${index}].value`)
  }
  if (level !== "campaigns" && ids.length !== 1) throw invalid(`a ${level} report names one campaign`, `filters[${index}].value`)
  return ids.map((id) => {
    const found = owned(request, "CAMPAIGN", id)
    if (found.kind !== "CAMPAIGN") throw notFound(`CAMPAIGN ${id}`)
    return found.entity
  })
}

/**
 * Apple's rules for the search-term report on top of every apps report's: the ORTZ time zone only (UTC is not
 * supported; left out, the simulator's default is ORTZ), and no `options.includeRows` (no total rows to add).
 */
const searchTermRules = (body: V1ReportRequest): void => {
  if (body.timeRange.timeZone !== undefined && body.timeRange.timeZone !== "ORTZ") {
    throw invalid("search term reports require the ORTZ time zone", "timeRange.timeZone")
  }
  if (body.options?.includeRows !== undefined) {
    throw invalid("search term reports do not support includeRows", "options.includeRows")
  }
}

const report = (level: ReportPathLevel) => (request: OrgRequest): Answer => {
  const body = decodeInput(V1ReportRequest, request.body)
  const campaigns = reportCampaigns(request, level, body.filters ?? [])
  if (level === "searchterms") searchTermRules(body)
  const campaign = campaigns[0]!
  const offset = body.pagination?.offset ?? 0
  const pageSize = body.pagination?.pageSize ?? 1000
  if (pageSize < 1 || pageSize > MAX_REPORT_PAGE) throw invalid(`pageSize must be between 1 and ${MAX_REPORT_PAGE}`, "pagination.pageSize")
  const granularity = body.timeRange.granularity
  // v5's report engine checks pages of up to 1,000; a v1 page of up to 5,000 is the rows from `offset` on.
  const report = prepareReport(request.state, request.account, level, level === "campaigns" ? null : campaign, {
    startTime: body.timeRange.start,
    endTime: body.timeRange.end,
    timeZone: body.timeRange.timeZone === "UTC" ? "UTC" : "ORTZ",
    ...(granularity !== undefined ? { granularity } : {}),
    selector: {
      ...(level === "campaigns" ? { conditions: [{ field: "campaignId", operator: "IN", values: campaigns.map((c) => String(c.id)) }] } : {}),
      pagination: { offset, limit: Math.min(1000, pageSize) }
    },
    returnRowTotals: true,
    returnGrandTotals: false,
    returnRecordsWithNoMetrics: false
  })
  return { status: 200, body: new JsonText(v1ReportBytes(report, level, offset, pageSize)) }
}

// ---- change history -----------------------------------------------------------------------------------

const ChangeQuery = Schema.Struct({
  filters: Schema.optional(Schema.Array(V1Filter)),
  options: Schema.optional(Schema.Struct({ metadata: Schema.optional(Schema.Literal("none", "latest", "snapshot")) })),
  pagination: Schema.optional(Schema.Struct({ offset: Schema.Int, pageSize: Schema.Int }))
})

/** A field's values as Apple lists them: arrays as they are, anything else as a one-element array. */
const valuesOf = (value: unknown): ReadonlyArray<unknown> => value === undefined ? [] : Array.isArray(value) ? value : [value]

const changeQuery = (request: OrgRequest): Answer => {
  const body = decodeInput(ChangeQuery, request.body ?? {})
  const timeFilters = (body.filters ?? []).filter((f) => f.field === "eventTime")
  const bound = (operator: V1Filter["operator"]) => {
    const found = timeFilters.find((f) => f.operator === operator)
    return found === undefined ? null : String(found.value)
  }
  const metadata = body.options?.metadata ?? "none"
  const all = request.state.history.summaries(request.account.orgId, bound("GREATER_THAN"), bound("LESS_THAN"))
  const offset = body.pagination?.offset ?? 0
  const pageSize = body.pagination?.pageSize ?? 1000
  const rows = all.slice(offset, offset + pageSize).map(({ records, ...summary }) => ({
    ...summary,
    metas: metadata === "none" ? [] : records.map((record) => {
      const current = request.state.entity(record.entityId)
      return {
        [record.entityType]: String(record.entityId),
        detailId: detailIdOf(record),
        meta: metadata === "snapshot" || current === undefined ? record.snapshot : entityToV1(request.account, current)
      }
    })
  }))
  // Apple's AuditSummaryResponse names its row type next to the usual envelope.
  return { status: 200, body: { dataType: "AuditSummary", result: rows, pagination: { offset, pageSize, totalCount: all.length } } }
}

const changeDetail = (request: OrgRequest): Answer => {
  const detailId = decodeURIComponent(request.path.slice("/v1/change-history/".length))
  const record = request.state.history.detail(request.account.orgId, detailId)
  if (record === undefined) throw failure(404, "NOT_FOUND", `change ${detailId} not found`)
  const fields = [...new Set([...Object.keys(record.oldValues), ...Object.keys(record.newValues)])]
  return v1Ok({
    transactionId: record.transactionId,
    detailId,
    eventType: record.eventType,
    entityType: record.entityType,
    entityId: String(record.entityId),
    eventTime: record.eventTime,
    userType: record.actor.userType,
    modifiedBy: record.actor.modifiedBy,
    entityMetaData: {
      ...(typeof record.snapshot["name"] === "string" ? { name: record.snapshot["name"] } : {}),
      ...(typeof record.snapshot["text"] === "string" ? { text: record.snapshot["text"] } : {}),
      ...(record.campaignId !== null ? { campaignId: String(record.campaignId) } : {}),
      ...(record.adGroupId !== null ? { adGroupId: String(record.adGroupId) } : {})
    },
    details: [{
      transactionId: record.transactionId,
      changes: fields.map((field) => ({ field, oldValues: valuesOf(record.oldValues[field]), newValues: valuesOf(record.newValues[field]) }))
    }]
  })
}

const searchAnswer = (answer: Answer): Answer => {
  const data = isObject(answer.body) ? answer.body["data"] : null
  return v1Ok(data ?? [])
}

// ---- table ----------------------------------------------------------------------------------------------

const user = (method: HttpMethod, template: string, handle: (request: UserRequest) => Answer): Route => ({
  method,
  pattern: v1Path(template),
  template: `${V1_PREFIX}${template}`,
  scope: "user",
  handle
})
const read = (method: HttpMethod, pattern: string | RegExp, handle: (request: OrgRequest) => Answer): Route => ({
  method,
  pattern: typeof pattern === "string" ? v1Path(pattern) : pattern,
  template: typeof pattern === "string" ? `${V1_PREFIX}${pattern}` : null,
  scope: "org",
  write: false,
  handle
})
const write = (method: HttpMethod, template: string, handle: (request: OrgRequest) => Answer): Route => ({
  method,
  pattern: v1Path(template),
  template: `${V1_PREFIX}${template}`,
  scope: "org",
  write: true,
  handle
})

export const v1Routes: ReadonlyArray<Route> = [
  user("GET", "/acls", ({ state }) => v1Ok(state.accounts.map((account) => aclToV1(state.world, account)))),
  user("GET", "/me", ({ state }) => v1Ok({ userId: state.world.userId, orgId: state.world.parentOrgId })),
  ...Object.entries(RESOURCES).flatMap(([resource, kind]) => [
    read("POST", `/${resource}/query`, query(kind)),
    read("GET", `/${resource}/:id`, (request) => v1Ok(fresh(request, kind, request.ids[0] ?? -1))),
    write("PUT", `/${resource}/:id`, update(kind)),
    write("DELETE", `/${resource}/:id`, remove(kind)),
    write("POST", `/${resource}`, create(kind))
  ]),
  write("POST", "/keywords/bulk-create", bulk("KEYWORD", true)),
  write("POST", "/keywords/bulk-update", bulk("KEYWORD", false)),
  write("POST", "/negative-keywords/bulk-create", bulk("NEGATIVE_KEYWORD", true)),
  write("POST", "/negative-keywords/bulk-update", bulk("NEGATIVE_KEYWORD", false)),
  ...Object.entries(REPORT_LEVELS).map(([path, level]) => read("POST", `/reports/apps/${path}/query`, report(level))),
  read("POST", "/change-history/query", changeQuery),
  ...recommendationRoutes(delegate).map((r) => (r.write ? write : read)("POST", r.path, r.handle)),
  // App and geo search (unverified v1 paths: see docs/decisions/upstream.md), answered by the v5 handlers.
  read("GET", "/search/apps", (request) => searchAnswer(delegate(request, "GET", "/search/apps", null))),
  read("GET", "/search/geo", (request) => searchAnswer(delegate(request, "GET", "/search/geo", null))),
  read("GET", /^\/v1\/change-history\/[A-Za-z0-9._%-]{1,200}$/, changeDetail)
]
