/**
 * The Apple Search Ads Campaign Management API v5 adapter of the `Upstream` port. Lists page through
 * everything (limit 1000), bulk keyword calls report per-row outcomes, money is exact micros.
 */
import { UpstreamError } from "@acs/domain/Errors"
import { Effect, Ref, Schema } from "effect"
import type { AppleCredentials } from "./ClientSecret.ts"
import { reportPageOf } from "./ReportDecoding.ts"
import type {
  BulkResult,
  FindCondition,
  KeywordChange,
  NewKeyword,
  NewNegativeKeyword,
  ReportRequest,
  UpstreamClient
} from "./Upstream.ts"
import { type Call, defaultRetryPolicy, type Endpoints, makeUpstreamHttp, type RetryPolicy } from "./UpstreamHttp.ts"
import {
  WireAcl,
  WireAd,
  WireAdGroup,
  WireApp,
  WireCampaign,
  WireError,
  WireGeo,
  WireKeyword,
  WireNegativeKeyword
} from "./Wire.ts"
import {
  accountFromWire,
  adFromWire,
  adGroupChangeToWire,
  adGroupFromWire,
  campaignChangeToWire,
  campaignFromWire,
  keywordFromWire,
  money,
  negativeFromWire,
  newAdGroupToWire,
  newCampaignToWire
} from "./WireMapping.ts"

const PAGE = 1000
/** The platform's cap on rows per bulk call. */
export const BULK_LIMIT = 1000

const reportPaths: Record<ReportRequest["level"], (campaignId: string) => string> = {
  campaigns: () => "/reports/campaigns",
  adGroups: (c) => `/reports/campaigns/${c}/adgroups`,
  keywords: (c) => `/reports/campaigns/${c}/keywords`,
  searchTerms: (c) => `/reports/campaigns/${c}/searchterms`,
  ads: (c) => `/reports/campaigns/${c}/ads`
}

const BulkAnswer = <A, I>(row: Schema.Schema<A, I>) =>
  Schema.Struct({
    data: Schema.NullOr(Schema.Array(row)),
    error: Schema.optional(Schema.NullOr(WireError))
  })

/** The failing row's index, as the platform names it in `field` (e.g. "[3]" or "index: 3"). */
const rowIndexOf = (field: string | null | undefined): number | undefined => {
  const match = field ? /(\d+)/.exec(field) : null
  return match ? Number(match[1]) : undefined
}

