/**
 * The simulator's hours, through the v1 client (`hourlyCampaignMetrics`) and raw v1 reports over HTTP:
 * the hours of a day add up to its daily row to the micro at campaign, ad group and keyword level, today
 * has only its elapsed hours, a change made at hour H shows in the hours from H on only, the platform's
 * hourly window is enforced with its error shape, and the change history's event times follow the
 * simulated clock (docs/decisions/upstream.md).
 */
import { sign } from "node:crypto"
import { Effect, ManagedRuntime } from "effect"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { makeAppleSearchAdsClient } from "../src/AppleSearchAdsClient.ts"
import { microsFromDecimal } from "../src/Money.ts"
import type { HourlyCampaignMetrics, Metrics, UpstreamClient, UpstreamFailure } from "../src/Upstream.ts"
import type { RetryPolicy } from "../src/UpstreamHttp.ts"
import { type UpstreamTransport, UpstreamTransportLive } from "../src/UpstreamTransport.ts"
import { type Simulator, startSimulator } from "../src/simulator/Simulator.ts"
import { makeAppleAdsPlatformClient } from "../src/v1/AppleAdsPlatformClient.ts"

const POLICY: RetryPolicy = { maxRetries: 1, baseDelayMs: 20, maxDelayMs: 200, timeoutMs: 10_000 }
const DAY_MS = 86_400_000
const HOUR_MS = 3_600_000
// A fixed simulated "now": nothing moves unless the control API moves it.
const START = Date.parse("2026-11-20T20:00:00Z")
const SEED = 23

const isoPlus = (iso: string, days: number) => new Date(Date.parse(`${iso}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10)

const runtime = ManagedRuntime.make(UpstreamTransportLive)
const run = <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>): Promise<A> => runtime.runPromise(effect)
const failure = <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>): Promise<UpstreamFailure> => runtime.runPromise(Effect.flip(effect))

const started: Array<Simulator> = []
const start = async (): Promise<{ readonly simulator: Simulator; readonly client: UpstreamClient; readonly orgId: number }> => {
  const simulator = await startSimulator({ seed: SEED, clock: () => START })
  started.push(simulator)
  const client = await run(makeAppleAdsPlatformClient({ apiBaseUrl: simulator.apiV1Url, tokenUrl: simulator.tokenUrl }, simulator.credentials, POLICY))
  const orgId = simulator.accounts.find((account) => account.currency === "USD" && !account.readOnly)!.orgId
  return { simulator, client, orgId }
}
afterEach(async () => {
  await Promise.all(started.splice(0).map((simulator) => simulator.close()))
})
afterAll(() => runtime.dispose())

/** The account's hour now (0–23), in its time zone. */
const hourNow = (simulator: Simulator, orgId: number, epochMs: number): number => {
  const timeZone = simulator.accounts.find((account) => account.orgId === orgId)!.timeZone
  return Number(new Intl.DateTimeFormat("en-GB", { timeZone, hour: "2-digit", hourCycle: "h23" }).format(new Date(epochMs)))
}

const tokenFor = async (simulator: Simulator): Promise<string> => {
  const { clientId, keyId, privateKeyPem, teamId } = simulator.credentials
  const base64Url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
  const now = Math.floor(Date.now() / 1000)
  const unsigned = `${base64Url({ alg: "ES256", kid: keyId })}.${base64Url({ sub: clientId, iss: teamId, aud: "https://appleid.apple.com", iat: now, exp: now + 3600 })}`
  const signature = sign("sha256", Buffer.from(unsigned), { key: privateKeyPem, dsaEncoding: "ieee-p1363" }).toString("base64url")
  const parameters = new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: `${unsigned}.${signature}`, scope: "searchadsorg" })
  const response = await fetch(`${simulator.tokenUrl}?${parameters}`, { method: "POST" })
  return ((await response.json()) as { readonly access_token: string }).access_token
}

interface V1Period {
  readonly date: string
  readonly impressions: number
  readonly taps: number
  readonly tapInstalls: number
  readonly localSpend: { readonly amount: string }
}
interface V1Row {
  readonly metadata: { readonly id: number }
  readonly totalMetrics: V1Period
  readonly granularMetrics: ReadonlyArray<V1Period>
}

/** A raw v1 report over HTTP: status, and the rows (the bytes checked to be the JSON of their value). */
const v1Report = async (simulator: Simulator, orgId: number, level: string, campaignId: string, timeRange: Readonly<Record<string, string>>) => {
  const response = await fetch(`${simulator.apiV1Url}/reports/apps/${level}/query`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${await tokenFor(simulator)}`, "x-ap-context": `adAccountId=${orgId}` },
    body: JSON.stringify({ timeRange, filters: [{ field: "campaignId", operator: "EQUALS", value: campaignId }], pagination: { offset: 0, pageSize: 5000 } })
  })
  const text = await response.text()
  const json = JSON.parse(text) as { readonly result?: { readonly rows: ReadonlyArray<V1Row> }; readonly error?: { readonly code: string; readonly message: string } }
  expect(JSON.stringify(json)).toBe(text)
  return { status: response.status, json }
}

