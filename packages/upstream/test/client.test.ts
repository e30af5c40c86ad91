/**
 * The real Apple Search Ads client (`makeAppleSearchAdsClient`) against the simulator over HTTP, no mocks:
 * auth (ES256 client secret, refused credentials, transparent token refresh), every fault kind mapped to
 * its docs/contract.md 7 code with the retry policy (reads retried, writes only on 429), paged reads, reports to the
 * micro against the simulator's own totals, exact money on writes and bulk partial failures. Plus a
 * unit-level check of `signClientSecret`.
 */
import { generateKeyPairSync, verify } from "node:crypto"
import { Effect, ManagedRuntime } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { makeAppleSearchAdsClient } from "../src/AppleSearchAdsClient.ts"
import { APPLE_AUDIENCE, type AppleCredentials, CLIENT_SECRET_LIFETIME_SECONDS, signClientSecret } from "../src/ClientSecret.ts"
import type {
  Metrics,
  NewKeyword,
  ReportRow,
  UpstreamAdGroup,
  UpstreamCampaign,
  UpstreamClient,
  UpstreamFailure
} from "../src/Upstream.ts"
import type { Endpoints, RetryPolicy } from "../src/UpstreamHttp.ts"
import { type CallRecord, type FaultSpec, type Simulator, startSimulator } from "../src/simulator/Simulator.ts"
import { UpstreamTransportLive, type UpstreamTransport } from "../src/UpstreamTransport.ts"

/** Fast enough that the whole file runs in a few seconds; 4 attempts per read (1 + 3 retries). */
const POLICY: RetryPolicy = { maxRetries: 3, baseDelayMs: 20, maxDelayMs: 2000, timeoutMs: 500 }
const ATTEMPTS = POLICY.maxRetries + 1
const DAY_MS = 86_400_000

const otherP256Key = (): string =>
  generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString()

const isoDaysBefore = (iso: string, days: number) => new Date(Date.parse(`${iso}T00:00:00Z`) - days * DAY_MS).toISOString().slice(0, 10)

const ZERO: Metrics = { impressions: 0, taps: 0, installs: 0, spendMicros: 0 }
const add = (a: Metrics, b: Metrics): Metrics => ({
  impressions: a.impressions + b.impressions,
  taps: a.taps + b.taps,
  installs: a.installs + b.installs,
  spendMicros: a.spendMicros + b.spendMicros
})
const metricsOf = (m: Metrics): Metrics => ({ impressions: m.impressions, taps: m.taps, installs: m.installs, spendMicros: m.spendMicros })

const jsonPart = (part: string): Readonly<Record<string, unknown>> => {
  const value: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"))
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not a JSON object")
  return value as Readonly<Record<string, unknown>>
}