export const makeAppleSearchAdsClient = (
  endpoints: Endpoints,
  credentials: AppleCredentials,
  policy: RetryPolicy = defaultRetryPolicy
) =>
  Effect.gen(function*() {
    const http = yield* makeUpstreamHttp(endpoints, credentials, policy)
    yield* http.checkCredentials
    const currencies = yield* Ref.make(new Map<string, string>())

    const read = (path: string, orgId?: string, query?: Record<string, string>): Call => ({
      method: "GET",
      path,
      write: false,
      ...(orgId !== undefined ? { orgId } : {}),
      ...(query !== undefined ? { query } : {})
    })
    const write = (method: Call["method"], path: string, orgId: string, body?: unknown): Call => ({
      method,
      path,
      orgId,
      write: true,
      ...(body !== undefined ? { body } : {})
    })

    const accounts = http.data(read("/acls"), Schema.Array(WireAcl)).pipe(
      Effect.map(({ data }) => (data ?? []).map(accountFromWire)),
      Effect.tap((list) => Ref.set(currencies, new Map(list.map((a) => [a.upstreamAccountId, a.currency]))))
    )

    const currencyOf = (orgId: string) =>
      Ref.get(currencies).pipe(
        Effect.flatMap((known) => known.has(orgId) ? Effect.succeed(known) : accounts.pipe(Effect.zipRight(Ref.get(currencies)))),
        Effect.flatMap((known) => {
          const currency = known.get(orgId)
          return currency !== undefined
            ? Effect.succeed(currency)
            : Effect.fail(new UpstreamError({ message: `account ${orgId} is not visible to these credentials` }))
        })
      )

    /**
     * An org for calls that are not about one account (app and geo search): the platform still wants
     * `X-AP-Context` on them, so any account the credentials reach will do.
     */
    const anyOrg = Ref.get(currencies).pipe(
      Effect.flatMap((known) => known.size > 0 ? Effect.succeed(known) : accounts.pipe(Effect.zipRight(Ref.get(currencies)))),
      Effect.flatMap((known) => {
        const first = known.keys().next()
        return first.done === true
          ? Effect.fail(new UpstreamError({ message: "no account is visible to these credentials" }))
          : Effect.succeed(first.value)
      })
    )

    /** Every page of a GET list. */
    const listAll = <A, I>(path: string, orgId: string, schema: Schema.Schema<A, I>) =>
      Effect.gen(function*() {
        const out: Array<A> = []
        for (let offset = 0;; offset += PAGE) {
          const page = yield* http.data(read(path, orgId, { limit: String(PAGE), offset: String(offset) }), Schema.Array(schema))
          out.push(...(page.data ?? []))
          const total = page.pagination?.totalResults ?? out.length
          if ((page.data ?? []).length === 0 || out.length >= total) return out
        }
      })

    /** Every page of a `POST .../find` selector. */
    const findAll = <A, I>(path: string, orgId: string, conditions: ReadonlyArray<FindCondition>, schema: Schema.Schema<A, I>) =>
      Effect.gen(function*() {
        const out: Array<A> = []
        for (let offset = 0;; offset += PAGE) {
          const page = yield* http.data({
            method: "POST",
            path,
            orgId,
            write: false,
            body: { conditions, pagination: { offset, limit: PAGE } }
          }, Schema.Array(schema))
          out.push(...(page.data ?? []))
          const total = page.pagination?.totalResults ?? out.length
          if ((page.data ?? []).length === 0 || out.length >= total) return out
        }
      })

    /** The entity a call answers (a read's, a write's saved one), as the port's `B`: decoded, checked and mapped in one step. */
    const entity = <A, I, B>(call: Call, schema: Schema.Schema<A, I>, as: (a: A) => B) =>
      http.dataThen(call, schema, ({ data }) =>
        data === null
          ? Effect.fail(new UpstreamError({ message: `${call.method} ${call.path} answered without data` }))
          : Effect.succeed(as(data)))

    const saved = <A, I>(call: Call, schema: Schema.Schema<A, I>) => entity(call, schema, (value) => value)

    /** A bulk call: 200 with `data` for the rows that worked and `error.errors` naming each failing row. */
    const bulk = <A, I, B>(call: Call, rows: number, schema: Schema.Schema<A, I>, map: (a: A) => B) =>
      http.run(call).pipe(
        Effect.flatMap(({ body }) =>
          Schema.decodeUnknown(BulkAnswer(schema))(body).pipe(
            Effect.mapError(() => new UpstreamError({ message: `${call.method} ${call.path} answered in an unexpected shape` }))
          )
        ),
        Effect.map((answer): BulkResult<B> => {
          const failed = (answer.error?.errors ?? []).map((e, i) => ({
            index: rowIndexOf(e.field) ?? i,
            message: `${e.messageCode}: ${e.message}`
          }))
          const failedIndexes = new Set(failed.map((f) => f.index))
          const okIndexes = Array.from({ length: rows }, (_, i) => i).filter((i) => !failedIndexes.has(i))
          const values = (answer.data ?? []).map(map)
          return {
            succeeded: values.map((value, i) => ({ index: okIndexes[i] ?? i, value })),
            failed
          }
        })
      )

    const keywordBase = (c: string, a: string) => `/campaigns/${c}/adgroups/${a}/targetingkeywords`
    const negativeBase = (c: string, a: string | null) =>
      a === null ? `/campaigns/${c}/negativekeywords` : `/campaigns/${c}/adgroups/${a}/negativekeywords`

    const client: UpstreamClient = {
      clientId: credentials.clientId,
      accounts,
      campaigns: (orgId) =>
        listAll("/campaigns", orgId, WireCampaign).pipe(Effect.map((rows) => rows.filter((c) => !c.deleted).map(campaignFromWire))),
      campaign: (orgId, c) => entity(read(`/campaigns/${c}`, orgId), WireCampaign, campaignFromWire),
      findCampaigns: (orgId, conditions) =>
        findAll("/campaigns/find", orgId, conditions, WireCampaign).pipe(
          Effect.map((rows) => rows.filter((c) => !c.deleted).map(campaignFromWire))
        ),
      adGroups: (orgId, c) =>
        listAll(`/campaigns/${c}/adgroups`, orgId, WireAdGroup).pipe(
          Effect.map((rows) => rows.filter((a) => !a.deleted).map(adGroupFromWire))
        ),
      adGroup: (orgId, c, a) => entity(read(`/campaigns/${c}/adgroups/${a}`, orgId), WireAdGroup, adGroupFromWire),
      findAdGroups: (orgId, c, conditions) =>
        findAll(`/campaigns/${c}/adgroups/find`, orgId, conditions, WireAdGroup).pipe(
          Effect.map((rows) => rows.filter((a) => !a.deleted).map(adGroupFromWire))
        ),
      keywords: (orgId, c, a) =>
        listAll(keywordBase(c, a), orgId, WireKeyword).pipe(
          Effect.map((rows) => rows.filter((k) => !k.deleted).map(keywordFromWire(c)))
        ),
      campaignKeywords: (orgId, c) =>
        findAll(`/campaigns/${c}/adgroups/targetingkeywords/find`, orgId, [], WireKeyword).pipe(
          Effect.map((rows) => rows.filter((k) => !k.deleted).map(keywordFromWire(c)))
        ),
      negativeKeywords: (orgId, c) =>
        Effect.gen(function*() {
          const campaignLevel = yield* listAll(negativeBase(c, null), orgId, WireNegativeKeyword)
          const adGroups = yield* listAll(`/campaigns/${c}/adgroups`, orgId, WireAdGroup)
          const adGroupLevel = yield* Effect.forEach(
            adGroups.filter((a) => !a.deleted),
            (a) => listAll(negativeBase(c, String(a.id)), orgId, WireNegativeKeyword),
            { concurrency: 4 }
          )
          return [...campaignLevel, ...adGroupLevel.flat()].filter((n) => !n.deleted).map(negativeFromWire)
        }),
      ads: (orgId, c, a) =>
        listAll(`/campaigns/${c}/adgroups/${a}/ads`, orgId, WireAd).pipe(Effect.map((rows) => rows.filter((x) => !x.deleted).map(adFromWire))),
      report: (orgId, request) =>
        Effect.gen(function*() {
          const call: Call = {
            method: "POST",
            path: reportPaths[request.level](request.campaignId ?? ""),
            orgId,
            write: false,
            body: {
              startTime: request.startDate,
              endTime: request.endDate,
              timeZone: "ORTZ",
              granularity: request.granularity,
              // No orderBy: the platform's own row order is stable across pages, a sort on spend is not.
              selector: { pagination: { offset: request.offset, limit: request.limit } },
              returnRowTotals: true,
              returnGrandTotals: false,
              returnRecordsWithNoMetrics: false
            }
          }
          const { body } = yield* http.run(call)
          return yield* reportPageOf(body, request)
        }),

      createCampaign: (orgId, campaign) =>
        currencyOf(orgId).pipe(Effect.flatMap((currency) =>
          saved(write("POST", "/campaigns", orgId, newCampaignToWire(campaign, orgId, currency)), WireCampaign)
        ), Effect.map(campaignFromWire)),
      updateCampaign: (orgId, c, change) =>
        Effect.flatMap(currencyOf(orgId), (currency) =>
          entity(write("PUT", `/campaigns/${c}`, orgId, { campaign: campaignChangeToWire(change, currency) }), WireCampaign, campaignFromWire)),
      deleteCampaign: (orgId, c) => http.run(write("DELETE", `/campaigns/${c}`, orgId)).pipe(Effect.asVoid),
      createAdGroup: (orgId, c, adGroup) =>
        currencyOf(orgId).pipe(Effect.flatMap((currency) =>
          saved(write("POST", `/campaigns/${c}/adgroups`, orgId, newAdGroupToWire(adGroup, c, currency)), WireAdGroup)
        ), Effect.map(adGroupFromWire)),
      updateAdGroup: (orgId, c, a, change) =>
        currencyOf(orgId).pipe(Effect.flatMap((currency) =>
          saved(write("PUT", `/campaigns/${c}/adgroups/${a}`, orgId, adGroupChangeToWire(change, currency)), WireAdGroup)
        ), Effect.map(adGroupFromWire)),
      deleteAdGroup: (orgId, c, a) => http.run(write("DELETE", `/campaigns/${c}/adgroups/${a}`, orgId)).pipe(Effect.asVoid),
      createKeywords: (orgId, c, a, keywords: ReadonlyArray<NewKeyword>) =>
        currencyOf(orgId).pipe(Effect.flatMap((currency) =>
          bulk(
            write("POST", `${keywordBase(c, a)}/bulk`, orgId, keywords.map((k) => ({
              adGroupId: Number(a),
              text: k.text,
              matchType: k.matchType,
              status: k.status ?? "ACTIVE",
              ...(k.bidMicros !== null ? { bidAmount: money(k.bidMicros, currency) } : {})
            }))),
            keywords.length,
            WireKeyword,
            keywordFromWire(c)
          )
        )),
      updateKeywords: (orgId, c, a, changes: ReadonlyArray<KeywordChange>) =>
        currencyOf(orgId).pipe(Effect.flatMap((currency) =>
          bulk(
            write("PUT", `${keywordBase(c, a)}/bulk`, orgId, changes.map((k) => ({
              id: Number(k.keywordId),
              adGroupId: Number(a),
              ...(k.status !== undefined ? { status: k.status } : {}),
              ...(k.bidMicros !== undefined ? { bidAmount: k.bidMicros === null ? null : money(k.bidMicros, currency) } : {})
            }))),
            changes.length,
            WireKeyword,
            keywordFromWire(c)
          )
        )),
      deleteKeywords: (orgId, c, a, ids) =>
        bulk(write("POST", `${keywordBase(c, a)}/delete/bulk`, orgId, ids.map(Number)), ids.length, Schema.Union(Schema.Int, Schema.String), String),
      createNegativeKeywords: (orgId, c, a, keywords: ReadonlyArray<NewNegativeKeyword>) =>
        bulk(
          write("POST", `${negativeBase(c, a)}/bulk`, orgId, keywords.map((k) => ({
            text: k.text,
            matchType: k.matchType,
            ...(a !== null ? { adGroupId: Number(a) } : {}),
            campaignId: Number(c)
          }))),
          keywords.length,
          WireNegativeKeyword,
          negativeFromWire
        ),
      deleteNegativeKeywords: (orgId, c, a, ids) =>
        bulk(write("POST", `${negativeBase(c, a)}/delete/bulk`, orgId, ids.map(Number)), ids.length, Schema.Union(Schema.Int, Schema.String), String),
      updateAd: (orgId, c, a, adId, change) =>
        saved(write("PUT", `/campaigns/${c}/adgroups/${a}/ads/${adId}`, orgId, change), WireAd).pipe(Effect.map(adFromWire)),

      searchApps: (query, limit) =>
        anyOrg.pipe(Effect.flatMap((orgId) =>
          http.data(read("/search/apps", orgId, { query, returnOwnedApps: "false", limit: String(limit) }), Schema.Array(WireApp))
        ), Effect.map(({ data }) => (data ?? []).map((app) => ({ ...app, adamId: String(app.adamId) })))),
      searchGeo: (query, countryCode) =>
        anyOrg.pipe(Effect.flatMap((orgId) =>
          http.data(
            read("/search/geo", orgId, { query, entity: "Locality", ...(countryCode !== null ? { countrycode: countryCode } : {}) }),
            Schema.Array(WireGeo)
          )
        ), Effect.map(({ data }) => data ?? []))
    }
    return client
  }).pipe(Effect.withSpan("Upstream.connect"))