const metricsOf = (period: V1Period): Metrics => ({
  impressions: period.impressions,
  taps: period.taps,
  installs: period.tapInstalls,
  spendMicros: microsFromDecimal(period.localSpend.amount)
})

const add = (sums: Map<string, Metrics>, key: string, m: Metrics) => {
  const was = sums.get(key) ?? { impressions: 0, taps: 0, installs: 0, spendMicros: 0 }
  sums.set(key, { impressions: was.impressions + m.impressions, taps: was.taps + m.taps, installs: was.installs + m.installs, spendMicros: was.spendMicros + m.spendMicros })
}

/** Every level's hourly rows of one campaign, summed per row and day, equal its daily rows exactly. */
const expectHoursAddUp = async (simulator: Simulator, orgId: number, campaignId: string, from: string, to: string, hourNowToday: number) => {
  for (const level of ["campaigns", "adgroups", "keywords"]) {
    const hourly = await v1Report(simulator, orgId, level, campaignId, { start: from, end: to, granularity: "HOURLY" })
    const daily = await v1Report(simulator, orgId, level, campaignId, { start: from, end: to, granularity: "DAILY" })
    expect(hourly.status).toBe(200)
    expect(daily.status).toBe(200)
    const fromHours = new Map<string, Metrics>()
    const fromDays = new Map<string, Metrics>()
    for (const row of hourly.json.result!.rows) {
      for (const period of row.granularMetrics) {
        expect(period.date).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:00$/)
        const m = metricsOf(period)
        expect(m.installs).toBeLessThanOrEqual(m.taps)
        expect(m.taps).toBeLessThanOrEqual(m.impressions)
        if (period.date.startsWith(to)) expect(Number(period.date.slice(11, 13))).toBeLessThan(hourNowToday)
        add(fromHours, `${row.metadata.id} ${period.date.slice(0, 10)}`, m)
      }
    }
    for (const row of daily.json.result!.rows) for (const period of row.granularMetrics) add(fromDays, `${row.metadata.id} ${period.date}`, metricsOf(period))
    expect(fromHours.size).toBeGreaterThan(level === "campaigns" ? 3 : 10)
    expect(fromHours).toEqual(fromDays)
    // Row totals too (the same rows, the same totals).
    const totals = (rows: ReadonlyArray<V1Row>) => new Map(rows.map((row) => [row.metadata.id, metricsOf(row.totalMetrics)]))
    expect(totals(hourly.json.result!.rows)).toEqual(totals(daily.json.result!.rows))
  }
}

/** The campaign with the most spend yesterday and its spend then. */
const busiestCampaign = async (client: UpstreamClient, orgId: number, day: string) => {
  const page = await run(client.report(String(orgId), { level: "campaigns", startDate: day, endDate: day, granularity: "DAILY", offset: 0, limit: 1000 }))
  const row = [...page.rows].sort((a, b) => b.total.spendMicros - a.total.spendMicros)[0]!
  return { campaignId: row.campaignId, spendMicros: row.total.spendMicros }
}

const hoursOf = (hours: ReadonlyArray<HourlyCampaignMetrics>, campaignId: string, day: string) =>
  new Map(hours.filter((h) => h.campaignId === campaignId && h.hour.startsWith(`${day}T`)).map((h) => [Number(h.hour.slice(11)), h]))