describe("Apple Search Ads client against the simulator", () => {
  const runtime = ManagedRuntime.make(UpstreamTransportLive)
  // A fixed simulated "now": report values do not move if the hour turns during the run.
  const now = Date.now()
  let simulator: Simulator
  let endpoints: Endpoints
  let client: UpstreamClient
  let usOrg: string
  let readOnlyOrg: string

  const run = <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>): Promise<A> => runtime.runPromise(effect)
  /** The failure of an effect that must fail (the test fails if it succeeds). */
  const failure = <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>): Promise<UpstreamFailure> =>
    runtime.runPromise(Effect.flip(effect))
  const connect = (credentials: AppleCredentials) => makeAppleSearchAdsClient(endpoints, credentials, POLICY)

  const calls = (method: string, path: RegExp): Array<CallRecord> => simulator.control.listCalls({ method, path })
  const addFaults = (...faults: ReadonlyArray<FaultSpec>) => simulator.control.addFaults(faults)

  const campaignsOf = async (org: string): Promise<ReadonlyArray<UpstreamCampaign>> => run(client.campaigns(org))
  const firstCampaign = async (org: string, strategy: UpstreamCampaign["bidStrategy"]): Promise<UpstreamCampaign> => {
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
    endpoints = { apiBaseUrl: simulator.apiUrl, tokenUrl: simulator.tokenUrl }
    client = await run(connect(simulator.credentials))
    usOrg = String(simulator.accounts.find((a) => a.currency === "USD")!.orgId)
    readOnlyOrg = String(simulator.accounts.find((a) => a.readOnly)!.orgId)
  })
  afterAll(async () => {
    await simulator.close()
    await runtime.dispose()
  })
  afterEach(() => {
    // Back to the seeded world: faults, the calls log, roles and every write are undone; tokens stay valid.
    simulator.control.reset()
  })

  describe("signClientSecret", () => {
    it("makes an ES256 JWT with Apple's header and claims, verifiable with the public key", () => {
      const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
      const credentials: AppleCredentials = {
        clientId: "SEARCHADS.8c8a2c4e-6b8f-4a53-9d7e-2f1b3c4d5e6f",
        teamId: "SEARCHADS.0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
        keyId: "d136aa66-0c3b-4bd4-9892-c20e8db024ab",
        privateKeyPem: privateKey.export({ type: "sec1", format: "pem" }).toString()
      }
      const iat = 1_750_000_000
      const jwt = signClientSecret(credentials, iat)
      const parts = jwt.split(".")
      expect(parts).toHaveLength(3)
      const [header, payload, signature] = parts as [string, string, string]
      for (const part of parts) expect(part).toMatch(/^[A-Za-z0-9_-]+$/) // base64url, no padding

      expect(jsonPart(header)).toMatchObject({ alg: "ES256", kid: credentials.keyId })
      const claims = jsonPart(payload)
      expect(claims).toEqual({
        sub: credentials.clientId,
        iss: credentials.teamId,
        aud: APPLE_AUDIENCE,
        iat,
        exp: iat + CLIENT_SECRET_LIFETIME_SECONDS
      })
      expect(APPLE_AUDIENCE).toBe("https://appleid.apple.com")
      expect(Number(claims["exp"]) - iat).toBeLessThanOrEqual(180 * 86_400)
      expect(Number(claims["exp"])).toBeGreaterThan(iat)

      const raw = Buffer.from(signature, "base64url")
      expect(raw).toHaveLength(64) // JOSE r||s, not DER
      const signed = Buffer.from(`${header}.${payload}`)
      expect(verify("sha256", signed, { key: publicKey, dsaEncoding: "ieee-p1363" }, raw)).toBe(true)
      // Another key does not verify it, and a changed claim breaks the signature.
      const other = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey
      expect(verify("sha256", signed, { key: other, dsaEncoding: "ieee-p1363" }, raw)).toBe(false)
      const forged = Buffer.from(`${header}.${Buffer.from(JSON.stringify({ ...claims, sub: "SEARCHADS.x" })).toString("base64url")}`)
      expect(verify("sha256", forged, { key: publicKey, dsaEncoding: "ieee-p1363" }, raw)).toBe(false)
    })
  })

  describe("auth", () => {
    it("connects: a token is fetched with the ES256 client secret the simulator verifies", async () => {
      const fresh = await run(connect(simulator.credentials))
      const tokenCalls = calls("POST", /^\/auth\/oauth2\/token$/)
      expect(tokenCalls).toHaveLength(1)
      expect(tokenCalls[0]!.status).toBe(200)
      // The client_secret travels in the query string as Apple's curl sends it.
      const query = new URLSearchParams(tokenCalls[0]!.query)
      expect(query.get("grant_type")).toBe("client_credentials")
      expect(query.get("scope")).toBe("searchadsorg")
      expect(query.get("client_id")).toBe(simulator.credentials.clientId)
      expect(query.get("client_secret")?.split(".")).toHaveLength(3)

      const accounts = await run(fresh.accounts)
      expect(accounts.length).toBe(simulator.accounts.length)
      // The cached token is reused: still a single token request.
      expect(calls("POST", /^\/auth\/oauth2\/token$/)).toHaveLength(1)
      expect(calls("GET", /^\/api\/v5\/acls$/).map((c) => c.status)).toEqual([200])
    })

    it("a client signing with a different EC P-256 key fails with ConnectionError (409 connection_error)", async () => {
      const error = await failure(connect({ ...simulator.credentials, privateKeyPem: otherP256Key() }))
      expect(error._tag).toBe("ConnectionError")
      const tokenCalls = calls("POST", /^\/auth\/oauth2\/token$/)
      expect(tokenCalls).toHaveLength(1) // refused credentials are not retried
      expect(tokenCalls[0]!.status).toBe(401)
      expect(tokenCalls[0]!.reason).toBe("bad signature")
    })

    it("the tokenRefused fault → ConnectionError, on connect and on a refresh of a connected client", async () => {
      addFaults({ kind: "tokenRefused" })
      const onConnect = await failure(connect(simulator.credentials))
      expect(onConnect._tag).toBe("ConnectionError")
      expect(calls("POST", /^\/auth\/oauth2\/token$/).map((c) => [c.status, c.faults])).toEqual([[401, ["tokenRefused"]]])

      // A connected client whose token expires and whose refresh is refused.
      simulator.control.clearCalls()
      addFaults({ kind: "tokenRefused" })
      simulator.control.expireTokens()
      const onRefresh = await failure(client.campaigns(usOrg))
      expect(onRefresh._tag).toBe("ConnectionError")
      expect(calls("GET", /^\/api\/v5\/campaigns$/)).toHaveLength(1)
      expect(calls("POST", /^\/auth\/oauth2\/token$/)).toHaveLength(1)
    })

    it("an expired token is refreshed transparently, once", async () => {
      const before = await campaignsOf(usOrg)
      simulator.control.clearCalls()
      expect(simulator.control.expireTokens()).toBeGreaterThan(0)
      const after = await campaignsOf(usOrg)
      expect(after).toEqual(before)
      const log = simulator.control.listCalls().map((c) => `${c.method} ${c.path} ${c.status}`)
      expect(log).toEqual([
        "GET /api/v5/campaigns 401",
        "POST /auth/oauth2/token 200",
        "GET /api/v5/campaigns 200"
      ])
      // The new token is cached: the next call needs no token request.
      await campaignsOf(usOrg)
      expect(calls("POST", /^\/auth\/oauth2\/token$/)).toHaveLength(1)
    })

    it("a 401 that survives a fresh token → ConnectionError after exactly one refresh", async () => {
      addFaults({ kind: "status", status: 401, method: "GET", path: "^/api/v5/campaigns$", times: "always" })
      const error = await failure(client.campaigns(usOrg))
      expect(error._tag).toBe("ConnectionError")
      expect(calls("GET", /^\/api\/v5\/campaigns$/)).toHaveLength(2)
      expect(calls("POST", /^\/auth\/oauth2\/token$/)).toHaveLength(1)
    })
  })

  describe("faults → docs/contract.md 7 codes and the retry policy", () => {
    const CAMPAIGNS = /^\/api\/v5\/campaigns$/

    it("429 with Retry-After on a read: retried after the announced wait, then succeeds", async () => {
      const expected = await campaignsOf(usOrg)
      simulator.control.clearCalls()
      addFaults({ kind: "status", status: 429, retryAfterSeconds: 1, method: "GET", path: CAMPAIGNS.source, times: 2 })
      const started = Date.now()
      expect(await campaignsOf(usOrg)).toEqual(expected)
      const elapsed = Date.now() - started
      expect(calls("GET", CAMPAIGNS).map((c) => c.status)).toEqual([429, 429, 200])
      expect(elapsed).toBeGreaterThanOrEqual(1900) // Retry-After: 1 honoured twice
    })

    it("429 that keeps failing past the budget → UpstreamUnavailable with retry_after_ms", async () => {
      addFaults({ kind: "status", status: 429, retryAfterSeconds: 1, method: "GET", path: CAMPAIGNS.source, times: "always" })
      const error = await failure(client.campaigns(usOrg))
      expect(error._tag).toBe("UpstreamUnavailable")
      if (error._tag !== "UpstreamUnavailable") return
      expect(error.retry_after_ms).toBe(1000)
      expect(calls("GET", CAMPAIGNS).map((c) => c.status)).toEqual(Array.from({ length: ATTEMPTS }, () => 429))
    })

    it("429 whose Retry-After exceeds the policy's longest wait → UpstreamUnavailable at once, carrying it", async () => {
      addFaults({ kind: "status", status: 429, retryAfterSeconds: 30, method: "GET", path: CAMPAIGNS.source, times: "always" })
      const error = await failure(client.campaigns(usOrg))
      expect(error._tag).toBe("UpstreamUnavailable")
      if (error._tag !== "UpstreamUnavailable") return
      expect(error.retry_after_ms).toBe(30_000)
      expect(calls("GET", CAMPAIGNS)).toHaveLength(1)
    })

    it("503 on a read: retried, then OK", async () => {
      const expected = await campaignsOf(usOrg)
      simulator.control.clearCalls()
      addFaults({ kind: "status", status: 503, method: "GET", path: CAMPAIGNS.source, times: 2 })
      expect(await campaignsOf(usOrg)).toEqual(expected)
      expect(calls("GET", CAMPAIGNS).map((c) => c.status)).toEqual([503, 503, 200])
    })

    it("503 always → UpstreamUnavailable after the retry budget", async () => {
      addFaults({ kind: "status", status: 503, method: "GET", path: CAMPAIGNS.source, times: "always" })
      const error = await failure(client.campaigns(usOrg))
      expect(error._tag).toBe("UpstreamUnavailable")
      if (error._tag !== "UpstreamUnavailable") return
      expect(error.retry_after_ms).toBeGreaterThan(0)
      expect(calls("GET", CAMPAIGNS)).toHaveLength(ATTEMPTS)
    })

    it("timeout on a read: retried, then OK; always timing out → UpstreamUnavailable", async () => {
      const expected = await campaignsOf(usOrg)
      simulator.control.clearCalls()
      addFaults({ kind: "timeout", delayMs: 3000, method: "GET", path: CAMPAIGNS.source, times: 1 })
      expect(await campaignsOf(usOrg)).toEqual(expected)
      expect(calls("GET", CAMPAIGNS).map((c) => c.faults)).toEqual([["timeout"], []])

      simulator.control.reset()
      // A hold far longer than the policy's timeout, so the bound below holds on a busy machine too.
      const hold = 30_000
      addFaults({ kind: "timeout", delayMs: hold, method: "GET", path: CAMPAIGNS.source, times: "always" })
      const started = Date.now()
      const error = await failure(client.campaigns(usOrg))
      expect(error._tag).toBe("UpstreamUnavailable")
      expect(error.message).toMatch(/timed out/)
      expect(calls("GET", CAMPAIGNS)).toHaveLength(ATTEMPTS)
      // Each attempt was cut at the policy's timeout: a single one left to the simulator's hold would take longer.
      expect(Date.now() - started).toBeLessThan(hold)
    })

    it("500 on a read: retried (a read is idempotent), then OK", async () => {
      const expected = await campaignsOf(usOrg)
      simulator.control.clearCalls()
      addFaults({ kind: "status", status: 500, method: "GET", path: CAMPAIGNS.source, times: 2 })
      expect(await campaignsOf(usOrg)).toEqual(expected)
      expect(calls("GET", CAMPAIGNS).map((c) => c.status)).toEqual([500, 500, 200])
    })

    it("500 always on a read → UpstreamError carrying the last x-request-id, after the retry budget", async () => {
      addFaults({ kind: "status", status: 500, method: "GET", path: CAMPAIGNS.source, times: "always" })
      const error = await failure(client.campaigns(usOrg))
      expect(error._tag).toBe("UpstreamError")
      if (error._tag !== "UpstreamError") return
      const log = calls("GET", CAMPAIGNS)
      expect(log.map((c) => c.status)).toEqual(Array.from({ length: ATTEMPTS }, () => 500))
      expect(error.request_id).toBe(log.at(-1)!.requestId)
    })

    it("500 on a write → UpstreamError, not retried (it may have landed)", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      simulator.control.clearCalls()
      addFaults({ kind: "status", status: 500, method: "PUT", path: "^/api/v5/campaigns/\\d+$", times: "always" })
      const error = await failure(client.updateCampaign(usOrg, campaign.campaignId, { dailyBudgetMicros: 55_000_000 }))
      expect(error._tag).toBe("UpstreamError")
      expect(calls("PUT", /^\/api\/v5\/campaigns\/\d+$/).map((c) => c.status)).toEqual([500])
    })

    it("404 → NotFound (a missing campaign, and a 404 fault)", async () => {
      const missing = await failure(client.campaign(usOrg, "987654321"))
      expect(missing._tag).toBe("NotFound")
      const campaign = (await campaignsOf(usOrg))[0]!
      addFaults({ kind: "status", status: 404, method: "GET", path: `^/api/v5/campaigns/${campaign.campaignId}/adgroups$` })
      const faulted = await failure(client.adGroups(usOrg, campaign.campaignId))
      expect(faulted._tag).toBe("NotFound")
    })

    it("a 400 (a refused write) → UpstreamError, not retried", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      // USD has cents: a budget of 12.345678 is refused by the platform with 400.
      const error = await failure(client.updateCampaign(usOrg, campaign.campaignId, { dailyBudgetMicros: 12_345_678 }))
      expect(error._tag).toBe("UpstreamError")
      expect(error.message).toMatch(/400/)
      expect(calls("PUT", /^\/api\/v5\/campaigns\/\d+$/)).toHaveLength(1)
    })

    it("a write on the read-only account (403) → ReadOnlyAccount; its reads still work", async () => {
      const campaign = (await campaignsOf(readOnlyOrg))[0]!
      const error = await failure(client.updateCampaign(readOnlyOrg, campaign.campaignId, { status: "PAUSED" }))
      expect(error._tag).toBe("ReadOnlyAccount")
      expect(calls("PUT", /^\/api\/v5\/campaigns\/\d+$/).map((c) => c.status)).toEqual([403])
      expect((await run(client.campaign(readOnlyOrg, campaign.campaignId))).status).toBe(campaign.status)
    })

    it("the readOnly fault turns a writable account read-only: writes → ReadOnlyAccount", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      addFaults({ kind: "readOnly", orgId: Number(usOrg) })
      const error = await failure(client.updateCampaign(usOrg, campaign.campaignId, { status: "PAUSED" }))
      expect(error._tag).toBe("ReadOnlyAccount")
      const us = (await run(client.accounts)).find((a) => a.upstreamAccountId === usOrg)!
      expect(us.readOnly).toBe(true)
    })

    it("a 503 on a write is not retried: UpstreamUnavailable after exactly one call", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      simulator.control.clearCalls()
      addFaults({ kind: "status", status: 503, method: "PUT", path: "^/api/v5/campaigns/\\d+$", times: "always" })
      const error = await failure(client.updateCampaign(usOrg, campaign.campaignId, { dailyBudgetMicros: 77_000_000 }))
      expect(error._tag).toBe("UpstreamUnavailable")
      expect(calls("PUT", /^\/api\/v5\/campaigns\/\d+$/)).toHaveLength(1)
      expect((await run(client.campaign(usOrg, campaign.campaignId))).dailyBudgetMicros).toBe(campaign.dailyBudgetMicros)
    })

    it("a 429 on a write is retried (the platform did not process it) and succeeds", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      addFaults({ kind: "status", status: 429, retryAfterSeconds: 0, method: "PUT", path: "^/api/v5/campaigns/\\d+$", times: 1 })
      const updated = await run(client.updateCampaign(usOrg, campaign.campaignId, { dailyBudgetMicros: 88_500_000 }))
      expect(updated.dailyBudgetMicros).toBe(88_500_000)
      expect(calls("PUT", /^\/api\/v5\/campaigns\/\d+$/).map((c) => c.status)).toEqual([429, 200])
    })

    it("a timeout on a write → UpstreamUnavailable after one call, and the write did land upstream", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      addFaults({ kind: "timeout", delayMs: 3000, method: "PUT", path: "^/api/v5/campaigns/\\d+$" })
      const error = await failure(client.updateCampaign(usOrg, campaign.campaignId, { dailyBudgetMicros: 66_660_000 }))
      expect(error._tag).toBe("UpstreamUnavailable")
      expect(calls("PUT", /^\/api\/v5\/campaigns\/\d+$/)).toHaveLength(1)
      expect((await run(client.campaign(usOrg, campaign.campaignId))).dailyBudgetMicros).toBe(66_660_000)
    })
  })

  describe("reads", () => {
    it("accounts: the demo accounts with roles, readOnly only for the read-only one", async () => {
      const accounts = await run(client.accounts)
      expect(accounts.map((a) => a.upstreamAccountId).sort()).toEqual(simulator.accounts.map((a) => String(a.orgId)).sort())
      for (const expected of simulator.accounts) {
        const account = accounts.find((a) => a.upstreamAccountId === String(expected.orgId))!
        expect(account.name).toBe(expected.orgName)
        expect(account.roles).toEqual(expected.roleNames)
        expect(account.currency).toBe(expected.currency)
        expect(account.timeZone).toBe(expected.timeZone)
        expect(account.readOnly).toBe(expected.readOnly)
        expect(account.parentOrgId).toBe(String(simulator.parentOrgId))
      }
      expect(accounts.filter((a) => a.readOnly).map((a) => a.upstreamAccountId)).toEqual([readOnlyOrg])
    })

    it("campaigns, ad groups and keywords page through everything: counts equal the simulator's", async () => {
      const summary = simulator.control.summary()
      for (const expected of summary.accounts) {
        const org = String(expected.orgId)
        const campaigns = await campaignsOf(org)
        expect(campaigns).toHaveLength(expected.campaigns)
        let adGroups = 0
        let keywords = 0
        for (const campaign of campaigns) {
          const groups = await run(client.adGroups(org, campaign.campaignId))
          adGroups += groups.length
          for (const group of groups) {
            expect(group.campaignId).toBe(campaign.campaignId)
            const list = await run(client.keywords(org, campaign.campaignId, group.adGroupId))
            for (const keyword of list) {
              expect(keyword.adGroupId).toBe(group.adGroupId)
              expect(keyword.campaignId).toBe(campaign.campaignId)
            }
            expect(new Set(list.map((k) => k.keywordId)).size).toBe(list.length)
            keywords += list.length
          }
        }
        expect(adGroups).toBe(expected.adGroups)
        expect(keywords).toBe(expected.keywords)
      }
    })

    it("keywords of an ad group with more than one page (1,000) are all read", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      const adGroup = await firstAdGroup(usOrg, campaign)
      const before = await run(client.keywords(usOrg, campaign.campaignId, adGroup.adGroupId))
      const rows: Array<NewKeyword> = Array.from({ length: 1000 }, (_, i) => ({ text: `paging probe ${i}`, matchType: "EXACT", bidMicros: null }))
      const created = await run(client.createKeywords(usOrg, campaign.campaignId, adGroup.adGroupId, rows))
      expect(created.failed).toEqual([])
      expect(created.succeeded).toHaveLength(1000)

      simulator.control.clearCalls()
      const after = await run(client.keywords(usOrg, campaign.campaignId, adGroup.adGroupId))
      expect(after).toHaveLength(before.length + 1000)
      expect(new Set(after.map((k) => k.keywordId)).size).toBe(after.length)
      const pages = calls("GET", /\/targetingkeywords$/).map((c) => new URLSearchParams(c.query))
      expect(pages.map((q) => [q.get("offset"), q.get("limit")])).toEqual([["0", "1000"], ["1000", "1000"]])
    })

    it("find selectors: campaigns and ad groups matching conditions, through POST .../find", async () => {
      const all = await run(client.campaigns(usOrg))
      const wanted = all.slice(0, 2).map((c) => c.campaignId)
      simulator.control.clearCalls()
      const found = await run(client.findCampaigns(usOrg, [{ field: "id", operator: "IN", values: wanted }]))
      expect(found.map((c) => c.campaignId).sort()).toEqual([...wanted].sort())
      expect(calls("POST", /\/campaigns\/find$/)).toHaveLength(1)
      const maxConversions = await run(client.findCampaigns(usOrg, [{ field: "biddingStrategy", operator: "EQUALS", values: ["MAX_CONVERSIONS"] }]))
      expect(maxConversions.length).toBeGreaterThan(0)
      expect(maxConversions.every((c) => c.bidStrategy === "MAX_CONVERSIONS")).toBe(true)
      expect(maxConversions.length).toBe(all.filter((c) => c.bidStrategy === "MAX_CONVERSIONS").length)
      const campaign = all[0]!
      const adGroups = await run(client.adGroups(usOrg, campaign.campaignId))
      const one = await run(client.findAdGroups(usOrg, campaign.campaignId, [{ field: "id", operator: "EQUALS", values: [adGroups[0]!.adGroupId] }]))
      expect(one).toEqual([adGroups[0]])
    })

    it("app and geo search answer (they carry an org context, as every v5 call but /acls and /me must)", async () => {
      const apps = await run(client.searchApps("", 5))
      expect(apps.length).toBeGreaterThan(0)
      expect(apps.length).toBeLessThanOrEqual(5)
      for (const app of apps) expect(app.adamId).toMatch(/^\d+$/)
      const geo = await run(client.searchGeo("Cupertino", "US"))
      expect(geo.map((g) => [g.id, g.entity])).toEqual([["US|CA|Cupertino", "Locality"]])
      const searches = calls("GET", /^\/api\/v5\/search\//)
      expect(searches.map((c) => c.status)).toEqual([200, 200])
      for (const search of searches) expect(search.orgId).not.toBeNull()
    })

    it("a keywords-level DAILY report of a campaign equals the simulator's totals to the micro", async () => {
      const campaign = (await campaignsOf(usOrg))[0]!
      const endDate = simulator.today(usOrg)
      const startDate = isoDaysBefore(endDate, 29)
      const rows: Array<ReportRow> = []
      let total = Infinity
      for (let offset = 0; offset < total; offset += 40) {
        const page = await run(client.report(usOrg, {
          level: "keywords",
          campaignId: campaign.campaignId,
          startDate,
          endDate,
          granularity: "DAILY",
          offset,
          limit: 40
        }))
        expect(page.offset).toBe(offset)
        total = page.totalResults
        rows.push(...page.rows)
      }
      const expected = simulator.totals(usOrg, "keywords", startDate, endDate, campaign.campaignId)
      expect(rows.length).toBe(expected.rows.length)
      expect(rows.length).toBeGreaterThan(40) // really paged
      expect(rows.map((r) => metricsOf(r.total)).reduce(add, ZERO)).toEqual(expected.total)
      expect(expected.total.spendMicros).toBeGreaterThan(0)

      const byKeyword = new Map(expected.rows.map((r) => [r.keywordId, r]))
      for (const row of rows) {
        expect(row.campaignId).toBe(campaign.campaignId)
        expect(row.keywordId).not.toBeNull()
        const want = byKeyword.get(row.keywordId)
        expect(want?.adGroupId).toBe(row.adGroupId)
        expect(metricsOf(row.total)).toEqual(want?.total)
        // The daily periods add up to the row total, each inside the window.
        expect(row.periods.map(metricsOf).reduce(add, ZERO)).toEqual(metricsOf(row.total))
        for (const period of row.periods) {
          expect(period.date >= startDate && period.date <= endDate).toBe(true)
        }
      }
    })
  })

  describe("writes", () => {
    it("updateCampaign: a budget change is read back exactly in micros, in every currency", async () => {
      const budgets: Record<string, number> = { USD: 12_345_670_000, EUR: 1_000_010_000, JPY: 98_765_000_000 }
      for (const account of simulator.accounts.filter((a) => !a.readOnly)) {
        const org = String(account.orgId)
        const campaign = (await campaignsOf(org))[0]!
        const budget = budgets[account.currency]!
        const updated = await run(client.updateCampaign(org, campaign.campaignId, { dailyBudgetMicros: budget }))
        expect(updated.dailyBudgetMicros).toBe(budget)
        const readBack = await run(client.campaign(org, campaign.campaignId))
        expect(readBack.dailyBudgetMicros).toBe(budget)
        expect(readBack.name).toBe(campaign.name)
        expect(readBack.status).toBe(campaign.status)
      }
    })

    it("createKeywords with the bulkRows fault: exactly the chosen rows fail, the others succeed with their index; deleteKeywords removes them", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      const adGroup = await firstAdGroup(usOrg, campaign)
      const rows: Array<NewKeyword> = [
        { text: "bulk probe zero", matchType: "EXACT", bidMicros: 1_250_000 },
        { text: "bulk probe one", matchType: "BROAD", bidMicros: null },
        { text: "bulk probe two", matchType: "EXACT", bidMicros: null, status: "PAUSED" },
        { text: "bulk probe three", matchType: "BROAD", bidMicros: 990_000 },
        { text: "bulk probe four", matchType: "EXACT", bidMicros: 2_000_000 }
      ]
      addFaults({ kind: "bulkRows", rows: [1, 3], message: "chosen to fail", path: "/targetingkeywords/bulk$" })
      const result = await run(client.createKeywords(usOrg, campaign.campaignId, adGroup.adGroupId, rows))
      expect(result.failed.map((f) => f.index)).toEqual([1, 3])
      for (const failed of result.failed) expect(failed.message).toMatch(/chosen to fail/)
      expect(result.succeeded.map((s) => s.index)).toEqual([0, 2, 4])
      for (const { index, value } of result.succeeded) {
        const row = rows[index]!
        expect(value.text).toBe(row.text)
        expect(value.matchType).toBe(row.matchType)
        expect(value.bidMicros).toBe(row.bidMicros)
        expect(value.status).toBe(row.status ?? "ACTIVE")
        expect(value.adGroupId).toBe(adGroup.adGroupId)
        expect(value.campaignId).toBe(campaign.campaignId)
      }

      const listed = await run(client.keywords(usOrg, campaign.campaignId, adGroup.adGroupId))
      const probes = listed.filter((k) => k.text.startsWith("bulk probe")).map((k) => k.text).sort()
      expect(probes).toEqual(["bulk probe four", "bulk probe two", "bulk probe zero"])

      const ids = result.succeeded.map((s) => s.value.keywordId)
      const deleted = await run(client.deleteKeywords(usOrg, campaign.campaignId, adGroup.adGroupId, ids))
      expect(deleted.failed).toEqual([])
      expect(deleted.succeeded).toEqual(ids.map((value, index) => ({ index, value })))
      const remaining = await run(client.keywords(usOrg, campaign.campaignId, adGroup.adGroupId))
      expect(remaining.filter((k) => ids.includes(k.keywordId))).toEqual([])
      expect(remaining).toHaveLength(listed.length - ids.length)
    })

    it("deleteKeywords reports a missing keyword as a failed row, the others by index", async () => {
      const campaign = await firstCampaign(usOrg, "MANUAL_CPT")
      const adGroup = await firstAdGroup(usOrg, campaign)
      const existing = await run(client.keywords(usOrg, campaign.campaignId, adGroup.adGroupId))
      const [a, b] = existing as [typeof existing[number], typeof existing[number]]
      const result = await run(client.deleteKeywords(usOrg, campaign.campaignId, adGroup.adGroupId, [a.keywordId, "987654321", b.keywordId]))
      expect(result.failed.map((f) => f.index)).toEqual([1])
      expect(result.succeeded).toEqual([{ index: 0, value: a.keywordId }, { index: 2, value: b.keywordId }])
    })

    it("a non-zero bid in a MAX_CONVERSIONS campaign's ad group fails that row only", async () => {
      const campaign = await firstCampaign(usOrg, "MAX_CONVERSIONS")
      const adGroup = await firstAdGroup(usOrg, campaign)
      const rows: Array<NewKeyword> = [
        { text: "max conv probe a", matchType: "EXACT", bidMicros: null },
        { text: "max conv probe b", matchType: "EXACT", bidMicros: 1_500_000 },
        { text: "max conv probe c", matchType: "BROAD", bidMicros: null }
      ]
      const result = await run(client.createKeywords(usOrg, campaign.campaignId, adGroup.adGroupId, rows))
      expect(result.failed).toHaveLength(1)
      expect(result.failed[0]!.index).toBe(1)
      expect(result.failed[0]!.message).toMatch(/INVALID_BID/)
      expect(result.succeeded.map((s) => [s.index, s.value.text, s.value.bidMicros])).toEqual([
        [0, "max conv probe a", null],
        [2, "max conv probe c", null]
      ])
    })
  })
})
