/**
 * The Apple Search Ads v5 simulator over plain HTTP: auth, org tree, paging, writes, bulk partial
 * failures, report coherence to the micro, determinism, every fault kind and the bench size. Answers
 * are decoded with the Wire.ts schemas the real client uses.
 */
import { generateKeyPairSync, sign } from "node:crypto"
import { Effect, Schema } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { microsFromDecimal } from "../src/Money.ts"
import type { Metrics } from "../src/Upstream.ts"
import {
  WireAcl,
  WireAdGroup,
  WireCampaign,
  WireEnvelope,
  WireKeyword,
  WireMe,
  WireReport,
  WireToken
} from "../src/Wire.ts"
import type { WireMetrics } from "../src/Wire.ts"
import {
  acquireSimulator,
  type Simulator,
  type SimulatorCredentials,
  simulatorTotals,
  startSimulator
} from "../src/simulator/Simulator.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const DAY_MS = 86_400_000

// ---------------------------------------------------------------------------------------------
// A minimal client: what the acs client does, spelled out with fetch and node:crypto.

const base64Url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

const clientSecret = (
  credentials: SimulatorCredentials,
  options: { readonly claims?: Readonly<Record<string, unknown>>; readonly privateKeyPem?: string } = {}
): string => {
  const now = Math.floor(Date.now() / 1000)
  const header = base64Url({ alg: "ES256", kid: credentials.keyId })
  const payload = base64Url({
    sub: credentials.clientId,
    iss: credentials.teamId,
    aud: "https://appleid.apple.com",
    iat: now,
    exp: now + 86_400,
    ...options.claims
  })
  const signature = sign("sha256", Buffer.from(`${header}.${payload}`), {
    key: options.privateKeyPem ?? credentials.privateKeyPem,
    dsaEncoding: "ieee-p1363"
  })
  return `${header}.${payload}.${signature.toString("base64url")}`
}

const requestToken = (simulator: Simulator, secret: string, asForm = false) => {
  const parameters = new URLSearchParams({
    grant_type: "client_credentials",
    client_id: simulator.credentials.clientId,
    client_secret: secret,
    scope: "searchadsorg"
  })
  return asForm
    ? fetch(simulator.tokenUrl, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: parameters.toString() })
    : fetch(`${simulator.tokenUrl}?${parameters}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" } })
}

const tokenFor = async (simulator: Simulator): Promise<string> => {
  const response = await requestToken(simulator, clientSecret(simulator.credentials))
  expect(response.status).toBe(200)
  return Schema.decodeUnknownSync(WireToken)(await response.json()).access_token
}

interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly json: unknown
}

const call = async (
  simulator: Simulator,
  token: string | null,
  method: string,
  path: string,
  options: { readonly orgId?: number; readonly body?: unknown; readonly signal?: AbortSignal } = {}
): Promise<Reply> => {
  const headers: Record<string, string> = { "content-type": "application/json" }
  if (token !== null) headers["authorization"] = `Bearer ${token}`
  if (options.orgId !== undefined) headers["x-ap-context"] = `orgId=${options.orgId}`
  const response = await fetch(`${simulator.apiUrl}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    ...(options.signal === undefined ? {} : { signal: options.signal })
  })
  return { status: response.status, headers: response.headers, json: await response.json() }
}

const decode = <A, I>(schema: Schema.Schema<A, I>, value: unknown): A => Schema.decodeUnknownSync(schema)(value)

const ErrorReply = WireEnvelope(Schema.Unknown)
const errorsOf = (reply: Reply) => decode(ErrorReply, reply.json).error?.errors ?? []

const CampaignList = WireEnvelope(Schema.Array(WireCampaign))
const AdGroupList = WireEnvelope(Schema.Array(WireAdGroup))
const KeywordList = WireEnvelope(Schema.Array(WireKeyword))
const ReportReply = WireEnvelope(WireReport)

type WireMetricsValue = typeof WireMetrics.Type

const ZERO: Metrics = { impressions: 0, taps: 0, installs: 0, spendMicros: 0 }
const toMetrics = (metrics: WireMetricsValue | undefined): Metrics =>
  metrics === undefined
    ? ZERO
    : { impressions: metrics.impressions, taps: metrics.taps, installs: metrics.tapInstalls, spendMicros: microsFromDecimal(metrics.localSpend.amount) }
const add = (a: Metrics, b: Metrics): Metrics => ({
  impressions: a.impressions + b.impressions,
  taps: a.taps + b.taps,
  installs: a.installs + b.installs,
  spendMicros: a.spendMicros + b.spendMicros
})
const sum = (items: ReadonlyArray<Metrics>): Metrics => items.reduce(add, ZERO)

const isoDaysBefore = (iso: string, days: number) => new Date(Date.parse(iso) - days * DAY_MS).toISOString().slice(0, 10)

/** Every row of a report, paging by 1,000. */
const reportRows = async (
  simulator: Simulator,
  token: string,
  orgId: number,
  path: string,
  body: Readonly<Record<string, unknown>>
) => {
  const rows: Array<typeof WireReport.Type["reportingDataResponse"]["row"][number]> = []
  for (let offset = 0; ; offset += 1000) {
    const reply = await call(simulator, token, "POST", path, {
      orgId,
      body: { ...body, selector: { pagination: { offset, limit: 1000 } } }
    })
    expect(reply.status).toBe(200)
    const decoded = decode(ReportReply, reply.json)
    rows.push(...decoded.data!.reportingDataResponse.row)
    if (offset + 1000 >= decoded.pagination!.totalResults) return rows
  }
}

// ---------------------------------------------------------------------------------------------

