/**
 * The simulator's report pages as bytes: written straight from the metric vectors (SimulatorReportJson),
 * they must be exactly what JSON.stringify writes for the same value, in both API versions, at every
 * level and granularity and in a currency without minor units. A page's rows are computed once per
 * request and kept for the next pages (SimulatorReports' row cache): every change that can alter a report
 * (writes of either version, the web UI, restatement, reset, the clock) must show on the next read.
 */
import { sign } from "node:crypto"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { WireEnvelope, WireReport } from "../src/Wire.ts"
import { type Simulator, startSimulator } from "../src/simulator/Simulator.ts"

const DAY_MS = 86_400_000
const base64Url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

const tokenFor = async (simulator: Simulator): Promise<string> => {
  const { clientId, keyId, privateKeyPem, teamId } = simulator.credentials
  const now = Math.floor(Date.now() / 1000)
  const unsigned = `${base64Url({ alg: "ES256", kid: keyId })}.${
    base64Url({ sub: clientId, iss: teamId, aud: "https://appleid.apple.com", iat: now, exp: now + 3600 })
  }`
  const signature = sign("sha256", Buffer.from(unsigned), { key: privateKeyPem, dsaEncoding: "ieee-p1363" }).toString("base64url")
  const parameters = new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: `${unsigned}.${signature}`, scope: "searchadsorg" })
  const response = await fetch(`${simulator.tokenUrl}?${parameters}`, { method: "POST" })
  return ((await response.json()) as { readonly access_token: string }).access_token
}

interface Page {
  readonly status: number
  readonly text: string
  readonly json: unknown
}

const isoDaysBefore = (iso: string, days: number) => new Date(Date.parse(iso) - days * DAY_MS).toISOString().slice(0, 10)

interface ReportRowJson {
  readonly metadata: Readonly<Record<string, unknown>>
  readonly granularity?: ReadonlyArray<{ readonly date: string; readonly impressions: number }>
  readonly granularMetrics?: ReadonlyArray<{ readonly date: string; readonly impressions: number }>
}

/** The rows of a v5 (`data.reportingDataResponse.row`) or v1 (`result.rows`) page. */
const rowsOf = (page: Page): ReadonlyArray<ReportRowJson> => {
  const json = page.json as { readonly data?: { readonly reportingDataResponse: { readonly row: ReadonlyArray<ReportRowJson> } }; readonly result?: { readonly rows: ReadonlyArray<ReportRowJson> } }
  return json.data?.reportingDataResponse.row ?? json.result?.rows ?? []
}

/** Impressions on `date` per row id (`idField` of the v5 metadata). */
const impressionsOn = (page: Page, idField: string, date: string): Map<unknown, number> =>
  new Map(rowsOf(page).map((row) => [row.metadata[idField], (row.granularity ?? row.granularMetrics ?? []).find((entry) => entry.date === date)?.impressions ?? 0]))

