/**
 * The Apple Ads Platform API v1 client (`makeAppleAdsPlatformClient`) against the simulator's v1 face
 * over HTTP, mirroring client.test.ts: auth and discovery, faults mapped to docs/contract.md 7 codes with the same
 * retry policy, paged reads, writes, bulk partial failure, one-by-one deletes. Plus: the same reads
 * through v1 and v5 give identical results; the change history attributes writes (API client vs web
 * UI); Apple's published example bodies are checked against the simulator and the client's decoders.
 */
import { readFileSync } from "node:fs"
import { Effect, ManagedRuntime, Schema } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { makeAppleSearchAdsClient } from "../src/AppleSearchAdsClient.ts"
import { makeUpstreamClient } from "../src/MakeUpstreamClient.ts"
import { decodeReportPage } from "../src/ReportDecoding.ts"
import type { NewKeyword, ReportRequest, UpstreamAdGroup, UpstreamCampaign, UpstreamClient, UpstreamFailure } from "../src/Upstream.ts"
import { messagesOf, type RetryPolicy } from "../src/UpstreamHttp.ts"
import { type CallRecord, type FaultSpec, type Simulator, startSimulator } from "../src/simulator/Simulator.ts"
import { rawV1 } from "./support/rawV1.ts"
import { makeAppleAdsPlatformClient, v1ReportAsV5 } from "../src/v1/AppleAdsPlatformClient.ts"
import {
  V1BulkItem,
  V1ChangeDetail,
  V1ChangeSummary,
  V1Envelope,
  V1ErrorBody,
  V1Keyword,
  V1NegativeKeyword
} from "../src/v1/WireV1.ts"
import { UpstreamTransportLive, type UpstreamTransport } from "../src/UpstreamTransport.ts"

const POLICY: RetryPolicy = { maxRetries: 3, baseDelayMs: 20, maxDelayMs: 2000, timeoutMs: 500 }
const ATTEMPTS = POLICY.maxRetries + 1
const DAY_MS = 86_400_000
const isoDaysBefore = (iso: string, days: number) => new Date(Date.parse(`${iso}T00:00:00Z`) - days * DAY_MS).toISOString().slice(0, 10)

type Json = Readonly<Record<string, unknown>>
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })
/** The rows of a raw v1 answer (`result`), read as the simulator sent them. */
const rowsOf = (body: unknown): ReadonlyArray<Json> => Schema.decodeUnknownSync(Schema.Struct({ result: Schema.Array(JsonObject) }))(body).result
const fixture = (name: string): Json => JSON.parse(readFileSync(new URL(`./fixtures/v1/${name}`, import.meta.url), "utf8")) as Json

/** Every key path of a JSON value (arrays by their first element): what "the same shape" compares. */
const keyPaths = (value: unknown, prefix = ""): Array<string> => {
  if (Array.isArray(value)) return value.length === 0 ? [] : keyPaths(value[0], `${prefix}[]`)
  if (typeof value !== "object" || value === null) return []
  return Object.entries(value).flatMap(([key, inner]) => [`${prefix}.${key}`, ...keyPaths(inner, `${prefix}.${key}`)])
}

