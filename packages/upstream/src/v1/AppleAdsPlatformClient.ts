/**
 * The Apple Ads Platform API v1 adapter of the `Upstream` port, a peer of the v5 AppleSearchAdsClient:
 * same OAuth client-credentials flow and retry policy (UpstreamHttp), `X-AP-Context: adAccountId=…`,
 * discovery through `/acls`, flat resources read with `POST /{r}/query` (offset paging), partial `PUT`,
 * keyword bulk calls with `allowPartialSuccess` mapped to the same per-row results as v5, deletes one
 * by one (v1 has no bulk delete yet), reports from `/reports/apps/{level}/query`.
 */
import { NotFound, UpstreamError } from "@acs/domain/Errors"
import { Effect, Ref, Schema } from "effect"
import type { AppleCredentials } from "../ClientSecret.ts"
import { reportPageOf } from "../ReportDecoding.ts"
import type {
  BulkResult,
  FindCondition,
  HourlyCampaignMetrics,
  KeywordChange,
  NewKeyword,
  NewNegativeKeyword,
  PlacedNewKeyword,
  PlacedNewNegativeKeyword,
  ReportRequest,
  ReportRow,
  UpstreamChange,
  UpstreamClient,
  UpstreamFailure
} from "../Upstream.ts"
import { type Call, defaultRetryPolicy, type Endpoints, makeUpstreamHttp, type RetryPolicy } from "../UpstreamHttp.ts"
import { money } from "../WireMapping.ts"
import {
  accountFromV1,
  adFromV1,
  adGroupChangeToV1,
  adGroupFromV1,
  campaignChangeToV1,
  campaignFromV1,
  filterFromCondition,
  keywordFromV1,
  negativeFromV1,
  newAdGroupToV1,
  newCampaignToV1,
  v1KeywordStatus
} from "./WireV1Mapping.ts"
import {
  V1Acl,
  V1Ad,
  V1AdGroup,
  V1Array,
  V1BulkItem,
  V1Campaign,
  V1ChangeDetail,
  V1ChangeSummary,
  V1Envelope,
  type V1Error,
  type V1Filter,
  V1Keyword,
  V1NegativeKeyword
} from "./WireV1.ts"

const PAGE = 1000
/** Items per bulk call (as v5). */
export const V1_BULK_LIMIT = 1000
/** The largest report page v1 serves. */
export const V1_REPORT_PAGE = 5000
/**
 * Campaign ids per `campaignId IN [...]` filter of a campaign-level report. Apple publishes no cap (the
 * Filter reference: "the server enforces the operator-specific cardinality"); 100 keeps each request small
 * and an account of up to 100 campaigns (nearly all) to one report call. See docs/decisions/upstream.md.
 */
export const V1_REPORT_CAMPAIGN_CHUNK = 100

export interface AppleAdsPlatformOptions {
  /** Campaign ids per IN filter of a campaign-level report (tests make it small to exercise chunking). */
  readonly reportCampaignChunk?: number
}

const reportPaths: Record<ReportRequest["level"], string> = {
  campaigns: "/reports/apps/campaigns/query",
  adGroups: "/reports/apps/adgroups/query",
  keywords: "/reports/apps/keywords/query",
  searchTerms: "/reports/apps/searchterms/query",
  ads: "/reports/apps/ads/query"
}

/** A report as the v1 client asks for it: the port's request, or by hour. */
type V1ReportAsk = Omit<ReportRequest, "granularity"> & { readonly granularity: ReportRequest["granularity"] | "HOURLY" }

// An hourly period's date: "2026-11-28 13:00" (or with seconds, or an ISO "T"), read as its day and hour.
const HOUR_DATE = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}):\d{2}(?::\d{2})?/