describe("simulator report pages", () => {
  let simulator: Simulator
  let token: string
  let usOrg: number
  let jpOrg: number
  let today: string
  // The simulated clock: moved by one test, put back after.
  const start = Date.parse("2026-11-20T20:00:00Z")
  let now = start

  const send = async (method: string, path: string, context: string | null, body?: unknown): Promise<Page> => {
    const headers: Record<string, string> = { "content-type": "application/json", authorization: `Bearer ${token}` }
    if (context !== null) headers["x-ap-context"] = context
    const response = await fetch(`${simulator.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const bytes = Buffer.from(await response.arrayBuffer())
    expect(response.headers.get("content-length")).toBe(String(bytes.length))
    const text = bytes.toString("utf8")
    return { status: response.status, text, json: JSON.parse(text) }
  }
  const v5 = (orgId: number, path: string, body: unknown) => send("POST", `/api/v5${path}`, `orgId=${orgId}`, body)
  const v1 = (orgId: number, level: string, body: unknown) => send("POST", `/v1/reports/apps/${level}/query`, `adAccountId=${orgId}`, body)
  const campaignIds = async (orgId: number) =>
    ((await send("GET", "/api/v5/campaigns?limit=1000", `orgId=${orgId}`)).json as { readonly data: ReadonlyArray<{ readonly id: number }> }).data.map((c) => c.id)

  beforeAll(async () => {
    simulator = await startSimulator({ seed: 11, clock: () => now })
    token = await tokenFor(simulator)
    usOrg = simulator.accounts.find((account) => account.currency === "USD")!.orgId
    jpOrg = simulator.accounts.find((account) => account.currency === "JPY")!.orgId
    today = simulator.today(usOrg)
  })
  afterAll(() => simulator.close())

  it("writes every page exactly as JSON.stringify writes its value: v5 and v1, every level and granularity, cents and yen", async () => {
    const canonical = (page: Page) => {
      expect(page.status).toBe(200)
      expect(JSON.stringify(page.json)).toBe(page.text)
    }
    let entries = 0
    for (const orgId of [usOrg, jpOrg]) {
      const accountToday = simulator.today(orgId)
      const campaigns = await campaignIds(orgId)
      const ranges = [
        { granularity: "DAILY", startTime: isoDaysBefore(accountToday, 40), endTime: accountToday },
        { granularity: "WEEKLY", startTime: isoDaysBefore(accountToday, 130), endTime: accountToday },
        { granularity: "MONTHLY", startTime: isoDaysBefore(accountToday, 130), endTime: accountToday },
        { startTime: isoDaysBefore(accountToday, 130), endTime: accountToday }
      ]
      for (const range of ranges) {
        for (const options of [{}, { returnRowTotals: true }, { returnRowTotals: true, returnRecordsWithNoMetrics: true }]) {
          const body = { ...range, ...options, selector: { orderBy: [{ field: "avgCPT", sortOrder: "DESCENDING" }], pagination: { offset: 0, limit: 1000 } } }
          canonical(await v5(orgId, "/reports/campaigns", body))
          for (const level of ["adgroups", "keywords", "searchterms", "ads"]) {
            const page = await v5(orgId, `/reports/campaigns/${campaigns[0]!}/${level}`, body)
            canonical(page)
            Schema.decodeUnknownSync(WireEnvelope(WireReport))(page.json)
            entries += rowsOf(page).reduce((n, row) => n + (row.granularity?.length ?? 0), 0)
          }
        }
        if (range.granularity === undefined) canonical(await v5(orgId, "/reports/campaigns", { ...range, returnGrandTotals: true, selector: {} }))
        for (const level of ["campaigns", "adgroups", "keywords", "searchterms", "ads"]) {
          const page = await v1(orgId, level, {
            timeRange: { start: range.startTime, end: range.endTime, ...(range.granularity !== undefined ? { granularity: range.granularity } : {}) },
            filters: [level === "campaigns"
              ? { field: "campaignId", operator: "IN", value: campaigns.map(String) }
              : { field: "campaignId", operator: "EQUALS", value: String(campaigns[0]!) }],
            pagination: { offset: 1, pageSize: 2500 }
          })
          canonical(page)
          entries += rowsOf(page).reduce((n, row) => n + (row.granularMetrics?.length ?? 0), 0)
        }
      }
    }
    expect(entries).toBeGreaterThan(10_000)
  })

  it("answers a report asked for through the in-process web UI with its value, as over HTTP", async () => {
    const campaigns = await campaignIds(usOrg)
    const body = {
      timeRange: { start: isoDaysBefore(today, 10), end: today, granularity: "DAILY" },
      filters: [{ field: "campaignId", operator: "IN", value: campaigns.map(String) }]
    }
    const answer = simulator.webUiWrite({ adAccountId: usOrg, method: "POST", path: "/v1/reports/apps/campaigns/query", body })
    expect(answer.status).toBe(200)
    expect(answer.body).toEqual((await v1(usOrg, "campaigns", body)).json)
  })

  it("shows every change on the next read of a report already read: v5 and v1 writes, the web UI, restatement, the clock and reset", async () => {
    const [campaign] = await campaignIds(usOrg)
    const daily = { granularity: "DAILY", startTime: isoDaysBefore(today, 5), endTime: today, returnRowTotals: true }
    const read = (level: string) => v5(usOrg, `/reports/campaigns/${campaign!}/${level}`, { ...daily, selector: { pagination: { offset: 0, limit: 1000 } } })
    const readV1 = (level: string) =>
      v1(usOrg, level, {
        timeRange: { start: daily.startTime, end: daily.endTime, granularity: "DAILY" },
        filters: [{ field: "campaignId", operator: "EQUALS", value: String(campaign!) }]
      })
    const first = { adgroups: await read("adgroups"), keywords: await read("keywords"), v1: await readV1("adgroups") }
    // Read again unchanged: the same bytes (from the kept rows).
    expect((await read("adgroups")).text).toBe(first.adgroups.text)
    expect((await readV1("adgroups")).text).toBe(first.v1.text)

    // A change made in hour H applies from H on, and H has not passed: an hour later, the paused entity has
    // today what it had at H (no hour H). Each write comes between two reads an hour later (the first one's
    // rows kept), at H: the second read must not be served the kept rows.
    const afterAnHour = async (read: () => Promise<Page>): Promise<Page> => {
      now = start + 3_600_000
      try {
        return await read()
      } finally {
        now = start
      }
    }
    const todayOf = (page: Page, idField: string, id: number) => impressionsOn(page, idField, today).get(id)
    const growing = (at: Page, later: Page, idField: string) =>
      [...impressionsOn(later, idField, today)].filter(([id, n]) => n > (impressionsOn(at, idField, today).get(id) ?? 0)).map(([id]) => Number(id))
    const later = { adgroups: await afterAnHour(() => read("adgroups")), keywords: await afterAnHour(() => read("keywords")), v1: await afterAnHour(() => readV1("adgroups")) }
    const [viaV1, viaWebUi] = growing(first.adgroups, later.adgroups, "adGroupId")
    const [keyword] = growing(first.keywords, later.keywords, "keywordId")
    expect(viaV1 !== undefined && viaWebUi !== undefined && keyword !== undefined).toBe(true)

    // A v1 ad group write: the ad group serves no more from hour H on, in both versions' reports.
    expect((await send("PUT", `/v1/adgroups/${viaV1!}`, `adAccountId=${usOrg}`, { status: "PAUSED" })).status).toBe(200)
    expect(todayOf(await afterAnHour(() => read("adgroups")), "adGroupId", viaV1!)).toBe(todayOf(first.adgroups, "adGroupId", viaV1!))
    const v1Page = await afterAnHour(() => readV1("adgroups"))
    expect(todayOf(v1Page, "id", viaV1!)).toBe(todayOf(first.v1, "id", viaV1!))
    expect(v1Page.text).not.toBe(later.v1.text)

    // A web UI write.
    expect(simulator.webUiWrite({ adAccountId: usOrg, method: "PUT", path: `/v1/adgroups/${viaWebUi!}`, body: { status: "PAUSED" } }).status).toBe(200)
    expect(todayOf(await afterAnHour(() => read("adgroups")), "adGroupId", viaWebUi!)).toBe(todayOf(first.adgroups, "adGroupId", viaWebUi!))

    // A v5 keyword write.
    const keywordRow = rowsOf(first.keywords).find((row) => row.metadata["keywordId"] === keyword)!
    const keywordPath = `/api/v5/campaigns/${campaign!}/adgroups/${String(keywordRow.metadata["adGroupId"])}/targetingkeywords/bulk`
    expect((await send("PUT", keywordPath, `orgId=${usOrg}`, [{ id: keyword, status: "PAUSED" }])).status).toBe(200)
    expect(todayOf(await afterAnHour(() => read("keywords")), "keywordId", keyword!)).toBe(todayOf(first.keywords, "keywordId", keyword!))
    const keywordsAfter = await read("keywords")

    // Restatement (over HTTP and in process): the last three complete days move.
    const restatedDays = [1, 2, 3].map((days) => isoDaysBefore(today, days))
    const moved = (before: Page, after: Page) =>
      restatedDays.some((date) => [...impressionsOn(before, "keywordId", date)].some(([id, n]) => impressionsOn(after, "keywordId", date).get(id) !== n))
    expect((await fetch(`${simulator.url}/_control/restate`, { method: "POST" })).status).toBe(200)
    const restated = await read("keywords")
    expect(moved(keywordsAfter, restated)).toBe(true)
    simulator.control.restate()
    expect(moved(restated, await read("keywords"))).toBe(true)

    // The clock: an hour later, today has more of its day behind it.
    const beforeHour = await read("adgroups")
    now = start + 3_600_000
    const total = (page: Page) => [...impressionsOn(page, "adGroupId", today).values()].reduce((a, b) => a + b, 0)
    expect(total(await read("adgroups"))).toBeGreaterThan(total(beforeHour))

    // Reset (at the first read's hour): the seeded world's answers again.
    now = start
    expect((await fetch(`${simulator.url}/_control/reset`, { method: "POST" })).status).toBe(200)
    expect((await read("adgroups")).text).toBe(first.adgroups.text)
    expect((await read("keywords")).text).toBe(first.keywords.text)
    expect((await readV1("adgroups")).text).toBe(first.v1.text)
  })
})