describe("Apple Ads Platform API v1 client against the simulator", () => {
  const runtime = ManagedRuntime.make(UpstreamTransportLive)
  const now = Date.now()
  let simulator: Simulator
  let client: UpstreamClient
  let v5: UpstreamClient
  let usOrg: string
  let readOnlyOrg: string

  const run = <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>): Promise<A> => runtime.runPromise(effect)
  const failure = <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>): Promise<UpstreamFailure> =>
    runtime.runPromise(Effect.flip(effect))
  const calls = (method: string, path: RegExp): Array<CallRecord> => simulator.control.listCalls({ method, path })
  const addFaults = (...faults: ReadonlyArray<FaultSpec>) => simulator.control.addFaults(faults)
  const v1Endpoints = () => ({ apiBaseUrl: simulator.apiV1Url, tokenUrl: simulator.tokenUrl })

  /** A raw v1 call with a fresh token: for the wire checks the port does not expose. */
  const raw = (method: string, path: string, account: string | null, body?: unknown) => rawV1(simulator, method, path, account, body)
  const webUi = async (adAccountId: string, method: string, path: string, body: unknown) => {
    const response = await fetch(`${simulator.url}/_control/web-ui`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ adAccountId: Number(adAccountId), method, path, body, user: "pat@example.com" })
    })
    return { status: response.status, body: (await response.json()) as unknown }
  }

  const campaignsOf = (org: string) => run(client.campaigns(org))
  const firstCampaign = async (org: string, strategy: UpstreamCampaign["bidStrategy"]) => {
    const campaign = (await campaignsOf(org)).find((c) => c.bidStrategy === strategy)
    if (campaign === undefined) throw new Error(`no ${strategy} campaign in ${org}`)
    return campaign
  }
  const firstAdGroup = async (org: string, campaign: UpstreamCampaign): Promise<UpstreamAdGroup> => {
    const adGroup = (await run(client.adGroups(org, campaign.campaignId)))[0]
    if (adGroup === undefined) throw new Error(`no ad group in campaign ${campaign.campaignId}`)
    return adGroup
  }

  beforeAll(async () => {
    simulator = await startSimulator({ seed: 7, size: "demo", port: 0, clock: () => now })
    client = await run(makeAppleAdsPlatformClient(v1Endpoints(), simulator.credentials, POLICY))
    v5 = await run(makeAppleSearchAdsClient({ apiBaseUrl: simulator.apiUrl, tokenUrl: simulator.tokenUrl }, simulator.credentials, POLICY))
    usOrg = String(simulator.accounts.find((a) => a.currency === "USD" && !a.readOnly)!.orgId)
    readOnlyOrg = String(simulator.accounts.find((a) => a.readOnly)!.orgId)
  })
  afterAll(async () => {
    await simulator.close()
    await runtime.dispose()
  })
  afterEach(() => {
    simulator.control.reset()
  })

  describe("auth and discovery", () => {
    it("connects with the same OAuth flow and discovers ad accounts through /v1/acls, without a context header", async () => {
      simulator.control.clearCalls()
      const fresh = await run(makeUpstreamClient("v1", v1Endpoints(), simulator.credentials, POLICY))
      const accounts = await run(fresh.accounts)
      expect(accounts.map((a) => a.upstreamAccountId).sort()).toEqual(simulator.accounts.map((a) => String(a.orgId)).sort())
      for (const account of accounts) {
        expect(account.parentOrgId).toBe(String(simulator.parentOrgId))
        expect(account.readOnly).toBe(account.upstreamAccountId === readOnlyOrg)
      }
      expect(calls("GET", /^\/v1\/acls$/).map((c) => [c.status, c.orgId])).toEqual([[200, null]])
      expect(calls("POST", /^\/auth\/oauth2\/token$/)).toHaveLength(1)
    })

    it("account-scoped calls need X-AP-Context: adAccountId=…; v5's orgId=… is refused with the v1 error shape", async () => {
      const missing = await raw("POST", "/campaigns/query", null, {})
      expect(missing.status).toBe(403)
      expect(Schema.is(V1ErrorBody)(missing.body)).toBe(true)
      const v5Context = await raw("POST", "/campaigns/query", `orgId=${usOrg}`, {})
      expect(v5Context.status).toBe(403)
      expect(v5Context.body).toMatchObject({ error: { code: "FORBIDDEN", message: expect.stringMatching(/adAccountId=/) } })
      const me = await raw("GET", "/me", null)
      expect(me.status).toBe(200)
      expect(me.body).toEqual({ result: { userId: expect.any(Number), orgId: simulator.parentOrgId } })
      const ok = await raw("POST", "/campaigns/query", usOrg, { pagination: { offset: 0, pageSize: 2 }, returnTotalCount: true })
      expect(ok.status).toBe(200)
      expect(ok.body).toMatchObject({ pagination: { offset: 0, pageSize: 2, totalCount: expect.any(Number) } })
      for (const header of ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"]) expect(ok.headers.get(header)).toMatch(/^\d+$/)
    })
  })

  describe("faults → docs/contract.md 7 codes and the retry policy", () => {
    const QUERY = "^/v1/campaigns/query$"
    const QUERY_RE = /^\/v1\/campaigns\/query$/
    const PUT = "^/v1/campaigns/\\d+$"
    const PUT_RE = /^\/v1\/campaigns\/\d+$/

    it("429 with Retry-After on a read: retried after the announced wait, then succeeds", async () => {
      const expected = await campaignsOf(usOrg)
      simulator.control.clearCalls()
      addFaults({ kind: "status", status: 429, retryAfterSeconds: 1, method: "POST", path: QUERY, times: 1 })
      const started = Date.now()
      expect(await campaignsOf(usOrg)).toEqual(expected)
      expect(Date.now() - started).toBeGreaterThanOrEqual(950)
      expect(calls("POST", QUERY_RE).map((c) => c.status)).toEqual([429, 200])
    })

    it("503 always → UpstreamUnavailable after the retry budget; 500 on a read is retried", async () => {
      addFaults({ kind: "status", status: 503, method: "POST", path: QUERY, times: "always" })
      const error = await failure(client.campaigns(usOrg))
      expect(error._tag).toBe("UpstreamUnavailable")
      expect(calls("POST", QUERY_RE)).toHaveLength(ATTEMPTS)
      simulator.control.reset()
      addFaults({ kind: "status", status: 500, method: "POST", path: QUERY, times: 2 })
      await campaignsOf(usOrg)
      expect(calls("POST", QUERY_RE).map((c) => c.status)).toEqual([500, 500, 200])
    })

    it("500 on a write → UpstreamError, not retried; 429 on a write is retried and lands", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      simulator.control.clearCalls()
      addFaults({ kind: "status", status: 500, method: "PUT", path: PUT, times: 1 })
      const error = await failure(client.updateCampaign(usOrg, campaign.campaignId, { dailyBudgetMicros: 55_000_000 }))
      expect(error._tag).toBe("UpstreamError")
      expect(calls("PUT", PUT_RE).map((c) => c.status)).toEqual([500])
      addFaults({ kind: "status", status: 429, retryAfterSeconds: 0, method: "PUT", path: PUT, times: 1 })
      const updated = await run(client.updateCampaign(usOrg, campaign.campaignId, { dailyBudgetMicros: 88_500_000 }))
      expect(updated.dailyBudgetMicros).toBe(88_500_000)
    })

    it("a timeout on a write → UpstreamUnavailable after one call, and the write did land upstream", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      addFaults({ kind: "timeout", delayMs: 3000, method: "PUT", path: PUT })
      const error = await failure(client.updateCampaign(usOrg, campaign.campaignId, { dailyBudgetMicros: 66_660_000 }))
      expect(error._tag).toBe("UpstreamUnavailable")
      expect(calls("PUT", PUT_RE)).toHaveLength(1)
      expect((await run(client.campaign(usOrg, campaign.campaignId))).dailyBudgetMicros).toBe(66_660_000)
    })

    it("404 → NotFound; 400 → UpstreamError with the v1 error's code and message", async () => {
      expect((await failure(client.campaign(usOrg, "987654321")))._tag).toBe("NotFound")
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      const error = await failure(client.updateCampaign(usOrg, campaign.campaignId, { dailyBudgetMicros: 12_345_678 }))
      expect(error._tag).toBe("UpstreamError")
      expect(error.message).toMatch(/400.*INVALID_ARGUMENT/)
      expect(calls("PUT", PUT_RE)).toHaveLength(1)
    })

    it("read-only: the read-only account's writes → ReadOnlyAccount; the readOnly fault turns a writable one", async () => {
      const campaign = (await campaignsOf(readOnlyOrg))[0]!
      expect((await failure(client.updateCampaign(readOnlyOrg, campaign.campaignId, { status: "PAUSED" })))._tag).toBe("ReadOnlyAccount")
      const us = await firstCampaign(usOrg, "MANUAL_CPT")
      addFaults({ kind: "readOnly", orgId: Number(usOrg) })
      expect((await failure(client.updateCampaign(usOrg, us.campaignId, { status: "PAUSED" })))._tag).toBe("ReadOnlyAccount")
      expect((await run(client.accounts)).find((a) => a.upstreamAccountId === usOrg)!.readOnly).toBe(true)
    })
  })

  describe("writes", () => {
    it("partial PUT: a budget change in every currency is read back exactly; other fields stay", async () => {
      const budgets: Record<string, number> = { USD: 12_345_670_000, EUR: 1_000_010_000, JPY: 98_765_000_000 }
      for (const account of simulator.accounts.filter((a) => !a.readOnly)) {
        const org = String(account.orgId)
        const campaign = (await campaignsOf(org))[0]!
        const budget = budgets[account.currency]!
        const updated = await run(client.updateCampaign(org, campaign.campaignId, { dailyBudgetMicros: budget }))
        expect(updated).toEqual({ ...campaign, dailyBudgetMicros: budget })
      }
      const put = calls("PUT", /^\/v1\/campaigns\/\d+$/)
      expect(put.length).toBeGreaterThan(0)
    })

    it("createKeywords with chosen rows failing: per-item results mapped to the same indexes as v5; deletes one by one", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      const adGroup = await firstAdGroup(usOrg, campaign)
      const rows: Array<NewKeyword> = [
        { text: "bulk probe zero", matchType: "EXACT", bidMicros: 1_250_000 },
        { text: "bulk probe one", matchType: "BROAD", bidMicros: null },
        { text: "bulk probe two", matchType: "EXACT", bidMicros: null, status: "PAUSED" },
        { text: "bulk probe three", matchType: "BROAD", bidMicros: 990_000 },
        { text: "bulk probe four", matchType: "EXACT", bidMicros: 2_000_000 }
      ]
      addFaults({ kind: "bulkRows", rows: [1, 3], message: "chosen to fail", path: "/keywords/bulk-create$" })
      const result = await run(client.createKeywords(usOrg, campaign.campaignId, adGroup.adGroupId, rows))
      expect(result.failed.map((f) => f.index)).toEqual([1, 3])
      for (const failed of result.failed) expect(failed.message).toMatch(/chosen to fail/)
      expect(result.succeeded.map((s) => s.index)).toEqual([0, 2, 4])
      for (const { index, value } of result.succeeded) {
        const row = rows[index]!
        expect([value.text, value.matchType, value.bidMicros, value.status]).toEqual([row.text, row.matchType, row.bidMicros, row.status ?? "ACTIVE"])
        expect([value.adGroupId, value.campaignId]).toEqual([adGroup.adGroupId, campaign.campaignId])
      }

      const ids = result.succeeded.map((s) => s.value.keywordId)
      const deleted = await run(client.deleteKeywords(usOrg, campaign.campaignId, adGroup.adGroupId, [ids[0]!, "987654321", ...ids.slice(1)]))
      expect(deleted.failed.map((f) => f.index)).toEqual([1])
      expect(deleted.succeeded.map((s) => s.value)).toEqual(ids)
      expect(calls("DELETE", /^\/v1\/keywords\/\d+$/)).toHaveLength(ids.length + 1)
      const remaining = await run(client.keywords(usOrg, campaign.campaignId, adGroup.adGroupId))
      expect(remaining.filter((k) => ids.includes(k.keywordId))).toEqual([])
    })

    it("a non-zero bid in a MAX_CONVERSIONS campaign fails that item only; bulk update and negatives go through", async () => {
      const campaign = await firstCampaign(usOrg, "MAX_CONVERSIONS")
      const adGroup = await firstAdGroup(usOrg, campaign)
      const result = await run(client.createKeywords(usOrg, campaign.campaignId, adGroup.adGroupId, [
        { text: "max conv probe a", matchType: "EXACT", bidMicros: null },
        { text: "max conv probe b", matchType: "EXACT", bidMicros: 1_500_000 }
      ]))
      expect(result.failed.map((f) => f.index)).toEqual([1])
      expect(result.failed[0]!.message).toMatch(/INVALID_BID/)
      const id = result.succeeded[0]!.value.keywordId
      const updated = await run(client.updateKeywords(usOrg, campaign.campaignId, adGroup.adGroupId, [{ keywordId: id, status: "PAUSED" }]))
      expect(updated.succeeded.map((s) => [s.index, s.value.status])).toEqual([[0, "PAUSED"]])
      const negatives = await run(client.createNegativeKeywords(usOrg, campaign.campaignId, null, [{ text: "free probe", matchType: "EXACT" }]))
      expect(negatives.succeeded.map((s) => [s.value.text, s.value.adGroupId, s.value.status])).toEqual([["free probe", null, "ACTIVE"]])
      const gone = await run(client.deleteNegativeKeywords(usOrg, campaign.campaignId, null, [negatives.succeeded[0]!.value.negativeKeywordId]))
      expect(gone.failed).toEqual([])
    })

    it("without allowPartialSuccess one bad item rejects the whole batch", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      const adGroup = await firstAdGroup(usOrg, campaign)
      addFaults({ kind: "bulkRows", rows: [1], path: "/keywords/bulk-create$" })
      const answer = await raw("POST", "/keywords/bulk-create", usOrg, {
        items: ["whole a", "whole b"].map((text, i) => ({ correlationId: i, data: { adGroupId: Number(adGroup.adGroupId), text, matchType: "EXACT" } }))
      })
      expect(answer.status).toBe(400)
      expect(Schema.is(V1ErrorBody)(answer.body)).toBe(true)
      const listed = await run(client.keywords(usOrg, campaign.campaignId, adGroup.adGroupId))
      expect(listed.filter((k) => k.text.startsWith("whole "))).toEqual([])
    })
  })

  describe("queries", () => {
    it("filter (IN, CONTAINS ignoring case), sort and page with offset; totalCount only when asked", async () => {
      const campaigns = await campaignsOf(usOrg)
      const ids = campaigns.slice(0, 3).map((c) => Number(c.campaignId))
      const sorted = await raw("POST", "/campaigns/query", usOrg, {
        filters: [{ field: "id", operator: "IN", value: ids }],
        sorting: [{ field: "id", order: "DESC" }],
        pagination: { offset: 1, pageSize: 5 },
        returnTotalCount: true
      })
      expect(sorted.body).toMatchObject({ pagination: { offset: 1, pageSize: 5, totalCount: ids.length } })
      expect(rowsOf(sorted.body).map((c) => c["id"])).toEqual([...ids].sort((a, b) => b - a).slice(1))
      const word = campaigns[0]!.name.split(" ")[0]!.toUpperCase()
      const contains = await raw("POST", "/campaigns/query", usOrg, { filters: [{ field: "name", operator: "CONTAINS", value: word, ignoreCase: true }] })
      const names = rowsOf(contains.body).map((c) => String(c["name"]))
      expect(names.length).toBeGreaterThan(0)
      for (const name of names) expect(name.toUpperCase()).toContain(word)
      expect(Schema.decodeUnknownSync(Schema.Struct({ pagination: JsonObject }))(contains.body).pagination["totalCount"]).toBeUndefined()
    })

    it("deletes are soft and cascade: a deleted ad group's keywords leave the query, as on v5", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      const adGroup = await firstAdGroup(usOrg, campaign)
      expect((await run(client.keywords(usOrg, campaign.campaignId, adGroup.adGroupId))).length).toBeGreaterThan(0)
      await run(client.deleteAdGroup(usOrg, campaign.campaignId, adGroup.adGroupId))
      expect(await run(client.keywords(usOrg, campaign.campaignId, adGroup.adGroupId))).toEqual([])
      const keywords = (rows: ReadonlyArray<{ readonly keywordId: string }>) => rows.map((k) => k.keywordId).sort()
      expect(keywords(await run(client.campaignKeywords(usOrg, campaign.campaignId)))).toEqual(keywords(await run(v5.campaignKeywords(usOrg, campaign.campaignId))))
      const gone = await raw("GET", `/adgroups/${adGroup.adGroupId}`, usOrg)
      expect(gone.body).toMatchObject({ result: { deleted: true } })
    })
  })

  describe("v1 and v5 read the same world identically", () => {
    it("accounts, campaigns, ad groups, keywords, negatives and ads of every account", async () => {
      const v1Accounts = await run(client.accounts)
      expect(v1Accounts).toEqual(await run(v5.accounts))
      for (const account of v1Accounts) {
        const org = account.upstreamAccountId
        const campaigns = await run(client.campaigns(org))
        expect(campaigns).toEqual(await run(v5.campaigns(org)))
        for (const campaign of campaigns) {
          const c = campaign.campaignId
          expect(await run(client.campaign(org, c))).toEqual(await run(v5.campaign(org, c)))
          const adGroups = await run(client.adGroups(org, c))
          expect(adGroups).toEqual(await run(v5.adGroups(org, c)))
          const byId = <A>(key: (a: A) => string) => (rows: ReadonlyArray<A>) => [...rows].sort((x, y) => key(x).localeCompare(key(y)))
          const keywords = byId((k: { readonly keywordId: string }) => k.keywordId)
          expect(keywords(await run(client.campaignKeywords(org, c)))).toEqual(keywords(await run(v5.campaignKeywords(org, c))))
          const negatives = byId((n: { readonly negativeKeywordId: string }) => n.negativeKeywordId)
          expect(negatives(await run(client.negativeKeywords(org, c)))).toEqual(negatives(await run(v5.negativeKeywords(org, c))))
          for (const adGroup of adGroups) {
            const a = adGroup.adGroupId
            expect(await run(client.adGroup(org, c, a))).toEqual(await run(v5.adGroup(org, c, a)))
            expect(keywords(await run(client.keywords(org, c, a)))).toEqual(keywords(await run(v5.keywords(org, c, a))))
            expect(await run(client.ads(org, c, a))).toEqual(await run(v5.ads(org, c, a)))
          }
        }
      }
    })

    it("find conditions name v5 fields on both", async () => {
      const conditions = [{ field: "status", operator: "EQUALS" as const, values: ["ENABLED"] }]
      expect(await run(client.findCampaigns(usOrg, conditions))).toEqual(await run(v5.findCampaigns(usOrg, conditions)))
    })

    it("report rows at every level, DAILY, paged", async () => {
      const campaign = (await campaignsOf(usOrg))[0]!
      const endDate = simulator.today(usOrg)
      const startDate = isoDaysBefore(endDate, 13)
      const levels: ReadonlyArray<ReportRequest["level"]> = ["campaigns", "adGroups", "keywords", "searchTerms", "ads"]
      for (const level of levels) {
        const request: ReportRequest = {
          level,
          ...(level === "campaigns" ? {} : { campaignId: campaign.campaignId }),
          startDate,
          endDate,
          granularity: "DAILY",
          offset: 0,
          limit: 50
        }
        const [a, b] = [await run(client.report(usOrg, request)), await run(v5.report(usOrg, request))]
        expect(a).toEqual(b)
        expect(a.rows.length).toBeGreaterThan(0)
      }
      // v1 pages hold up to 5,000 rows.
      const big = await run(client.report(usOrg, { level: "keywords", campaignId: campaign.campaignId, startDate, endDate, granularity: "WEEKLY", offset: 0, limit: 5000 }))
      expect(big.rows.length).toBe(big.totalResults)
    })

    it("an account-wide campaign report names the campaigns (deleted ones too) in campaignId IN chunks; rows, paging and totals as v5's", async () => {
      const endDate = simulator.today(usOrg)
      const startDate = isoDaysBefore(endDate, 29)
      const campaigns = await campaignsOf(usOrg)
      expect(campaigns.length).toBeGreaterThanOrEqual(3)
      // A deleted campaign keeps its metrics: v5's account-wide report lists it, so v1's must too.
      await run(client.deleteCampaign(usOrg, campaigns[1]!.campaignId))
      const chunked = await run(makeAppleAdsPlatformClient(v1Endpoints(), simulator.credentials, POLICY, { reportCampaignChunk: 2 }))
      const request = (offset: number, limit: number, granularity: ReportRequest["granularity"] = "DAILY"): ReportRequest =>
        ({ level: "campaigns", startDate, endDate, granularity, offset, limit })
      const whole = await run(v5.report(usOrg, request(0, 1000)))
      expect(whole.rows.map((r) => r.campaignId)).toContain(campaigns[1]!.campaignId)
      expect(whole.totalResults).toBeGreaterThanOrEqual(3)
      simulator.control.clearCalls()
      for (const [offset, limit] of [[0, 1000], [0, 1], [1, 2], [2, 1000], [whole.totalResults, 10]] as const) {
        for (const granularity of ["DAILY", "MONTHLY"] as const) {
          const want = await run(v5.report(usOrg, request(offset, limit, granularity)))
          expect(await run(chunked.report(usOrg, request(offset, limit, granularity)))).toEqual(want)
          expect(await run(client.report(usOrg, request(offset, limit, granularity)))).toEqual(want)
        }
      }
      // The simulator refuses a report without a campaignId filter, so every call named campaigns: one call per
      // report for the default client, one per chunk of two (every campaign, deleted ones too) for the other.
      const all = await raw("POST", "/campaigns/query", usOrg, { filters: [{ field: "deleted", operator: "IN", value: [true, false] }], pagination: { offset: 0, pageSize: 1000 } })
      const count = rowsOf(all.body).length
      expect(count).toBeGreaterThan(campaigns.length - 1)
      const sent = calls("POST", /^\/v1\/reports\/apps\/campaigns\/query$/)
      expect(sent.map((c) => c.status)).toEqual(Array.from({ length: 10 * (Math.ceil(count / 2) + 1) }, () => 200))
    })
  })

  describe("reports refuse what Apple refuses", () => {
    it("a report without a campaignId filter is a 400 in v1's error shape, at every level", async () => {
      const endDate = simulator.today(usOrg)
      const timeRange = { start: isoDaysBefore(endDate, 6), end: endDate, timeZone: "ORTZ", granularity: "DAILY" }
      for (const path of ["campaigns", "adgroups", "keywords", "searchterms", "ads"]) {
        for (const filters of [undefined, [], [{ field: "impressions", operator: "GREATER_THAN", value: 0 }]]) {
          const answer = await raw("POST", `/reports/apps/${path}/query`, usOrg, { timeRange, ...(filters !== undefined ? { filters } : {}) })
          expect(answer.status).toBe(400)
          const body = Schema.decodeUnknownSync(V1ErrorBody)(answer.body)
          expect(body.error).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/campaignId filter/) })
        }
      }
      const ids = (await campaignsOf(usOrg)).slice(0, 2).map((c) => Number(c.campaignId))
      const named = await raw("POST", "/reports/apps/campaigns/query", usOrg, { timeRange, filters: [{ field: "campaignId", operator: "IN", value: ids }] })
      expect(named.status).toBe(200)
      const below = await raw("POST", "/reports/apps/adgroups/query", usOrg, { timeRange, filters: [{ field: "campaignId", operator: "EQUALS", value: ids[0]! }] })
      expect(below.status).toBe(200)
    })
  })

  describe("search-term reports follow Apple's rules", () => {
    const searchTerms = async (body: Readonly<Record<string, unknown>>) => {
      const campaign = (await campaignsOf(usOrg))[0]!
      const endDate = simulator.today(usOrg)
      return raw("POST", "/reports/apps/searchterms/query", usOrg, {
        filters: [{ field: "campaignId", operator: "EQUALS", value: Number(campaign.campaignId) }],
        timeRange: { start: isoDaysBefore(endDate, 6), end: endDate, timeZone: "ORTZ", granularity: "DAILY" },
        ...body
      })
    }
    const refusal = (answer: { readonly status: number; readonly body: unknown }) => {
      expect(answer.status).toBe(400)
      return Schema.decodeUnknownSync(V1ErrorBody)(answer.body).error
    }

    it("only the ORTZ time zone, and no includeRows: each refusal a 400 in v1's error shape naming the rule", async () => {
      const endDate = simulator.today(usOrg)
      const range = (timeZone?: string) => ({ start: isoDaysBefore(endDate, 6), end: endDate, granularity: "DAILY", ...(timeZone !== undefined ? { timeZone } : {}) })
      expect(refusal(await searchTerms({ timeRange: range("UTC") }))).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/ORTZ/) })
      expect(refusal(await searchTerms({ timeRange: range("PST") }))).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/ORTZ/) })
      // Left out, the time zone is ORTZ.
      expect((await searchTerms({ timeRange: range() })).status).toBe(200)
      expect(refusal(await searchTerms({ options: { includeRows: ["GRAND_TOTAL"] } }))).toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringMatching(/includeRows/)
      })
      // The other reports keep taking UTC.
      const campaign = (await campaignsOf(usOrg))[0]!
      const keywords = await raw("POST", "/reports/apps/keywords/query", usOrg, {
        filters: [{ field: "campaignId", operator: "EQUALS", value: Number(campaign.campaignId) }],
        timeRange: range("UTC")
      })
      expect(keywords.status).toBe(200)
      expect((await searchTerms({})).status).toBe(200)
    })

    it("rows name the matched keyword as Apple's nested keyword object, the low-volume bucket without text; both decode", async () => {
      const apple = fixture("search-term-report.response.json")
      const page = decodeReportPage(v1ReportAsV5(apple, "searchTerms"), "444555666")
      if (typeof page === "string") throw new Error(page)
      expect(page.rows.map(({ periods: _, ...row }) => row)).toEqual([
        {
          campaignId: "444555666",
          adGroupId: "555666777",
          keywordId: "987654321",
          adId: null,
          searchTerm: "offline travel planner",
          keyword: "travel planner",
          matchType: "BROAD",
          total: { impressions: 1200, taps: 60, installs: 12, spendMicros: 30_000_000 }
        },
        {
          campaignId: "444555666",
          adGroupId: "555666777",
          keywordId: null,
          adId: null,
          searchTerm: null,
          keyword: null,
          matchType: null,
          total: { impressions: 40, taps: 2, installs: 0, spendMicros: 1_100_000 }
        }
      ])
      const answer = await searchTerms({ pagination: { offset: 0, pageSize: 5000 } })
      expect(answer.status).toBe(200)
      const notModelled = /\.keyword\.(campaignId|adAccountId|deleted|status)$/
      const want = keyPaths(apple).filter((path) => !notModelled.test(path) && !path.includes(".granularMetrics"))
      expect(keyPaths(answer.body)).toEqual(expect.arrayContaining(want))
      const rows = Schema.decodeUnknownSync(Schema.Struct({ result: Schema.Struct({ rows: Schema.Array(Schema.Struct({ metadata: JsonObject })) }) }))(
        answer.body
      ).result.rows
      expect(rows.some((r) => r.metadata["searchTermText"] === null)).toBe(true)
    })
  })

  describe("change history", () => {
    const summaries = async (body: unknown) => {
      const answer = await raw("POST", "/change-history/query", usOrg, body)
      expect(answer.status).toBe(200)
      return Schema.decodeUnknownSync(Schema.Struct({ dataType: Schema.String, result: Schema.Array(V1ChangeSummary) }))(answer.body).result
    }
    const detail = async (detailId: string) => {
      const answer = await raw("GET", `/change-history/${detailId}`, usOrg)
      expect(answer.status).toBe(200)
      return Schema.decodeUnknownSync(V1Envelope(V1ChangeDetail))(answer.body).result!
    }
    const changesOf = (d: V1ChangeDetail) => Object.fromEntries(d.details.flatMap((x) => x.changes).map((c) => [c.field, [c.oldValues, c.newValues]]))

    it("records writes of both versions as CUSTOMER_API with the client id, web UI writes as CUSTOMER, with old and new values", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      await run(client.updateCampaign(usOrg, campaign.campaignId, { dailyBudgetMicros: 41_000_000 }))
      await run(v5.updateCampaign(usOrg, campaign.campaignId, { name: `${campaign.name} (v5)` }))
      const ui = await webUi(usOrg, "PUT", `/v1/campaigns/${campaign.campaignId}`, { status: "PAUSED" })
      expect(ui.status).toBe(200)

      const rows = await summaries({ filters: [{ field: "eventTime", operator: "GREATER_THAN", value: "2000-01-01" }], options: { metadata: "snapshot" } })
      expect(rows.map((r) => [r.userType, r.modifiedBy, r.eventType, r.entityType, r.count])).toEqual([
        ["CUSTOMER_API", simulator.credentials.clientId, "UPDATE", "Campaign", 1],
        ["CUSTOMER_API", simulator.credentials.clientId, "UPDATE", "Campaign", 1],
        ["CUSTOMER", "pat@example.com", "UPDATE", "Campaign", 1]
      ])
      const details = await Promise.all(rows.map((r) => detail(String(r.metas?.[0]?.["detailId"]))))
      expect(details.map((d) => [d.entityType, d.entityId, d.detailId])).toEqual(
        rows.map((r) => ["Campaign", campaign.campaignId, `Campaign.${campaign.campaignId}.${r.transactionId}`])
      )
      expect(changesOf(details[0]!)).toEqual({
        dailyBudget: [[{ value: { amount: expect.any(String), currency: "USD" } }], [{ value: { amount: "41.00", currency: "USD" } }]]
      })
      expect(changesOf(details[1]!)).toEqual({ name: [[campaign.name], [`${campaign.name} (v5)`]] })
      expect(changesOf(details[2]!)).toEqual({ status: [[campaign.status], ["PAUSED"]] })
      expect(details[2]!.entityMetaData).toMatchObject({ name: `${campaign.name} (v5)` })
      // A web UI edit is visible to both clients.
      expect((await run(v5.campaign(usOrg, campaign.campaignId))).status).toBe("PAUSED")
      // Without metadata options the rows carry no metas; an unknown detail is Apple's closed-code NOT_FOUND.
      expect((await summaries({})).map((r) => r.metas)).toEqual([[], [], []])
      const missing = await raw("GET", "/change-history/Campaign.1.1", usOrg)
      expect([missing.status, missing.body]).toEqual([404, { error: { code: "NOT_FOUND", message: expect.any(String) } }])
    })

    it("the client's changeHistory lists changes after a mark, one per entity; outside ones are told by modifiedBy; changeDetail gives the fields", async () => {
      const changeHistory = client.changeHistory!
      const changeDetail = client.changeDetail!
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      const adGroup = await firstAdGroup(usOrg, campaign)
      await run(client.updateAdGroup(usOrg, campaign.campaignId, adGroup.adGroupId, { defaultBidMicros: 1_230_000 }))
      const all = await run(changeHistory(usOrg, "2000-01-01T00:00:00.000Z"))
      expect(all.map((c) => [c.userType, c.entityType, c.entityId])).toEqual([["CUSTOMER_API", "AdGroup", adGroup.adGroupId]])
      const mark = all[0]!.eventTime

      const edit = simulator.webUiWrite({
        adAccountId: Number(usOrg),
        method: "PUT",
        path: `/v1/adgroups/${adGroup.adGroupId}`,
        body: { name: "renamed in the web UI", status: "PAUSED" },
        user: "pat@example.com"
      })
      expect(edit.status).toBe(200)
      const since = await run(changeHistory(usOrg, mark))
      expect(since).toHaveLength(1) // strictly after the mark
      const outside = since.filter((c) => c.modifiedBy !== simulator.credentials.clientId)
      expect(outside.map((c) => [c.userType, c.modifiedBy, c.eventType, c.entityId])).toEqual([["CUSTOMER", "pat@example.com", "UPDATE", adGroup.adGroupId]])
      const detail = await run(changeDetail(usOrg, outside[0]!.detailId))
      expect([detail.campaignId, detail.adGroupId]).toEqual([campaign.campaignId, adGroup.adGroupId])
      expect(Object.fromEntries(detail.fields.map((f) => [f.field, [f.oldValues, f.newValues]]))).toEqual({
        name: [[adGroup.name], ["renamed in the web UI"]],
        status: [[adGroup.status], ["PAUSED"]]
      })
      expect((await failure(changeDetail(usOrg, "AdGroup.1.1")))._tag).toBe("NotFound")
    })

    it("a bulk create is one transaction with one row counting each keyword; a delete records DELETE", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      const adGroup = await firstAdGroup(usOrg, campaign)
      const created = await run(client.createKeywords(usOrg, campaign.campaignId, adGroup.adGroupId, [
        { text: "history probe a", matchType: "EXACT", bidMicros: null },
        { text: "history probe b", matchType: "EXACT", bidMicros: null }
      ]))
      await run(v5.createKeywords(usOrg, campaign.campaignId, adGroup.adGroupId, [
        { text: "history probe c", matchType: "EXACT", bidMicros: null },
        { text: "history probe d", matchType: "EXACT", bidMicros: null }
      ]))
      await run(client.deleteKeywords(usOrg, campaign.campaignId, adGroup.adGroupId, [created.succeeded[0]!.value.keywordId]))
      const rows = await summaries({ options: { metadata: "latest" } })
      // v1's bulk-create applies item by item (one transaction each); v5's bulk call is one transaction.
      expect(rows.map((r) => [r.eventType, r.entityType, r.count])).toEqual([
        ["CREATE", "Keyword", 1],
        ["CREATE", "Keyword", 1],
        ["CREATE", "Keyword", 2],
        ["DELETE", "Keyword", 1]
      ])
      expect(rows[3]!.metas?.[0]).toMatchObject({ Keyword: created.succeeded[0]!.value.keywordId, meta: { deleted: true } })
    })
  })

  describe("wire fixtures from Apple's published examples", () => {
    it("Apple's change-history examples decode, and the simulator's answers have their shape", async () => {
      const appleSummary = fixture("change-history-query.response.json")
      Schema.decodeUnknownSync(Schema.Struct({ dataType: Schema.Literal("AuditSummary"), result: Schema.Array(V1ChangeSummary) }))(appleSummary)
      const appleDetail = fixture("change-history-detail.response.json")
      Schema.decodeUnknownSync(V1Envelope(V1ChangeDetail))(appleDetail)

      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      const adGroup = await firstAdGroup(usOrg, campaign)
      await webUi(usOrg, "PUT", `/v1/adgroups/${adGroup.adGroupId}`, { status: "PAUSED" })
      const query = await raw("POST", "/change-history/query", usOrg, { options: { metadata: "latest" } })
      expect(keyPaths(query.body)).toEqual(expect.arrayContaining(keyPaths(appleSummary)))
      const summaries = Schema.decodeUnknownSync(Schema.Struct({
        result: Schema.Array(Schema.Struct({ transactionId: Schema.Unknown, metas: Schema.Array(JsonObject) }))
      }))(query.body).result
      const detailId = summaries[0]!.metas[0]!["detailId"]
      expect(detailId).toBe(`AdGroup.${adGroup.adGroupId}.${String(summaries[0]!.transactionId)}`)
      const answer = await raw("GET", `/change-history/${String(detailId)}`, usOrg)
      expect(keyPaths(answer.body)).toEqual(expect.arrayContaining(keyPaths(appleDetail)))
    })

    it("the client's decoders read Apple's bulk, negative and error examples", () => {
      const keywords = Schema.decodeUnknownSync(V1Envelope(Schema.Array(V1BulkItem(V1Keyword))))(fixture("keyword-bulk-create.response.json"))
      expect(keywords.result?.[0]).toMatchObject({ success: true, operation: "CREATE", result: { text: "photo editor", status: "ENABLED" } })
      const negatives = Schema.decodeUnknownSync(V1Envelope(Schema.Array(V1BulkItem(V1NegativeKeyword))))(
        fixture("negative-keyword-bulk-create.response.json")
      )
      expect(negatives.result?.[0]?.result?.adGroupId).toBeNull()
      expect(messagesOf(fixture("error.response.json"))).toMatch(/INVALID_ARGUMENT.*MISSING_REQUIRED_FIELD/)
      expect(messagesOf(fixture("error-legacy.response.json"))).toMatch(/404: Not Found/)
    })

    it("Apple's keyword report example decodes to acs rows, and the simulator's report rows have its shape", async () => {
      const apple = fixture("keyword-report.response.json")
      const page = decodeReportPage(v1ReportAsV5(apple, "keywords"), "444555666")
      if (typeof page === "string") throw new Error(page)
      expect(page.rows).toEqual([{
        campaignId: "444555666",
        adGroupId: "555666777",
        keywordId: "888999000",
        adId: null,
        searchTerm: null,
        keyword: "productivity app",
        matchType: "BROAD",
        periods: [{ date: "2025-01-01", impressions: 5000, taps: 250, installs: 60, spendMicros: 75_000_000 }],
        total: { impressions: 5000, taps: 250, installs: 60, spendMicros: 75_000_000 }
      }])

      const campaign = (await campaignsOf(usOrg))[0]!
      const endDate = simulator.today(usOrg)
      const answer = await raw("POST", "/reports/apps/keywords/query", usOrg, {
        timeRange: { start: isoDaysBefore(endDate, 6), end: endDate, timeZone: "ORTZ", granularity: "DAILY" },
        filters: [{ field: "campaignId", operator: "EQUALS", value: Number(campaign.campaignId) }],
        pagination: { offset: 0, pageSize: 5 }
      })
      expect(answer.status).toBe(200)
      // Entity status and the install totals beyond tap installs are not modelled by the simulator.
      const notModelled = /\.(status|deleted|totalInstalls)$/
      const want = keyPaths(apple).filter((path) => !notModelled.test(path))
      expect(keyPaths(answer.body)).toEqual(expect.arrayContaining(want))
    })

    it("the simulator accepts Apple's example requests and answers in the shape of Apple's example responses", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      const adGroup = await firstAdGroup(usOrg, campaign)
      const request = fixture("keyword-bulk-create.request.json") as { items: ReadonlyArray<{ correlationId: number; data: Json }> }
      const answer = await raw("POST", "/keywords/bulk-create", usOrg, {
        ...request,
        items: request.items.map((item) => ({ ...item, data: { ...item.data, adGroupId: Number(adGroup.adGroupId) } }))
      })
      expect(answer.status).toBe(200)
      // Times are not modelled by the simulator; every other field of Apple's example is there.
      const notModelled = new Set([".result[].result.creationTime", ".result[].result.modificationTime"])
      const want = keyPaths(fixture("keyword-bulk-create.response.json")).filter((path) => !notModelled.has(path))
      expect(keyPaths(answer.body)).toEqual(expect.arrayContaining(want))
      expect(rowsOf(answer.body).map((r) => r["correlationId"])).toEqual([1, 2])

      const app = (await run(client.campaigns(usOrg)))[0]!.adamId
      const created = await raw("POST", "/campaigns", usOrg, { ...fixture("campaign-create.request.json"), promotedObjectType: "APPSTORE_APP", promotedObjectId: app })
      expect(created.status).toBe(200)
      expect(created.body).toMatchObject({ result: { name: "AwayFinder App Campaign", dailyBudget: { value: { amount: "100.00" } } } })

      const refused = await raw("POST", "/campaigns", usOrg, { dailyBudget: { value: { amount: "1.00", currency: "USD" } } })
      expect(refused.status).toBe(400)
      expect(keyPaths(refused.body)).toEqual(expect.arrayContaining(keyPaths(fixture("error.response.json"))))
    })
  })
})