describe("simulator hours", () => {
  it("hours add up to days to the micro at campaign, ad group and keyword level, across changes made inside a day; today has its elapsed hours", async () => {
    const { client, orgId, simulator } = await start()
    const today = simulator.today(orgId)
    // The changes fall inside the day (not at its first hour).
    expect(hourNow(simulator, orgId, START)).toBeGreaterThan(0)
    const busiest = await busiestCampaign(client, orgId, isoPlus(today, -1))
    const keywords = await run(client.campaignKeywords(String(orgId), busiest.campaignId))
    // Changes at hour H of today: a budget cut, a keyword bid raise, a keyword paused, a scenario.
    const usd = (micros: number) => ({ amount: (micros / 1_000_000).toFixed(2), currency: "USD" })
    const budget = Math.max(1_000_000, Math.floor(busiest.spendMicros / 3 / 1_000_000) * 1_000_000)
    expect(simulator.webUiWrite({ adAccountId: orgId, method: "PUT", path: `/v1/campaigns/${busiest.campaignId}`, body: { dailyBudget: { value: usd(budget) } } }).status).toBe(200)
    expect(simulator.webUiWrite({ adAccountId: orgId, method: "PUT", path: `/v1/keywords/${keywords[0]!.keywordId}`, body: { bid: usd(3_000_000) } }).status).toBe(200)
    expect(simulator.webUiWrite({ adAccountId: orgId, method: "PUT", path: `/v1/keywords/${keywords[1]!.keywordId}`, body: { status: "PAUSED" } }).status).toBe(200)
    expect(simulator.control.addScenario({ entityId: Number(busiest.campaignId), installsPerTapPercent: -30 })).not.toBeNull()
    simulator.control.advanceClock({ days: 1, hours: 2 })
    const nowMs = START + DAY_MS + 2 * HOUR_MS
    const newToday = simulator.today(orgId)
    expect(newToday).toBe(isoPlus(today, 1))

    // Through the client: every campaign's hours, summed per day, are its daily rows.
    const from = isoPlus(today, -3)
    const hours = await run(client.hourlyCampaignMetrics!(String(orgId), { startDate: from, endDate: newToday }))
    const daily = await run(client.report(String(orgId), { level: "campaigns", startDate: from, endDate: newToday, granularity: "DAILY", offset: 0, limit: 1000 }))
    const fromHours = new Map<string, Metrics>()
    for (const h of hours) {
      expect(h.hour).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}$/)
      add(fromHours, `${h.campaignId} ${h.hour.slice(0, 10)}`, h)
    }
    const fromDays = new Map<string, Metrics>()
    for (const row of daily.rows) for (const period of row.periods) add(fromDays, `${row.campaignId} ${period.date}`, period)
    expect(fromHours).toEqual(fromDays)
    // Today: its hours before now only, and some of them.
    const todayHours = hours.filter((h) => h.hour.startsWith(`${newToday}T`)).map((h) => Number(h.hour.slice(11)))
    expect(todayHours.length).toBeGreaterThan(0)
    expect(Math.max(...todayHours)).toBeLessThan(hourNow(simulator, orgId, nowMs))
    // Ordered by campaign (as listed), then hour.
    const order = hours.map((h) => `${h.campaignId} ${h.hour}`)
    const rank = new Map(daily.rows.map((row, index) => [row.campaignId, index]))
    expect([...order].sort((a, b) => rank.get(a.split(" ")[0]!)! - rank.get(b.split(" ")[0]!)! || a.localeCompare(b))).toEqual(order)

    // Every level of the changed campaign, over the day of the changes.
    await expectHoursAddUp(simulator, orgId, busiest.campaignId, from, newToday, hourNow(simulator, orgId, nowMs))
  })

  it("a budget cut at hour H leaves the hours before H as they were and lowers the spend of the hours after", async () => {
    const cut = await start()
    const untouched = await start()
    const orgId = cut.orgId
    const today = cut.simulator.today(orgId)
    const hour = hourNow(cut.simulator, orgId, START)
    const busiest = await busiestCampaign(cut.client, orgId, isoPlus(today, -1))
    const budget = Math.max(1_000_000, Math.floor(busiest.spendMicros / 10 / 1_000_000) * 1_000_000)
    await run(cut.client.updateCampaign(String(orgId), busiest.campaignId, { dailyBudgetMicros: budget }))
    for (const { simulator } of [cut, untouched]) simulator.control.advanceClock({ days: 1 })

    const range = { startDate: today, endDate: isoPlus(today, 1) }
    const a = hoursOf(await run(cut.client.hourlyCampaignMetrics!(String(orgId), range)), busiest.campaignId, today)
    const b = hoursOf(await run(untouched.client.hourlyCampaignMetrics!(String(orgId), range)), busiest.campaignId, today)
    let before = 0
    let afterCut = 0
    let afterUncut = 0
    for (let h = 0; h < 24; h++) {
      if (h < hour) {
        expect(a.get(h)).toEqual(b.get(h))
        before += a.get(h)?.spendMicros ?? 0
      } else {
        expect(a.get(h)?.spendMicros ?? 0).toBeLessThanOrEqual(b.get(h)?.spendMicros ?? 0)
        afterCut += a.get(h)?.spendMicros ?? 0
        afterUncut += b.get(h)?.spendMicros ?? 0
      }
    }
    expect(before).toBeGreaterThan(0)
    expect(afterCut).toBeGreaterThan(0)
    expect(afterCut).toBeLessThan(afterUncut / 2)
    // The next day, capped all day: at most the budget by now.
    const next = [...hoursOf(await run(cut.client.hourlyCampaignMetrics!(String(orgId), range)), busiest.campaignId, isoPlus(today, 1)).values()]
    expect(next.reduce((sum, h) => sum + h.spendMicros, 0)).toBeLessThanOrEqual(budget)
  })

  it("refuses hourly ranges outside the platform's window with its error shape, and ad and search-term reports by hour", async () => {
    const { client, orgId, simulator } = await start()
    const today = simulator.today(orgId)
    const old = await failure(client.hourlyCampaignMetrics!(String(orgId), { startDate: isoPlus(today, -31), endDate: isoPlus(today, -30) }))
    expect(old._tag).toBe("UpstreamError")
    expect(old.message).toContain("HOURLY reports start within the last 30 days")
    const wide = await failure(client.hourlyCampaignMetrics!(String(orgId), { startDate: isoPlus(today, -8), endDate: today }))
    expect(wide._tag).toBe("UpstreamError")
    expect(wide.message).toContain("HOURLY reports span at most 7 days")
    // The widest allowed: 7 days apart, the start 30 days back.
    expect((await run(client.hourlyCampaignMetrics!(String(orgId), { startDate: isoPlus(today, -30), endDate: isoPlus(today, -23) }))).length).toBeGreaterThan(0)

    const campaignId = (await busiestCampaign(client, orgId, isoPlus(today, -1))).campaignId
    for (const level of ["ads", "searchterms"]) {
      const refused = await v1Report(simulator, orgId, level, campaignId, { start: today, end: today, granularity: "HOURLY" })
      expect(refused.status).toBe(400)
      expect(refused.json.error).toMatchObject({ message: `${level} reports do not support HOURLY granularity` })
    }
    // v5 has no hourly read.
    const v5 = await run(makeAppleSearchAdsClient({ apiBaseUrl: simulator.apiUrl, tokenUrl: simulator.tokenUrl }, simulator.credentials, POLICY))
    expect(v5.hourlyCampaignMetrics).toBeUndefined()
  })

  it("stamps change-history events with the simulated clock once it has been advanced, for API and web UI writes", async () => {
    const { client, orgId, simulator } = await start()
    const campaigns = await run(client.campaigns(String(orgId)))
    simulator.control.advanceClock({ days: 3, hours: 5 })
    const advanced = START + 3 * DAY_MS + 5 * HOUR_MS
    await run(client.updateCampaign(String(orgId), campaigns[0]!.campaignId, { name: `${campaigns[0]!.name} (renamed)` }))
    const response = await fetch(`${simulator.url}/_control/web-ui`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ adAccountId: orgId, method: "PUT", path: `/v1/campaigns/${campaigns[1]!.campaignId}`, body: { status: "PAUSED" } })
    })
    expect(response.status).toBe(200)

    const changes = await run(client.changeHistory!(String(orgId), new Date(START).toISOString()))
    const api = changes.find((change) => change.entityId === campaigns[0]!.campaignId)!
    const web = changes.find((change) => change.entityId === campaigns[1]!.campaignId)!
    expect(api.userType).toBe("CUSTOMER_API")
    expect(web.userType).toBe("CUSTOMER")
    // The advanced clock's instant (each later transaction strictly after the one before).
    expect(api.eventTime).toBe(new Date(advanced).toISOString())
    expect(Date.parse(web.eventTime)).toBeGreaterThan(advanced)
    expect(Date.parse(web.eventTime)).toBeLessThan(advanced + 1000)
  })
})