/** A campaign-level hourly report's rows as one entry per campaign and hour; an UpstreamError on an unreadable date. */
export const hourlyFromRows = (rows: ReadonlyArray<ReportRow>): Effect.Effect<Array<HourlyCampaignMetrics>, UpstreamError> => {
  const hours: Array<HourlyCampaignMetrics> = []
  for (const row of rows) {
    for (const period of row.periods) {
      const match = HOUR_DATE.exec(period.date)
      if (match === null) {
        return Effect.fail(new UpstreamError({ message: `the upstream hourly report answered a period dated ${JSON.stringify(period.date)}, not an hour` }))
      }
      hours.push({
        campaignId: row.campaignId,
        hour: `${match[1]!}T${match[2]!}`,
        impressions: period.impressions,
        taps: period.taps,
        installs: period.installs,
        spendMicros: period.spendMicros
      })
    }
  }
  return Effect.succeed(hours)
}

/** Which metadata field names the row's own entity when the report answers with a bare `id`. */
const idFieldOf: Record<ReportRequest["level"], string | null> = {
  campaigns: "campaignId",
  adGroups: "adGroupId",
  keywords: "keywordId",
  searchTerms: null,
  ads: "adId"
}

type Json = Readonly<Record<string, unknown>>
const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * A row's metadata in v5's names, in at most one copy per row (a keyword report has 100,000 rows): a bare `id` as
 * the level's own id field; a keyword row's `text` as `keyword`; a search-term row's nested `keyword` object
 * (`{id, text, matchType, …}`) and `adGroup` summary (`{id, …}`) as `keywordId`, `keyword`, `matchType` and
 * `adGroupId` (a Search Match row, with no keyword, keeps its own `matchType`).
 */
const metadataAsV5 = (meta: Json, level: ReportRequest["level"]): Json => {
  if (level === "searchTerms") {
    const keyword = meta["keyword"]
    const adGroup = meta["adGroup"]
    if (!isObject(keyword) && !isObject(adGroup)) return meta
    return {
      ...meta,
      ...(isObject(adGroup) && meta["adGroupId"] === undefined ? { adGroupId: adGroup["id"] } : {}),
      ...(isObject(keyword) ? { keywordId: keyword["id"], keyword: keyword["text"], matchType: keyword["matchType"] ?? null } : {})
    }
  }
  const idField = idFieldOf[level]
  const id = idField !== null && meta[idField] === undefined ? meta["id"] : undefined
  const text = level === "keywords" && meta["keyword"] === undefined ? meta["text"] : undefined
  if (id === undefined && text === undefined) return meta
  return { ...meta, ...(id !== undefined ? { [idField!]: id } : {}), ...(text !== undefined ? { keyword: text } : {}) }
}

/**
 * A v1 report answer in the v5 layout, so one decoder (ReportDecoding) checks both: `rows` →
 * `row`, `totalMetrics` → `total`, `granularMetrics` → `granularity`, and a bare metadata `id` named.
 */
export const v1ReportAsV5 = (body: unknown, level: ReportRequest["level"]): unknown => {
  const result = isObject(body) ? body["result"] : undefined
  const rows = isObject(result) && Array.isArray(result["rows"]) ? result["rows"] : null
  if (rows === null) return { data: null }
  const pagination = isObject(body) ? body["pagination"] : undefined
  return {
    data: {
      reportingDataResponse: {
        row: rows.map((row: unknown) => {
          if (!isObject(row)) return row
          return {
            metadata: metadataAsV5(isObject(row["metadata"]) ? row["metadata"] : {}, level),
            total: row["totalMetrics"],
            granularity: row["granularMetrics"] ?? []
          }
        })
      }
    },
    pagination: isObject(pagination) && typeof pagination["totalCount"] === "number" ? { totalResults: pagination["totalCount"] } : null
  }
}

const errorText = (error: V1Error | null | undefined): string => {
  if (error === null || error === undefined) return "failed"
  const first = error.details?.[0] ?? error.errors?.[0]
  const code = error.code ?? (first !== undefined && "messageCode" in first ? first.messageCode : first?.code) ?? "ERROR"
  const detail = first?.message !== undefined && first.message !== error.message ? ` (${first.message})` : ""
  return `${code}: ${error.message ?? first?.message ?? "failed"}${detail}`
}