describe("simulator (demo size)", () => {
  let simulator: Simulator
  let token: string
  let usOrg: number
  let readOnlyOrg: number
  // A fixed simulated "now": no report value moves if the hour turns during the run.
  const now = Date.now()

  beforeAll(async () => {
    simulator = await startSimulator({ seed: 11, clock: () => now })
    token = await tokenFor(simulator)
    usOrg = simulator.accounts.find((account) => account.currency === "USD")!.orgId
    readOnlyOrg = simulator.accounts.find((account) => account.readOnly)!.orgId
  })
  afterAll(() => simulator.close())
  afterEach(() => {
    simulator.control.clearFaults()
  })

  describe("auth", () => {
    it("issues a bearer token for a good ES256 client secret (query parameters or form body)", async () => {
      for (const asForm of [false, true]) {
        const response = await requestToken(simulator, clientSecret(simulator.credentials), asForm)
        expect(response.status).toBe(200)
        expect(response.headers.get("x-request-id")).toMatch(UUID)
        const body = decode(WireToken, await response.json())
        expect(body.token_type).toBe("Bearer")
        expect(body.expires_in).toBe(3600)
        expect(body.access_token.length).toBeGreaterThan(20)
      }
      expect(simulator.credentials.clientId).toMatch(/^SEARCHADS\.[0-9a-f-]{36}$/)
      expect(simulator.credentials.privateKeyPem).toContain("BEGIN EC PRIVATE KEY")
    })

    it("refuses a bad signature, a wrong aud, an expired or too long-lived secret with 401 invalid_client", async () => {
      const otherKey = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString()
      const nowSeconds = Math.floor(Date.now() / 1000)
      const bad = [
        clientSecret(simulator.credentials, { privateKeyPem: otherKey }),
        clientSecret(simulator.credentials, { claims: { aud: "https://example.com" } }),
        clientSecret(simulator.credentials, { claims: { iat: nowSeconds - 7200, exp: nowSeconds - 60 } }),
        clientSecret(simulator.credentials, { claims: { exp: nowSeconds + 181 * 86_400 } }),
        clientSecret(simulator.credentials, { claims: { iss: "SEARCHADS.someone-else" } }),
        "not-a-jwt"
      ]
      for (const secret of bad) {
        const response = await requestToken(simulator, secret)
        expect(response.status).toBe(401)
        expect(await response.json()).toEqual({ error: "invalid_client" })
      }
    })

    it("answers 401 without a valid bearer token and 403 without a usable X-AP-Context", async () => {
      const missing = await call(simulator, null, "GET", "/campaigns", { orgId: usOrg })
      expect(missing.status).toBe(401)
      expect(missing.json).toMatchObject({ data: null, pagination: null })
      expect(errorsOf(missing)[0]?.messageCode).toBe("UNAUTHORIZED")
      expect((await call(simulator, "forged", "GET", "/campaigns", { orgId: usOrg })).status).toBe(401)

      const noContext = await call(simulator, token, "GET", "/campaigns")
      expect(noContext.status).toBe(403)
      expect(errorsOf(noContext)[0]?.messageCode).toBe("FORBIDDEN")
      expect(noContext.headers.get("x-request-id")).toMatch(UUID)
      expect((await call(simulator, token, "GET", "/campaigns", { orgId: 1 })).status).toBe(403)
    })
  })

  it("lists the accounts with their roles in /acls, and /me names the parent org", async () => {
    const acls = decode(WireEnvelope(Schema.Array(WireAcl)), (await call(simulator, token, "GET", "/acls")).json).data!
    expect(acls.map((acl) => acl.currency).sort()).toEqual(["EUR", "GBP", "JPY", "USD"])
    expect(new Set(acls.map((acl) => acl.parentOrgId))).toEqual(new Set([simulator.parentOrgId]))
    expect(acls.find((acl) => acl.orgId === readOnlyOrg)!.roleNames).toEqual(["API Read Only"])
    expect(acls.filter((acl) => acl.roleNames.includes("API Account Manager"))).toHaveLength(3)
    expect(acls.find((acl) => acl.currency === "JPY")!.timeZone).toBe("Asia/Tokyo")
    const me = decode(WireEnvelope(WireMe), (await call(simulator, token, "GET", "/me")).json).data!
    expect(me.parentOrgId).toBe(simulator.parentOrgId)
  })

  it("generates both bidding strategies, Search Match on and off, both match types, negatives and ads", async () => {
    const campaigns = decode(CampaignList, (await call(simulator, token, "GET", "/campaigns?limit=1000", { orgId: usOrg })).json).data!
    expect(campaigns).toHaveLength(6)
    const maxConversions = campaigns.filter((c) => c.biddingStrategy === "MAX_CONVERSIONS")
    expect(maxConversions.length).toBeGreaterThan(0)
    expect(maxConversions.every((c) => c.targetCpa !== null && c.targetCpa !== undefined)).toBe(true)
    const keywordsOf = async (campaignId: number) => {
      const adGroups = decode(AdGroupList, (await call(simulator, token, "GET", `/campaigns/${campaignId}/adgroups?limit=1000`, { orgId: usOrg })).json).data!
      const keywords = await Promise.all(adGroups.map(async (adGroup) =>
        decode(KeywordList, (await call(simulator, token, "GET", `/campaigns/${campaignId}/adgroups/${adGroup.id}/targetingkeywords?limit=1000`, { orgId: usOrg })).json).data!
      ))
      return { adGroups, keywords: keywords.flat() }
    }
    const maxTree = await keywordsOf(maxConversions[0]!.id)
    expect(maxTree.keywords.every((k) => k.bidAmount === null)).toBe(true)
    const manual = await Promise.all(campaigns.filter((c) => c.biddingStrategy === "MANUAL_CPT").map((c) => keywordsOf(c.id)))
    const manualKeywords = manual.flatMap((tree) => tree.keywords)
    expect(manualKeywords.some((k) => k.bidAmount !== null)).toBe(true)
    expect(new Set(manualKeywords.map((k) => k.matchType))).toEqual(new Set(["EXACT", "BROAD"]))
    expect(new Set(manualKeywords.map((k) => k.status))).toEqual(new Set(["ACTIVE", "PAUSED"]))
    const adGroups = [...manual.flatMap((tree) => tree.adGroups), ...maxTree.adGroups]
    expect(new Set(adGroups.map((a) => a.automatedKeywordsOptIn))).toEqual(new Set([true, false]))
    expect(adGroups.some((a) => a.cpaGoal !== null && a.cpaGoal !== undefined)).toBe(true)
    const negatives = await call(simulator, token, "GET", `/campaigns/${campaigns[0]!.id}/negativekeywords`, { orgId: usOrg })
    expect((negatives.json as { data: ReadonlyArray<unknown> }).data.length).toBeGreaterThan(0)
    const ads = await call(simulator, token, "GET", `/campaigns/${campaigns[0]!.id}/adgroups/${adGroups[0]!.id}/ads`, { orgId: usOrg })
    expect(ads.status).toBe(200)
  })

  it("pages GET lists with limit/offset and runs find selectors", async () => {
    const campaign = decode(CampaignList, (await call(simulator, token, "GET", "/campaigns", { orgId: usOrg })).json).data![0]!
    const adGroup = decode(AdGroupList, (await call(simulator, token, "GET", `/campaigns/${campaign.id}/adgroups`, { orgId: usOrg })).json).data![0]!
    const path = `/campaigns/${campaign.id}/adgroups/${adGroup.id}/targetingkeywords`
    const all = decode(KeywordList, (await call(simulator, token, "GET", `${path}?limit=1000`, { orgId: usOrg })).json)
    const total = all.pagination!.totalResults
    expect(total).toBeGreaterThan(20)
    const paged: Array<number> = []
    for (let offset = 0; offset < total; offset += 7) {
      const page = decode(KeywordList, (await call(simulator, token, "GET", `${path}?limit=7&offset=${offset}`, { orgId: usOrg })).json)
      expect(page.pagination).toEqual({ totalResults: total, startIndex: offset, itemsPerPage: Math.min(7, total - offset) })
      paged.push(...page.data!.map((k) => k.id))
    }
    expect(paged).toEqual(all.data!.map((k) => k.id))
    const defaultPage = decode(KeywordList, (await call(simulator, token, "GET", path, { orgId: usOrg })).json)
    expect(defaultPage.data).toHaveLength(20)
    expect((await call(simulator, token, "GET", `${path}?limit=1001`, { orgId: usOrg })).status).toBe(400)

    const found = await call(simulator, token, "POST", "/campaigns/find", {
      orgId: usOrg,
      body: {
        conditions: [{ field: "biddingStrategy", operator: "EQUALS", values: ["MANUAL_CPT"] }],
        orderBy: [{ field: "name", sortOrder: "DESCENDING" }],
        pagination: { offset: 0, limit: 2 }
      }
    })
    const manual = decode(CampaignList, found.json)
    expect(manual.data).toHaveLength(2)
    expect(manual.data!.every((c) => c.biddingStrategy === "MANUAL_CPT")).toBe(true)
    expect(manual.data![0]!.name >= manual.data![1]!.name).toBe(true)
    expect(manual.pagination!.totalResults).toBeGreaterThan(2)

    const exact = decode(KeywordList, (await call(simulator, token, "POST", `/campaigns/${campaign.id}/adgroups/targetingkeywords/find`, {
      orgId: usOrg,
      body: { conditions: [{ field: "matchType", operator: "IN", values: ["EXACT"] }], pagination: { offset: 0, limit: 1000 } }
    })).json)
    expect(exact.data!.length).toBeGreaterThan(0)
    expect(exact.data!.every((k) => k.matchType === "EXACT" && k.campaignId === campaign.id)).toBe(true)
  })

  it("applies writes: later reads see them, deletes hide entities, read-only accounts get 403", async () => {
    const campaigns = decode(CampaignList, (await call(simulator, token, "GET", "/campaigns?limit=1000", { orgId: usOrg })).json).data!
    const campaign = campaigns.find((c) => c.status === "ENABLED" && c.biddingStrategy === "MANUAL_CPT")!
    const paused = await call(simulator, token, "PUT", `/campaigns/${campaign.id}`, {
      orgId: usOrg,
      body: { campaign: { status: "PAUSED", dailyBudgetAmount: { amount: "123.45", currency: "USD" } } }
    })
    expect(paused.status).toBe(200)
    const reread = decode(WireEnvelope(WireCampaign), (await call(simulator, token, "GET", `/campaigns/${campaign.id}`, { orgId: usOrg })).json).data!
    expect(reread.status).toBe("PAUSED")
    expect(reread.dailyBudgetAmount).toEqual({ amount: "123.45", currency: "USD" })
    expect(reread.name).toBe(campaign.name)

    const refused = await call(simulator, token, "PUT", `/campaigns/${campaign.id}`, {
      orgId: usOrg,
      body: { campaign: { biddingStrategy: "MAX_CONVERSIONS" } }
    })
    expect(refused.status).toBe(400)
    expect(errorsOf(refused)[0]?.field).toBe("campaign.targetCpa")

    const adGroup = decode(AdGroupList, (await call(simulator, token, "GET", `/campaigns/${campaign.id}/adgroups`, { orgId: usOrg })).json).data![0]!
    const keywordsPath = `/campaigns/${campaign.id}/adgroups/${adGroup.id}/targetingkeywords`
    const keyword = decode(KeywordList, (await call(simulator, token, "GET", keywordsPath, { orgId: usOrg })).json).data![0]!
    const updated = await call(simulator, token, "PUT", `${keywordsPath}/bulk`, {
      orgId: usOrg,
      body: [{ id: keyword.id, bidAmount: { amount: "2.35", currency: "USD" }, status: "PAUSED" }]
    })
    expect(updated.status).toBe(200)
    const after = decode(WireEnvelope(WireKeyword), (await call(simulator, token, "GET", `${keywordsPath}/${keyword.id}`, { orgId: usOrg })).json).data!
    expect(after.bidAmount).toEqual({ amount: "2.35", currency: "USD" })
    expect(after.status).toBe("PAUSED")

    const deleted = await call(simulator, token, "POST", `${keywordsPath}/delete/bulk`, { orgId: usOrg, body: [keyword.id] })
    expect(deleted.json).toMatchObject({ data: [keyword.id], error: null })
    const listed = decode(KeywordList, (await call(simulator, token, "GET", `${keywordsPath}?limit=1000`, { orgId: usOrg })).json).data!
    expect(listed.some((k) => k.id === keyword.id)).toBe(false)
    const byId = decode(WireEnvelope(WireKeyword), (await call(simulator, token, "GET", `${keywordsPath}/${keyword.id}`, { orgId: usOrg })).json).data!
    expect(byId.deleted).toBe(true)

    const readOnlyCampaign = decode(CampaignList, (await call(simulator, token, "GET", "/campaigns", { orgId: readOnlyOrg })).json).data![0]!
    const forbidden = await call(simulator, token, "PUT", `/campaigns/${readOnlyCampaign.id}`, {
      orgId: readOnlyOrg,
      body: { campaign: { status: "PAUSED" } }
    })
    expect(forbidden.status).toBe(403)
    expect(errorsOf(forbidden)[0]?.messageCode).toBe("FORBIDDEN")
  })

  it("answers bulk calls with 200, the good rows in data and one error per bad row naming its index", async () => {
    const campaigns = decode(CampaignList, (await call(simulator, token, "GET", "/campaigns?limit=1000", { orgId: usOrg })).json).data!
    const campaign = campaigns.find((c) => c.biddingStrategy === "MAX_CONVERSIONS")!
    const adGroup = decode(AdGroupList, (await call(simulator, token, "GET", `/campaigns/${campaign.id}/adgroups`, { orgId: usOrg })).json).data![0]!
    const path = `/campaigns/${campaign.id}/adgroups/${adGroup.id}/targetingkeywords/bulk`
    const reply = await call(simulator, token, "POST", path, {
      orgId: usOrg,
      body: [
        { text: "simulator fresh one", matchType: "EXACT" },
        { text: "simulator bid refused", matchType: "EXACT", bidAmount: { amount: "1.50", currency: "USD" } },
        { text: "simulator fresh two", matchType: "BROAD", bidAmount: null },
        { text: "simulator fresh one", matchType: "EXACT" },
        { text: "", matchType: "EXACT" }
      ]
    })
    expect(reply.status).toBe(200)
    const decoded = decode(KeywordList, reply.json)
    expect(decoded.data!.map((k) => k.text)).toEqual(["simulator fresh one", "simulator fresh two"])
    expect(decoded.data!.every((k) => k.bidAmount === null && k.adGroupId === adGroup.id)).toBe(true)
    const errors = decoded.error!.errors
    expect(errors.map((e) => Number(/^\[(\d+)\]/.exec(e.field ?? "")?.[1]))).toEqual([1, 3, 4])
    expect(errors[0]).toMatchObject({ messageCode: "INVALID_BID", field: "[1].bidAmount" })
    expect(errors[1]?.messageCode).toBe("DUPLICATE_KEYWORD")

    const immutable = await call(simulator, token, "PUT", path, {
      orgId: usOrg,
      body: [{ id: decoded.data![0]!.id, matchType: "BROAD" }, { id: decoded.data![1]!.id, status: "PAUSED" }]
    })
    const immutableReply = decode(KeywordList, immutable.json)
    expect(immutableReply.data!.map((k) => k.status)).toEqual(["PAUSED"])
    expect(immutableReply.error!.errors[0]?.field).toBe("[0].matchType")

    const tooMany = Array.from({ length: 1001 }, (_, i) => ({ text: `bulk limit ${i}`, matchType: "EXACT" }))
    expect((await call(simulator, token, "POST", path, { orgId: usOrg, body: tooMany })).status).toBe(400)
  })

  it("creates and deletes campaigns, ad groups, keywords up to the limit, negatives and ads", async () => {
    const apps = await call(simulator, token, "GET", "/search/apps?query=&returnOwnedApps=true", { orgId: usOrg })
    const adamId = (apps.json as { data: ReadonlyArray<{ adamId: number }> }).data[0]!.adamId
    const geo = await call(simulator, token, "GET", "/search/geo?query=cal&countrycode=US&entity=AdminArea", { orgId: usOrg })
    expect(geo.json).toMatchObject({ data: [{ id: "US|CA", entity: "AdminArea" }] })
    const newCampaign = {
      name: "Simulator test campaign",
      adamId,
      countriesOrRegions: ["US"],
      dailyBudgetAmount: { amount: "50.00", currency: "USD" },
      biddingStrategy: "MAX_CONVERSIONS"
    }
    const missingCpa = await call(simulator, token, "POST", "/campaigns", { orgId: usOrg, body: newCampaign })
    expect(missingCpa.status).toBe(400)
    expect(errorsOf(missingCpa)[0]?.field).toBe("targetCpa")
    const wrongCurrency = await call(simulator, token, "POST", "/campaigns", {
      orgId: usOrg,
      body: { ...newCampaign, biddingStrategy: "MANUAL_CPT", dailyBudgetAmount: { amount: "50.00", currency: "EUR" } }
    })
    expect(errorsOf(wrongCurrency)[0]?.field).toBe("dailyBudgetAmount.currency")
    const created = decode(WireEnvelope(WireCampaign), (await call(simulator, token, "POST", "/campaigns", {
      orgId: usOrg,
      body: { ...newCampaign, biddingStrategy: "MANUAL_CPT" }
    })).json).data!
    expect(created).toMatchObject({ name: newCampaign.name, status: "ENABLED", deleted: false, biddingStrategy: "MANUAL_CPT" })
    expect((await call(simulator, token, "POST", "/campaigns", { orgId: usOrg, body: { ...newCampaign, biddingStrategy: "MANUAL_CPT" } })).status).toBe(400)

    const adGroup = decode(WireEnvelope(WireAdGroup), (await call(simulator, token, "POST", `/campaigns/${created.id}/adgroups`, {
      orgId: usOrg,
      body: { name: "Limit group", defaultBidAmount: { amount: "1.25", currency: "USD" }, automatedKeywordsOptIn: true }
    })).json).data!
    expect(adGroup).toMatchObject({ campaignId: created.id, automatedKeywordsOptIn: true, defaultBidAmount: { amount: "1.25", currency: "USD" } })
    const groupPath = `/campaigns/${created.id}/adgroups/${adGroup.id}`

    const negative = await call(simulator, token, "POST", `${groupPath}/negativekeywords/bulk`, { orgId: usOrg, body: [{ text: "free", matchType: "BROAD" }] })
    expect((negative.json as { data: ReadonlyArray<unknown> }).data).toHaveLength(1)
    // 1 negative + 4,999 keywords fill the ad group; the 5,000th keyword is refused.
    let refused: ReadonlyArray<{ readonly messageCode: string; readonly field?: string | null | undefined }> = []
    for (let batch = 0; batch < 5; batch++) {
      const rows = Array.from({ length: 1000 }, (_, i) => ({ text: `limit keyword ${batch * 1000 + i}`, matchType: "EXACT" }))
      const reply = decode(KeywordList, (await call(simulator, token, "POST", `${groupPath}/targetingkeywords/bulk`, { orgId: usOrg, body: rows })).json)
      refused = [...refused, ...(reply.error?.errors ?? [])]
    }
    expect(refused).toEqual([expect.objectContaining({ messageCode: "KEYWORD_LIMIT_EXCEEDED", field: "[999]" })])

    const campaignNegatives = `/campaigns/${created.id}/negativekeywords`
    const createdNegatives = await call(simulator, token, "POST", `${campaignNegatives}/bulk`, {
      orgId: usOrg,
      body: [{ text: "cheap", matchType: "EXACT" }, { text: "cheap", matchType: "EXACT" }]
    })
    const negativeReply = createdNegatives.json as { data: ReadonlyArray<{ id: number; adGroupId: number | null }>; error: { errors: ReadonlyArray<{ field: string }> } }
    expect(negativeReply.data).toMatchObject([{ adGroupId: null }])
    expect(negativeReply.error.errors.map((e) => e.field)).toEqual(["[1].text"])
    const negativeId = negativeReply.data[0]!.id
    expect((await call(simulator, token, "POST", `${campaignNegatives}/delete/bulk`, { orgId: usOrg, body: [negativeId, 1] })).json)
      .toMatchObject({ data: [negativeId], error: { errors: [{ messageCode: "NOT_FOUND", field: "[1]" }] } })

    const ad = (await call(simulator, token, "POST", `${groupPath}/ads`, { orgId: usOrg, body: { creativeId: 4242, name: "CPP ad" } })).json as { data: { id: number } }
    const paused = await call(simulator, token, "PUT", `${groupPath}/ads/${ad.data.id}`, { orgId: usOrg, body: { status: "PAUSED" } })
    expect(paused.json).toMatchObject({ data: { status: "PAUSED", creativeType: "CUSTOM_PRODUCT_PAGE", creativeId: 4242 } })
    expect((await call(simulator, token, "DELETE", `${groupPath}/ads/${ad.data.id}`, { orgId: usOrg })).status).toBe(200)
    expect((await call(simulator, token, "GET", `${groupPath}/ads`, { orgId: usOrg })).json).toMatchObject({ data: [] })

    // New entities have no history: their metrics start today.
    const today = simulator.today(usOrg)
    expect(simulatorTotals(simulator, usOrg, "campaigns", isoDaysBefore(today, 10), isoDaysBefore(today, 1), { campaignId: created.id }).total).toEqual(ZERO)

    expect((await call(simulator, token, "DELETE", `/campaigns/${created.id}`, { orgId: usOrg })).status).toBe(200)
    expect((await call(simulator, token, "DELETE", `/campaigns/${created.id}`, { orgId: usOrg })).status).toBe(404)
    const listed = decode(CampaignList, (await call(simulator, token, "GET", "/campaigns?limit=1000", { orgId: usOrg })).json).data!
    expect(listed.some((c) => c.id === created.id)).toBe(false)
    const gone = decode(WireEnvelope(WireCampaign), (await call(simulator, token, "GET", `/campaigns/${created.id}`, { orgId: usOrg })).json).data!
    expect(gone).toMatchObject({ deleted: true, displayStatus: "DELETED" })
  })

  it("keeps report totals coherent across every level to the micro over 30 days", async () => {
    const today = simulator.today(usOrg)
    const window = { startTime: isoDaysBefore(today, 30), endTime: isoDaysBefore(today, 1), timeZone: "ORTZ" }
    const campaignReply = decode(ReportReply, (await call(simulator, token, "POST", "/reports/campaigns", {
      orgId: usOrg,
      body: { ...window, returnRowTotals: true, returnGrandTotals: true, selector: { pagination: { offset: 0, limit: 1000 } } }
    })).json)
    const campaignRows = campaignReply.data!.reportingDataResponse.row
    const grand = toMetrics(campaignReply.data!.reportingDataResponse.grandTotals!.total)
    expect(grand.spendMicros).toBeGreaterThan(0)
    expect(sum(campaignRows.map((row) => toMetrics(row.total)))).toEqual(grand)
    const { endTime, startTime } = window
    expect(simulatorTotals(simulator, usOrg, "campaigns", startTime, endTime).total).toEqual(grand)
    expect(simulatorTotals(simulator, String(usOrg), "ads", startTime, endTime).total).toEqual(grand)
    expect(simulatorTotals(simulator, usOrg, "searchTerms", startTime, endTime).total).toEqual(grand)

    const checkRow = (metrics: WireMetricsValue) => {
      expect(metrics.tapInstalls).toBeLessThanOrEqual(metrics.taps)
      expect(metrics.taps).toBeLessThanOrEqual(metrics.impressions)
      expect(microsFromDecimal(metrics.localSpend.amount) % 10_000).toBe(0)
    }
    let searchMatchTotal = ZERO
    for (const campaignRow of campaignRows) {
      const campaignId = campaignRow.metadata.campaignId!
      const campaignTotal = toMetrics(campaignRow.total)
      const body = { ...window, returnRowTotals: true }
      const adGroups = await reportRows(simulator, token, usOrg, `/reports/campaigns/${campaignId}/adgroups`, { ...body, granularity: "DAILY" })
      expect(sum(adGroups.map((row) => toMetrics(row.total)))).toEqual(campaignTotal)
      for (const row of adGroups) {
        checkRow(row.total!)
        expect(sum(row.granularity!.map((entry) => toMetrics(entry)))).toEqual(toMetrics(row.total))
      }
      const keywords = await reportRows(simulator, token, usOrg, `/reports/campaigns/${campaignId}/keywords`, body)
      const terms = await reportRows(simulator, token, usOrg, `/reports/campaigns/${campaignId}/searchterms`, body)
      const ads = await reportRows(simulator, token, usOrg, `/reports/campaigns/${campaignId}/ads`, body)
      for (const row of [...keywords, ...terms, ...ads]) checkRow(row.total!)
      expect(sum(terms.map((row) => toMetrics(row.total)))).toEqual(campaignTotal)
      expect(sum(ads.map((row) => toMetrics(row.total)))).toEqual(campaignTotal)
      const searchMatch = sum(terms.filter((row) => row.metadata.keywordId === null).map((row) => toMetrics(row.total)))
      searchMatchTotal = add(searchMatchTotal, searchMatch)
      expect(add(sum(keywords.map((row) => toMetrics(row.total))), searchMatch)).toEqual(campaignTotal)
      // Per ad group too: its keywords plus its Search Match terms.
      for (const adGroupRow of adGroups) {
        const id = adGroupRow.metadata.adGroupId
        const parts = [...keywords, ...terms.filter((row) => row.metadata.keywordId === null)].filter((row) => row.metadata.adGroupId === id)
        expect(sum(parts.map((row) => toMetrics(row.total)))).toEqual(toMetrics(adGroupRow.total))
      }
    }
    expect(add(simulatorTotals(simulator, usOrg, "keywords", startTime, endTime).total, searchMatchTotal)).toEqual(grand)
    expect(searchMatchTotal.impressions).toBeGreaterThan(0)
  })

  it("enforces the report rules and leaves out rows without metrics unless asked", async () => {
    const today = simulator.today(usOrg)
    const selector = { pagination: { offset: 0, limit: 1000 } }
    const post = (body: Readonly<Record<string, unknown>>) => call(simulator, token, "POST", "/reports/campaigns", { orgId: usOrg, body: { selector, ...body } })
    expect((await post({ startTime: isoDaysBefore(today, 95), endTime: isoDaysBefore(today, 1), granularity: "DAILY" })).status).toBe(400)
    expect((await post({ startTime: isoDaysBefore(today, 100), endTime: isoDaysBefore(today, 95), granularity: "DAILY" })).status).toBe(400)
    const grandWithGranularity = await post({ startTime: isoDaysBefore(today, 5), endTime: today, granularity: "DAILY", returnGrandTotals: true })
    expect(grandWithGranularity.status).toBe(400)
    expect(errorsOf(grandWithGranularity)[0]?.field).toBe("returnGrandTotals")
    expect((await post({ startTime: "2026-02-30", endTime: today })).status).toBe(400)
    const weekly = decode(ReportReply, (await post({ startTime: isoDaysBefore(today, 100), endTime: today, granularity: "WEEKLY", returnRowTotals: true })).json)
    for (const row of weekly.data!.reportingDataResponse.row) {
      expect(sum(row.granularity!.map(toMetrics))).toEqual(toMetrics(row.total))
    }

    const campaign = weekly.data!.reportingDataResponse.row[0]!.metadata.campaignId!
    // Search-term reports take only the ORTZ time zone (Apple's reference); the other levels take UTC too.
    const termsIn = (timeZone: string, level = "searchterms") =>
      call(simulator, token, "POST", `/reports/campaigns/${campaign}/${level}`, {
        orgId: usOrg,
        body: { selector, startTime: isoDaysBefore(today, 5), endTime: today, timeZone }
      })
    const utcTerms = await termsIn("UTC")
    expect(utcTerms.status).toBe(400)
    expect(errorsOf(utcTerms)[0]).toMatchObject({ field: "timeZone", message: expect.stringMatching(/ORTZ/) })
    expect((await termsIn("ORTZ")).status).toBe(200)
    expect((await termsIn("UTC", "keywords")).status).toBe(200)
    const keywordsBody = { startTime: isoDaysBefore(today, 2), endTime: isoDaysBefore(today, 2), returnRowTotals: true }
    const sparse = await reportRows(simulator, token, usOrg, `/reports/campaigns/${campaign}/keywords`, keywordsBody)
    const everything = await reportRows(simulator, token, usOrg, `/reports/campaigns/${campaign}/keywords`, { ...keywordsBody, returnRecordsWithNoMetrics: true })
    // Most keywords have no impressions on most days.
    expect(sparse.length).toBeGreaterThan(0)
    expect(sparse.length).toBeLessThan(everything.length / 2)
  })

  describe("faults", () => {
    it("429 with Retry-After through the control endpoint, firing once", async () => {
      const installed = await fetch(`${simulator.url}/_control/faults`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ kind: "status", status: 429, retryAfterSeconds: 7, path: "/campaigns$" })
      })
      expect(installed.status).toBe(200)
      const limited = await call(simulator, token, "GET", "/campaigns", { orgId: usOrg })
      expect(limited.status).toBe(429)
      expect(limited.headers.get("retry-after")).toBe("7")
      expect(errorsOf(limited)[0]?.messageCode).toBe("TOO_MANY_REQUESTS")
      expect((await call(simulator, token, "GET", "/campaigns", { orgId: usOrg })).status).toBe(200)
    })

    it("503 and 500 with the request id; a failure at the N-th matching call", async () => {
      simulator.control.addFaults([
        { kind: "status", status: 503, method: "GET", path: "/acls$" },
        { kind: "status", status: 500, method: "POST", path: "/reports/" }
      ])
      expect((await call(simulator, token, "GET", "/acls")).status).toBe(503)
      const failed = await call(simulator, token, "POST", "/reports/campaigns", {
        orgId: usOrg,
        body: { startTime: simulator.today(usOrg), endTime: simulator.today(usOrg), selector: {} }
      })
      expect(failed.status).toBe(500)
      expect(errorsOf(failed)[0]?.message).toContain(failed.headers.get("x-request-id")!)

      simulator.control.addFault({ kind: "status", status: 503, method: "GET", path: "/campaigns$", nth: 3 })
      const statuses: Array<number> = []
      for (let n = 0; n < 4; n++) statuses.push((await call(simulator, token, "GET", "/campaigns", { orgId: usOrg })).status)
      expect(statuses).toEqual([200, 200, 503, 200])
    })

    it("holds an answer past the client's timeout while the write still happens exactly once", async () => {
      const campaign = decode(CampaignList, (await call(simulator, token, "GET", "/campaigns", { orgId: usOrg })).json).data![1]!
      simulator.control.clearCalls()
      simulator.control.addFault({ kind: "timeout", delayMs: 1500, method: "PUT", path: "/campaigns/\\d+$" })
      await expect(call(simulator, token, "PUT", `/campaigns/${campaign.id}`, {
        orgId: usOrg,
        body: { campaign: { name: "Renamed while timing out" } },
        signal: AbortSignal.timeout(200)
      })).rejects.toThrow()
      const reread = decode(WireEnvelope(WireCampaign), (await call(simulator, token, "GET", `/campaigns/${campaign.id}`, { orgId: usOrg })).json).data!
      expect(reread.name).toBe("Renamed while timing out")
      const log = await (await fetch(`${simulator.url}/_control/calls?method=PUT&path=${encodeURIComponent("^/api/v5/campaigns/\\d+$")}`)).json() as {
        calls: ReadonlyArray<{ readonly status: number; readonly orgId: number; readonly faults: ReadonlyArray<string> }>
      }
      expect(log.calls).toHaveLength(1)
      expect(log.calls[0]).toMatchObject({ status: 200, orgId: usOrg, faults: ["timeout"] })

      simulator.control.addFault({ kind: "timeout", delayMs: 50, process: false, method: "PUT" })
      const gatewayTimeout = await call(simulator, token, "PUT", `/campaigns/${campaign.id}`, { orgId: usOrg, body: { campaign: { name: "Never applied" } } })
      expect(gatewayTimeout.status).toBe(504)
      const unchanged = decode(WireEnvelope(WireCampaign), (await call(simulator, token, "GET", `/campaigns/${campaign.id}`, { orgId: usOrg })).json).data!
      expect(unchanged.name).toBe("Renamed while timing out")
    })

    it("fails chosen rows of a bulk call", async () => {
      const campaign = decode(CampaignList, (await call(simulator, token, "GET", "/campaigns?limit=1000", { orgId: usOrg })).json).data!
        .find((c) => c.biddingStrategy === "MANUAL_CPT")!
      const adGroup = decode(AdGroupList, (await call(simulator, token, "GET", `/campaigns/${campaign.id}/adgroups`, { orgId: usOrg })).json).data![1]!
      simulator.control.addFault({ kind: "bulkRows", rows: [1], message: "row says no" })
      const reply = await call(simulator, token, "POST", `/campaigns/${campaign.id}/adgroups/${adGroup.id}/targetingkeywords/bulk`, {
        orgId: usOrg,
        body: ["fault row a", "fault row b", "fault row c"].map((text) => ({ text, matchType: "EXACT", bidAmount: { amount: "1.10", currency: "USD" } }))
      })
      expect(reply.status).toBe(200)
      const decoded = decode(KeywordList, reply.json)
      expect(decoded.data!.map((k) => k.text)).toEqual(["fault row a", "fault row c"])
      expect(decoded.error!.errors).toEqual([{ messageCode: "INTERNAL_ERROR", message: "row says no", field: "[1]" }])
    })

    it("refuses good credentials at the token endpoint, and expired tokens get 401", async () => {
      simulator.control.addFault({ kind: "tokenRefused" })
      const refused = await requestToken(simulator, clientSecret(simulator.credentials))
      expect(refused.status).toBe(401)
      expect(await refused.json()).toEqual({ error: "invalid_client" })
      expect((await requestToken(simulator, clientSecret(simulator.credentials))).status).toBe(200)

      const expired = await fetch(`${simulator.url}/_control/tokens/expire`, { method: "POST" })
      expect(((await expired.json()) as { expired: number }).expired).toBeGreaterThan(0)
      expect((await call(simulator, token, "GET", "/acls")).status).toBe(401)
      token = await tokenFor(simulator)
      expect((await call(simulator, token, "GET", "/acls")).status).toBe(200)
    })

    it("turns an account read-only, at once or at a matching call", async () => {
      const campaign = decode(CampaignList, (await call(simulator, token, "GET", "/campaigns", { orgId: usOrg })).json).data![0]!
      const pause = () => call(simulator, token, "PUT", `/campaigns/${campaign.id}`, { orgId: usOrg, body: { campaign: { status: "PAUSED" } } })
      simulator.control.addFault({ kind: "readOnly", orgId: usOrg })
      const acls = decode(WireEnvelope(Schema.Array(WireAcl)), (await call(simulator, token, "GET", "/acls")).json).data!
      expect(acls.find((acl) => acl.orgId === usOrg)!.roleNames).toEqual(["API Read Only"])
      expect((await pause()).status).toBe(403)

      const restored = await fetch(`${simulator.url}/_control/accounts/${usOrg}/roles`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ roleNames: ["API Account Manager"] })
      })
      expect(restored.status).toBe(200)
      expect((await pause()).status).toBe(200)

      simulator.control.addFault({ kind: "readOnly", orgId: usOrg, method: "PUT", nth: 2 })
      expect((await pause()).status).toBe(200)
      expect((await pause()).status).toBe(403)
      simulator.control.setRoles(usOrg, ["API Account Manager"])
    })

    it("restates the last three complete days when asked, keeping levels coherent", async () => {
      const today = simulator.today(usOrg)
      const body = {
        startTime: isoDaysBefore(today, 5),
        endTime: isoDaysBefore(today, 1),
        granularity: "DAILY",
        returnRowTotals: true,
        selector: { pagination: { offset: 0, limit: 1000 } }
      }
      const daily = async () => {
        const reply = decode(ReportReply, (await call(simulator, token, "POST", "/reports/campaigns", { orgId: usOrg, body })).json)
        const byDate = new Map<string, Metrics>()
        for (const row of reply.data!.reportingDataResponse.row) {
          for (const entry of row.granularity!) byDate.set(entry.date, add(byDate.get(entry.date) ?? ZERO, toMetrics(entry)))
        }
        return byDate
      }
      const before = await daily()
      const restatement = await fetch(`${simulator.url}/_control/restate`, { method: "POST" })
      expect(await restatement.json()).toEqual({ restatement: 1 })
      const after = await daily()
      expect(after.get(isoDaysBefore(today, 5))).toEqual(before.get(isoDaysBefore(today, 5)))
      expect(after.get(isoDaysBefore(today, 4))).toEqual(before.get(isoDaysBefore(today, 4)))
      const restated = [1, 2, 3].map((days) => isoDaysBefore(today, days))
      expect(restated.some((date) => after.get(date)!.impressions !== before.get(date)!.impressions)).toBe(true)
      const [start, end] = [body.startTime, body.endTime]
      expect(simulatorTotals(simulator, usOrg, "adGroups", start, end).total).toEqual(simulatorTotals(simulator, usOrg, "campaigns", start, end).total)
      expect(simulatorTotals(simulator, usOrg, "ads", start, end).total).toEqual(simulatorTotals(simulator, usOrg, "campaigns", start, end).total)
    })

    it("resets to the seeded world", async () => {
      const seeded = await startSimulator({ seed: 11, clock: () => now })
      try {
        const reset = await fetch(`${simulator.url}/_control/reset`, { method: "POST" })
        expect(reset.status).toBe(200)
        const list = async (target: Simulator, bearer: string) => (await call(target, bearer, "GET", "/campaigns?limit=1000", { orgId: usOrg })).json
        expect(await list(simulator, token)).toEqual(await list(seeded, await tokenFor(seeded)))
        expect(simulator.control.listCalls()).toHaveLength(1)
        expect(simulator.control.summary().restatement).toBe(0)
      } finally {
        await seeded.close()
      }
    })
  })
})

describe("simulator determinism", () => {
  it("answers identically for one seed and differently for another", async () => {
    const now = Date.now()
    const [a, b, c] = await Promise.all([
      startSimulator({ seed: 5, clock: () => now }),
      startSimulator({ seed: 5, clock: () => now }),
      startSimulator({ seed: 6, clock: () => now })
    ])
    try {
      const snapshot = async (simulator: Simulator) => {
        const token = await tokenFor(simulator)
        const org = simulator.accounts[0]!.orgId
        const campaigns = await call(simulator, token, "GET", "/campaigns?limit=1000", { orgId: org })
        const campaignId = decode(CampaignList, campaigns.json).data![0]!.id
        const report = await call(simulator, token, "POST", `/reports/campaigns/${campaignId}/searchterms`, {
          orgId: org,
          body: {
            startTime: isoDaysBefore(simulator.today(org), 60),
            endTime: simulator.today(org),
            granularity: "WEEKLY",
            returnRowTotals: true,
            selector: { pagination: { offset: 0, limit: 1000 }, orderBy: [{ field: "localSpend", sortOrder: "DESCENDING" }] }
          }
        })
        return {
          credentials: simulator.credentials,
          acls: (await call(simulator, token, "GET", "/acls")).json,
          campaigns: campaigns.json,
          report: report.json
        }
      }
      const [first, second, other] = await Promise.all([snapshot(a), snapshot(b), snapshot(c)])
      expect(second).toEqual(first)
      expect(other.acls).not.toEqual(first.acls)
      expect(other.credentials.privateKeyPem).not.toEqual(first.credentials.privateKeyPem)
    } finally {
      await Promise.all([a.close(), b.close(), c.close()])
    }
  })
})