export const makeAppleAdsPlatformClient = (
  endpoints: Endpoints,
  credentials: AppleCredentials,
  policy: RetryPolicy = defaultRetryPolicy,
  options: AppleAdsPlatformOptions = {}
) =>
  Effect.gen(function*() {
    const campaignChunk = Math.max(1, options.reportCampaignChunk ?? V1_REPORT_CAMPAIGN_CHUNK)
    const http = yield* makeUpstreamHttp(endpoints, credentials, policy, "adAccountId")
    yield* http.checkCredentials
    const currencies = yield* Ref.make(new Map<string, string>())

    /** Runs a call and decodes its envelope (`result` and the rest); an unreadable answer is a 502 `upstream_error`. */
    const result = <A, I>(call: Call, schema: Schema.Schema<A, I>) => http.decodedThen(call, V1Envelope(schema), (envelope) => Effect.succeed(envelope))

    /** Runs a call and goes on with its `result`, which must be there (`http.decodedThen`). */
    const savedThen = <A, I, B, E>(call: Call, schema: Schema.Schema<A, I>, then: (value: A) => Effect.Effect<B, E>) =>
      http.decodedThen(call, V1Envelope(schema), ({ result: value }): Effect.Effect<B, E | UpstreamError> =>
        value === null
          ? Effect.fail(new UpstreamError({ message: `${call.method} ${call.path} answered without a result` }))
          : then(value))

    const saved = <A, I>(call: Call, schema: Schema.Schema<A, I>) => savedThen(call, schema, (value) => Effect.succeed(value))

    const read = (path: string, account?: string): Call => ({ method: "GET", path, write: false, ...(account !== undefined ? { orgId: account } : {}) })
    const write = (method: Call["method"], path: string, account: string, body?: unknown): Call => ({
      method,
      path,
      orgId: account,
      write: true,
      ...(body !== undefined ? { body } : {})
    })

    const accounts = result(read("/acls"), V1Array(V1Acl)).pipe(
      Effect.map(({ result: list }) => (list ?? []).map(accountFromV1)),
      Effect.tap((list) => Ref.set(currencies, new Map(list.map((a) => [a.upstreamAccountId, a.currency]))))
    )

    const currencyIn = (known: ReadonlyMap<string, string>, account: string) => {
      const currency = known.get(account)
      return currency !== undefined
        ? Effect.succeed(currency)
        : Effect.fail(new UpstreamError({ message: `ad account ${account} is not visible to these credentials` }))
    }

    /** The account's currency; the accounts are listed again when it is not known yet. */
    const currencyOf = (account: string) =>
      Effect.flatMap(Ref.get(currencies), (known) =>
        known.has(account)
          ? currencyIn(known, account)
          : accounts.pipe(Effect.zipRight(Ref.get(currencies)), Effect.flatMap((listed) => currencyIn(listed, account))))

    /** Every page of `POST /{resource}/query` (a short page ends it; `totalCount` is not relied on). */
    const queryAll = <A, I>(resource: string, account: string, filters: ReadonlyArray<V1Filter>, schema: Schema.Schema<A, I>) =>
      Effect.gen(function*() {
        const out: Array<A> = []
        for (let offset = 0;; offset += PAGE) {
          const page = yield* result({
            method: "POST",
            path: `/${resource}/query`,
            orgId: account,
            write: false,
            body: { filters, sorting: [{ field: "id", order: "ASC" }], pagination: { offset, pageSize: PAGE } }
          }, V1Array(schema))
          const rows = page.result ?? []
          out.push(...rows)
          if (rows.length < PAGE) return out
        }
      })

    const eq = (field: string, value: string): V1Filter => ({ field, operator: "EQUALS", value })

    /** One entity by id, checked to belong where the port's caller says it does, as the port's `B`. */
    const one = <A, I, B>(
      resource: string,
      id: string,
      account: string,
      schema: Schema.Schema<A, I>,
      belongs: (a: A) => boolean,
      as: (a: A) => B
    ) =>
      savedThen(read(`/${resource}/${id}`, account), schema, (value) =>
        belongs(value) ? Effect.succeed(as(value)) : Effect.fail(new NotFound({ message: `not found upstream: /${resource}/${id}` })))

    /**
     * A bulk call in chunks of V1_BULK_LIMIT, always with `allowPartialSuccess` (acs reports the rows
     * that failed as warnings, as with v5). `correlationId` is the row's index in the port's call.
     */
    const bulk = <A, I, B>(
      path: string,
      account: string,
      rows: ReadonlyArray<unknown>,
      schema: Schema.Schema<A, I>,
      map: (a: A) => B
    ): Effect.Effect<BulkResult<B>, UpstreamFailure> =>
      Effect.gen(function*() {
        const succeeded: Array<{ readonly index: number; readonly value: B }> = []
        const failed: Array<{ readonly index: number; readonly message: string }> = []
        for (let start = 0; start < rows.length; start += V1_BULK_LIMIT) {
          const chunk = rows.slice(start, start + V1_BULK_LIMIT)
          const answer = yield* saved(
            write("POST", path, account, { allowPartialSuccess: true, items: chunk.map((data, i) => ({ correlationId: start + i, data })) }),
            V1Array(V1BulkItem(schema))
          )
          answer.forEach((item, i) => {
            const index = typeof item.correlationId === "number" ? item.correlationId : Number(item.correlationId)
            const at = Number.isInteger(index) ? index : start + i
            if (item.success && item.result !== undefined && item.result !== null) succeeded.push({ index: at, value: map(item.result) })
            else failed.push({ index: at, message: errorText(item.error) })
          })
        }
        return { succeeded, failed }
      })

    /** No bulk delete in v1 yet: one DELETE per id; a refused row is a failed row, an outage fails the call. */
    const deleteEach = (resource: string, account: string, ids: ReadonlyArray<string>): Effect.Effect<BulkResult<string>, UpstreamFailure> =>
      Effect.forEach(ids, (id, index) =>
        http.run(write("DELETE", `/${resource}/${id}`, account)).pipe(
          Effect.as({ index, ok: true as const, id }),
          Effect.catchTags({
            NotFound: (error) => Effect.succeed({ index, ok: false as const, message: `ENTITY_NOT_FOUND: ${error.message}` }),
            UpstreamError: (error) => Effect.succeed({ index, ok: false as const, message: error.message })
          })
        )).pipe(Effect.map((outcomes) => ({
          succeeded: outcomes.flatMap((o) => o.ok ? [{ index: o.index, value: o.id }] : []),
          failed: outcomes.flatMap((o) => o.ok ? [] : [{ index: o.index, message: o.message }])
        })))

    // v1's bulk create names each row's place, so one call may span ad groups (and campaigns).
    const createKeywordsAcross = (account: string, keywords: ReadonlyArray<PlacedNewKeyword>) =>
      currencyOf(account).pipe(Effect.flatMap((currency) =>
        bulk(
          "/keywords/bulk-create",
          account,
          keywords.map((k) => ({
            adGroupId: Number(k.adGroupId),
            text: k.text,
            matchType: k.matchType,
            status: v1KeywordStatus(k.status ?? "ACTIVE"),
            ...(k.bidMicros !== null ? { bid: money(k.bidMicros, currency) } : {})
          })),
          V1Keyword,
          keywordFromV1
        )
      ))

    const createNegativesAcross = (account: string, keywords: ReadonlyArray<PlacedNewNegativeKeyword>) =>
      bulk(
        "/negative-keywords/bulk-create",
        account,
        keywords.map((k) => ({
          campaignId: Number(k.campaignId),
          ...(k.adGroupId !== null ? { adGroupId: Number(k.adGroupId) } : {}),
          text: k.text,
          matchType: k.matchType
        })),
        V1NegativeKeyword,
        negativeFromV1
      )

    const live = <A extends { readonly deleted: boolean }>(rows: ReadonlyArray<A>) => rows.filter((row) => !row.deleted)

    /** One page of a v1 report with its campaign filter, as a page of the port's report. */
    const reportPage = (account: string, request: V1ReportAsk, campaignFilter: V1Filter, offset: number, limit: number) =>
      http.run({
        method: "POST",
        path: reportPaths[request.level],
        orgId: account,
        write: false,
        body: {
          timeRange: { start: request.startDate, end: request.endDate, timeZone: "ORTZ", granularity: request.granularity },
          filters: [campaignFilter],
          pagination: { offset, pageSize: limit }
        }
      }).pipe(Effect.flatMap(({ body }) => reportPageOf(v1ReportAsV5(body, request.level), { ...request, offset, limit })))

    /**
     * A campaign-level report of the whole account. Apple requires a campaignId filter on every apps report,
     * so the account's campaign ids (deleted ones too: they keep their metrics, and v5's account-wide report
     * lists them) are named in `campaignId IN [...]` chunks of `campaignChunk`. A campaign-level report has
     * at most one row per campaign, so each chunk is read whole, the chunks concatenated in id order (the
     * order v5 lists campaigns in), and the page asked for cut from them: rows, paging and totals as v5's.
     */
    const campaignsReport = (account: string, request: V1ReportAsk) =>
      Effect.gen(function*() {
        const campaigns = yield* queryAll("campaigns", account, [{ field: "deleted", operator: "IN", value: [true, false] }], CampaignId)
        const ids = campaigns.map((c) => String(c.id))
        const rows: Array<ReportRow> = []
        for (let start = 0; start < ids.length; start += campaignChunk) {
          const filter: V1Filter = { field: "campaignId", operator: "IN", value: ids.slice(start, start + campaignChunk) }
          for (let offset = 0;; offset += V1_REPORT_PAGE) {
            const page = yield* reportPage(account, request, filter, offset, V1_REPORT_PAGE)
            rows.push(...page.rows)
            if (page.rows.length < V1_REPORT_PAGE) break
          }
        }
        return { rows: rows.slice(request.offset, request.offset + request.limit), offset: request.offset, limit: request.limit, totalResults: rows.length }
      })

    const client: UpstreamClient = {
      clientId: credentials.clientId,
      accounts,
      campaigns: (account) =>
        queryAll("campaigns", account, [], V1Campaign).pipe(Effect.map((rows) => live(rows).map(campaignFromV1))),
      campaign: (account, c) => one("campaigns", c, account, V1Campaign, () => true, campaignFromV1),
      findCampaigns: (account, conditions: ReadonlyArray<FindCondition>) =>
        queryAll("campaigns", account, conditions.map(filterFromCondition), V1Campaign).pipe(
          Effect.map((rows) => live(rows).map(campaignFromV1))
        ),
      adGroups: (account, c) =>
        queryAll("adgroups", account, [eq("campaignId", c)], V1AdGroup).pipe(Effect.map((rows) => live(rows).map(adGroupFromV1))),
      adGroup: (account, c, a) => one("adgroups", a, account, V1AdGroup, (g) => String(g.campaignId) === c, adGroupFromV1),
      findAdGroups: (account, c, conditions) =>
        queryAll("adgroups", account, [eq("campaignId", c), ...conditions.map(filterFromCondition)], V1AdGroup).pipe(
          Effect.map((rows) => live(rows).map(adGroupFromV1))
        ),
      keywords: (account, c, a) =>
        queryAll("keywords", account, [eq("campaignId", c), eq("adGroupId", a)], V1Keyword).pipe(
          Effect.map((rows) => live(rows).map(keywordFromV1))
        ),
      campaignKeywords: (account, c) =>
        queryAll("keywords", account, [eq("campaignId", c)], V1Keyword).pipe(Effect.map((rows) => live(rows).map(keywordFromV1))),
      negativeKeywords: (account, c) =>
        queryAll("negative-keywords", account, [eq("campaignId", c)], V1NegativeKeyword).pipe(
          Effect.map((rows) => live(rows).map(negativeFromV1))
        ),
      ads: (account, c, a) =>
        queryAll("ads", account, [eq("campaignId", c), eq("adGroupId", a)], V1Ad).pipe(Effect.map((rows) => live(rows).map(adFromV1))),
      report: (account, request) =>
        request.campaignId !== undefined
          ? reportPage(account, request, eq("campaignId", request.campaignId), request.offset, request.limit)
          : campaignsReport(account, request),
      hourlyCampaignMetrics: (account, range) =>
        campaignsReport(account, {
          level: "campaigns",
          startDate: range.startDate,
          endDate: range.endDate,
          granularity: "HOURLY",
          offset: 0,
          limit: Number.MAX_SAFE_INTEGER
        }).pipe(Effect.flatMap((page) => hourlyFromRows(page.rows))),

      createCampaign: (account, campaign) =>
        currencyOf(account).pipe(
          Effect.flatMap((currency) => saved(write("POST", "/campaigns", account, newCampaignToV1(campaign, currency)), V1Campaign)),
          Effect.map(campaignFromV1)
        ),
      updateCampaign: (account, c, change) =>
        Effect.flatMap(currencyOf(account), (currency) =>
          savedThen(
            write("PUT", `/campaigns/${c}`, account, campaignChangeToV1(change, currency)),
            V1Campaign,
            (saved) => Effect.succeed(campaignFromV1(saved))
          )),
      deleteCampaign: (account, c) => http.run(write("DELETE", `/campaigns/${c}`, account)).pipe(Effect.asVoid),
      createAdGroup: (account, c, adGroup) =>
        currencyOf(account).pipe(
          Effect.flatMap((currency) => saved(write("POST", "/adgroups", account, newAdGroupToV1(adGroup, c, currency)), V1AdGroup)),
          Effect.map(adGroupFromV1)
        ),
      updateAdGroup: (account, c, a, change) =>
        client.adGroup(account, c, a).pipe(
          Effect.zipRight(currencyOf(account)),
          Effect.flatMap((currency) => saved(write("PUT", `/adgroups/${a}`, account, adGroupChangeToV1(change, currency)), V1AdGroup)),
          Effect.map(adGroupFromV1)
        ),
      deleteAdGroup: (account, c, a) =>
        client.adGroup(account, c, a).pipe(Effect.zipRight(http.run(write("DELETE", `/adgroups/${a}`, account))), Effect.asVoid),
      createKeywords: (account, c, a, keywords: ReadonlyArray<NewKeyword>) =>
        createKeywordsAcross(account, keywords.map((k) => ({ ...k, campaignId: c, adGroupId: a }))),
      createKeywordsAcross: (account, keywords) => createKeywordsAcross(account, keywords),
      updateKeywords: (account, _c, a, changes: ReadonlyArray<KeywordChange>) =>
        currencyOf(account).pipe(Effect.flatMap((currency) =>
          bulk(
            "/keywords/bulk-update",
            account,
            changes.map((k) => ({
              id: Number(k.keywordId),
              adGroupId: Number(a),
              ...(k.status !== undefined ? { status: v1KeywordStatus(k.status) } : {}),
              ...(k.bidMicros !== undefined ? { bid: k.bidMicros === null ? null : money(k.bidMicros, currency) } : {})
            })),
            V1Keyword,
            keywordFromV1
          )
        )),
      deleteKeywords: (account, _c, _a, ids) => deleteEach("keywords", account, ids),
      createNegativeKeywords: (account, c, a, keywords: ReadonlyArray<NewNegativeKeyword>) =>
        createNegativesAcross(account, keywords.map((k) => ({ ...k, campaignId: c, adGroupId: a }))),
      createNegativeKeywordsAcross: (account, keywords) => createNegativesAcross(account, keywords),
      deleteNegativeKeywords: (account, _c, _a, ids) => deleteEach("negative-keywords", account, ids),
      updateAd: (account, _c, _a, adId, change) => saved(write("PUT", `/ads/${adId}`, account, change), V1Ad).pipe(Effect.map(adFromV1)),

      changeHistory: (account, sinceIso) =>
        Effect.gen(function*() {
          const out: Array<UpstreamChange> = []
          for (let offset = 0;; offset += PAGE) {
            const { body } = yield* http.run({
              method: "POST",
              path: "/change-history/query",
              orgId: account,
              write: false,
              body: {
                filters: [{ field: "eventTime", operator: "GREATER_THAN", value: sinceIso }],
                // Per-entity detailIds only come in `metas`, and only with a metadata option.
                options: { metadata: "latest" },
                pagination: { offset, pageSize: PAGE }
              }
            })
            const page = yield* Schema.decodeUnknown(ChangePage)(body).pipe(Effect.mapError((error) =>
              new UpstreamError({ message: `the change history answered in an unexpected shape: ${error.message.slice(0, 300)}` })
            ))
            for (const row of page.result) {
              for (const meta of row.metas ?? []) {
                const detailId = meta["detailId"]
                if (typeof detailId !== "string") continue
                out.push({
                  detailId,
                  transactionId: row.transactionId,
                  eventTime: row.eventTime,
                  userType: row.userType,
                  modifiedBy: row.modifiedBy,
                  eventType: row.eventType,
                  entityType: row.entityType,
                  entityId: String(meta[row.entityType] ?? detailId.split(".")[1] ?? "")
                })
              }
            }
            if (page.result.length < PAGE) return out
          }
        }),
      changeDetail: (account, detailId) =>
        saved(read(`/change-history/${encodeURIComponent(detailId)}`, account), V1ChangeDetail).pipe(Effect.map((d) => {
          const meta = d.entityMetaData ?? {}
          const idOf = (key: string) => meta[key] === undefined || meta[key] === null ? null : String(meta[key])
          return {
            detailId: d.detailId,
            transactionId: d.transactionId,
            eventTime: d.eventTime,
            userType: d.userType,
            modifiedBy: d.modifiedBy,
            eventType: d.eventType,
            entityType: d.entityType,
            entityId: d.entityId,
            campaignId: d.entityType === "Campaign" ? d.entityId : idOf("campaignId"),
            adGroupId: d.entityType === "AdGroup" ? d.entityId : idOf("adGroupId"),
            entityName: idOf("name") ?? idOf("text"),
            fields: d.details.flatMap((detail) => detail.changes)
          }
        })),

      searchApps: (query, limit) =>
        firstAccount.pipe(
          Effect.flatMap((account) =>
            result({ ...read("/search/apps", account), query: { query, returnOwnedApps: "false", limit: String(limit) } }, V1Array(AppRow))
          ),
          Effect.map(({ result: apps }) => (apps ?? []).map((app) => ({ ...app, adamId: String(app.adamId) })))
        ),
      searchGeo: (query, countryCode) =>
        firstAccount.pipe(
          Effect.flatMap((account) =>
            result(
              { ...read("/search/geo", account), query: { query, entity: "Locality", ...(countryCode !== null ? { countrycode: countryCode } : {}) } },
              V1Array(GeoRow)
            )
          ),
          Effect.map(({ result: rows }) => rows ?? [])
        )
    }

    /** Any ad account the credentials reach, for the calls that are not about one (app and geo search). */
    const firstAccount: Effect.Effect<string, UpstreamFailure> = Ref.get(currencies).pipe(
      Effect.flatMap((known) => known.size > 0 ? Effect.succeed(known) : accounts.pipe(Effect.zipRight(Ref.get(currencies)))),
      Effect.flatMap((known) => {
        const first = known.keys().next()
        return first.done === true
          ? Effect.fail(new UpstreamError({ message: "no ad account is visible to these credentials" }))
          : Effect.succeed(first.value)
      })
    )
    return client
  }).pipe(Effect.withSpan("Upstream.connect.v1"))

const ChangePage = Schema.Struct({ result: Schema.Array(V1ChangeSummary) })

/** Only the id of a campaign: what a campaign-level report's filter needs. */
const CampaignId = Schema.Struct({ id: Schema.Int })

const AppRow = Schema.Struct({
  adamId: Schema.Int,
  appName: Schema.String,
  developerName: Schema.String,
  countryOrRegionCodes: Schema.Array(Schema.String)
})
const GeoRow = Schema.Struct({ id: Schema.String, entity: Schema.String, displayName: Schema.String })