describe("simulator as an Effect resource", () => {
  it("starts for a scope with faults from its options, and closes with the scope", async () => {
    const url = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const simulator = yield* acquireSimulator({ seed: 2, faults: [{ kind: "status", status: 503, path: "/acls$" }] })
      const statuses = yield* Effect.promise(async () => [
        (await fetch(`${simulator.apiUrl}/acls`)).status,
        (await fetch(`${simulator.apiUrl}/acls`)).status
      ])
      expect(statuses).toEqual([503, 401])
      return simulator.url
    })))
    await expect(fetch(`${url}/api/v5/acls`)).rejects.toThrow()
  })
})

describe("simulator (bench size)", () => {
  it("holds at least 100,000 keywords in one account and serves 1,000-row report pages", async () => {
    const simulator = await startSimulator({ size: "bench", seed: 3 })
    try {
      const bench = simulator.control.summary().accounts[0]!
      expect(bench.keywords).toBeGreaterThanOrEqual(100_000)

      const token = await tokenFor(simulator)
      const org = bench.orgId
      const campaigns = decode(CampaignList, (await call(simulator, token, "GET", "/campaigns?limit=1000", { orgId: org })).json).data!
      // Over HTTP: every campaign's keyword count, and one campaign paged through completely.
      let listed = 0
      for (const campaign of campaigns) {
        const page = decode(KeywordList, (await call(simulator, token, "POST", `/campaigns/${campaign.id}/adgroups/targetingkeywords/find`, {
          orgId: org,
          body: { pagination: { offset: 0, limit: 1 } }
        })).json)
        listed += page.pagination!.totalResults
      }
      expect(listed).toBeGreaterThanOrEqual(100_000)
      const ids = new Set<number>()
      for (let offset = 0; ; offset += 1000) {
        const page = decode(KeywordList, (await call(simulator, token, "POST", `/campaigns/${campaigns[0]!.id}/adgroups/targetingkeywords/find`, {
          orgId: org,
          body: { pagination: { offset, limit: 1000 } }
        })).json)
        for (const keyword of page.data!) ids.add(keyword.id)
        if (offset + 1000 >= page.pagination!.totalResults) break
      }
      expect(ids.size).toBe(5_000)

      const today = simulator.today(org)
      const report = await call(simulator, token, "POST", `/reports/campaigns/${campaigns[0]!.id}/keywords`, {
        orgId: org,
        body: {
          startTime: isoDaysBefore(today, 89),
          endTime: today,
          granularity: "DAILY",
          returnRowTotals: true,
          selector: { pagination: { offset: 0, limit: 1000 }, orderBy: [{ field: "localSpend", sortOrder: "DESCENDING" }] }
        }
      })
      const rows = decode(ReportReply, report.json).data!.reportingDataResponse.row
      expect(rows).toHaveLength(1000)
    } finally {
      await simulator.close()
    }
  })
})
