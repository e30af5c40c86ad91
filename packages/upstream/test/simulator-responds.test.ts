/**
 * The simulator's numbers respond to changes, from the simulated hour of the change on: a daily budget
 * caps a campaign's spend (paced over today), a bid moves taps and CPT by the documented elasticity, a
 * pause stops an entity, scenarios change installs per tap, and the clock moves through the control
 * API. Days before a change keep their numbers, totals agree to the micro at every level (v5 and v1)
 * and one seed gives the same numbers. Changes are made at 20:00, so the first whole day after one is
 * the next day (the hours of the day of a change: simulator-hourly.test.ts).
 */
import { afterEach, describe, expect, it } from "vitest"
import { microsFromDecimal } from "../src/Money.ts"
import type { Metrics } from "../src/Upstream.ts"
import { type Simulator, simulatorTotals, startSimulator } from "../src/simulator/Simulator.ts"
import { CPT_ELASTICITY, elapsedShare, TAP_ELASTICITY } from "../src/simulator/SimulatorMetrics.ts"

const DAY_MS = 86_400_000
// A fixed simulated "now" (20:00 UTC): nothing moves unless the control API moves it.
const START = Date.parse("2026-11-20T20:00:00Z")
const SEED = 23

const isoPlus = (iso: string, days: number) => new Date(Date.parse(iso) + days * DAY_MS).toISOString().slice(0, 10)

const started: Array<Simulator> = []
const start = async (): Promise<Simulator> => {
  const simulator = await startSimulator({ seed: SEED, clock: () => START })
  started.push(simulator)
  return simulator
}
afterEach(async () => {
  await Promise.all(started.splice(0).map((simulator) => simulator.close()))
})

const usOrgOf = (simulator: Simulator) => simulator.accounts.find((account) => account.currency === "USD" && !account.readOnly)!.orgId

const dayTotals = (simulator: Simulator, orgId: number, level: "campaigns" | "keywords", day: string) =>
  simulatorTotals(simulator, orgId, level, day, day).rows

/** The keyword with the most taps on `day` and its ids. */
const busiestKeyword = (simulator: Simulator, orgId: number, day: string) => {
  const rows = [...dayTotals(simulator, orgId, "keywords", day)].sort((a, b) => b.total.taps - a.total.taps)
  const row = rows[0]!
  return { campaignId: row.campaignId, adGroupId: row.adGroupId!, keywordId: row.keywordId!, total: row.total }
}

const v1Write = (simulator: Simulator, orgId: number, path: string, body: unknown) => {
  const answer = simulator.webUiWrite({ adAccountId: orgId, method: "PUT", path, body })
  expect(answer.status).toBe(200)
}

const usd = (micros: number) => ({ amount: (micros / 1_000_000).toFixed(2), currency: "USD" })

const control = async (simulator: Simulator, path: string, body: unknown): Promise<{ readonly status: number; readonly json: unknown }> => {
  const response = await fetch(`${simulator.url}/_control${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  return { status: response.status, json: await response.json() }
}

const advanceDays = async (simulator: Simulator, days: number) => {
  const answer = await control(simulator, "/clock/advance", { days })
  expect(answer.status).toBe(200)
}

const keywordOn = (simulator: Simulator, orgId: number, keywordId: string, day: string): Metrics =>
  dayTotals(simulator, orgId, "keywords", day).find((row) => row.keywordId === keywordId)?.total ??
    { impressions: 0, taps: 0, installs: 0, spendMicros: 0 }

const campaignOn = (simulator: Simulator, orgId: number, campaignId: string, day: string): Metrics =>
  simulatorTotals(simulator, orgId, "campaigns", day, day, { campaignId }).total

/** Every level's total over the range is the same, to the micro, and the v1 report rows add up to it. */
const expectCoherent = (simulator: Simulator, orgId: number, from: string, to: string) => {
  const campaigns = simulatorTotals(simulator, orgId, "campaigns", from, to)
  expect(campaigns.total.spendMicros).toBeGreaterThan(0)
  expect(simulatorTotals(simulator, orgId, "adGroups", from, to).total).toEqual(campaigns.total)
  expect(simulatorTotals(simulator, orgId, "ads", from, to).total).toEqual(campaigns.total)
  expect(simulatorTotals(simulator, orgId, "searchTerms", from, to).total).toEqual(campaigns.total)
  const keywords = simulatorTotals(simulator, orgId, "keywords", from, to).total
  const searchMatch = simulatorTotals(simulator, orgId, "searchTerms", from, to).rows
    .filter((row) => row.keywordId === null)
    .reduce((sum, row) => sum + row.total.spendMicros, 0)
  expect(keywords.spendMicros + searchMatch).toBe(campaigns.total.spendMicros)
  const v1 = simulator.webUiWrite({
    adAccountId: orgId,
    method: "POST",
    path: "/v1/reports/apps/campaigns/query",
    body: {
      timeRange: { start: from, end: to },
      filters: [{ field: "campaignId", operator: "IN", value: campaigns.rows.map((row) => row.campaignId) }],
      pagination: { offset: 0, pageSize: 1000 }
    }
  })
  expect(v1.status).toBe(200)
  const rows = (v1.body as { readonly result: { readonly rows: ReadonlyArray<{ readonly totalMetrics: { readonly taps: number; readonly tapInstalls: number; readonly localSpend: { readonly amount: string } } }> } }).result.rows
  expect(rows.reduce((sum, row) => sum + microsFromDecimal(row.totalMetrics.localSpend.amount), 0)).toBe(campaigns.total.spendMicros)
  expect(rows.reduce((sum, row) => sum + row.totalMetrics.taps, 0)).toBe(campaigns.total.taps)
  expect(rows.reduce((sum, row) => sum + row.totalMetrics.tapInstalls, 0)).toBe(campaigns.total.installs)
}

describe("simulator numbers respond to changes", () => {
  it("advancing the clock by one day adds exactly one day of metrics and leaves the days before alone", async () => {
    const simulator = await start()
    const orgId = usOrgOf(simulator)
    const today = simulator.today(orgId)
    const before = simulatorTotals(simulator, orgId, "campaigns", isoPlus(today, -30), isoPlus(today, -1))
    expect(simulatorTotals(simulator, orgId, "campaigns", isoPlus(today, 1), isoPlus(today, 1)).total.impressions).toBe(0)
    const partialToday = simulatorTotals(simulator, orgId, "campaigns", today, today).total

    await advanceDays(simulator, 1)

    expect(simulator.today(orgId)).toBe(isoPlus(today, 1))
    expect(simulatorTotals(simulator, orgId, "campaigns", isoPlus(today, -30), isoPlus(today, -1))).toEqual(before)
    // The day that was today is now complete (more than its first hours), and the new today has its first hours.
    expect(simulatorTotals(simulator, orgId, "campaigns", today, today).total.impressions).toBeGreaterThan(partialToday.impressions)
    expect(simulatorTotals(simulator, orgId, "campaigns", isoPlus(today, 1), isoPlus(today, 1)).total.impressions).toBeGreaterThan(0)
    expect(simulatorTotals(simulator, orgId, "campaigns", isoPlus(today, 2), isoPlus(today, 2)).total.impressions).toBe(0)
    const summary = await (await fetch(`${simulator.url}/_control/summary`)).json() as { readonly advancedMs: number }
    expect(summary.advancedMs).toBe(DAY_MS)
    // Hours work too, and the clock never moves back.
    expect((await control(simulator, "/clock/advance", { hours: 2 })).json).toMatchObject({ advancedMs: DAY_MS + 2 * 3_600_000 })
    expect((await control(simulator, "/clock/advance", { hours: -1 })).status).toBe(400)
  })

  it("a budget cut lowers the next days' spend and never past the cap, paced over today", async () => {
    const cut = await start()
    const untouched = await start()
    const orgId = usOrgOf(cut)
    const today = cut.today(orgId)
    const yesterday = isoPlus(today, -1)
    const campaigns = [...dayTotals(cut, orgId, "campaigns", yesterday)].sort((a, b) => b.total.spendMicros - a.total.spendMicros)
    const campaignId = campaigns[0]!.campaignId
    const history = simulatorTotals(cut, orgId, "campaigns", isoPlus(today, -20), yesterday, { campaignId }).total
    // A tenth of what it spent yesterday, in whole dollars.
    const budget = Math.max(1_000_000, Math.floor(campaigns[0]!.total.spendMicros / 10 / 1_000_000) * 1_000_000)
    v1Write(cut, orgId, `/v1/campaigns/${campaignId}`, { dailyBudget: { value: usd(budget) } })
    await advanceDays(cut, 2)
    await advanceDays(untouched, 2)

    // The day of the cut spent at the old budget until 20:00, less after.
    expect(campaignOn(cut, orgId, campaignId, today).spendMicros).toBeLessThan(campaignOn(untouched, orgId, campaignId, today).spendMicros)
    for (const day of [isoPlus(today, 1)]) {
      const spent = campaignOn(cut, orgId, campaignId, day)
      const uncapped = campaignOn(untouched, orgId, campaignId, day)
      expect(spent.spendMicros).toBeLessThanOrEqual(budget)
      expect(spent.spendMicros).toBeGreaterThan(budget * 0.9)
      expect(spent.spendMicros).toBeLessThan(uncapped.spendMicros)
      expect(spent.taps).toBeLessThan(uncapped.taps)
      expect(spent.installs).toBeLessThanOrEqual(uncapped.installs)
    }
    // Today (20:00 of the day after next) has spent at most the budget's share of the hours before 20:00.
    const partial = campaignOn(cut, orgId, campaignId, isoPlus(today, 2))
    expect(partial.spendMicros).toBeLessThanOrEqual(budget * elapsedShare(20))
    expect(partial.spendMicros).toBeGreaterThan(0)
    // History never changes.
    expect(simulatorTotals(cut, orgId, "campaigns", isoPlus(today, -20), yesterday, { campaignId }).total).toEqual(history)
    expectCoherent(cut, orgId, isoPlus(today, -3), isoPlus(today, 2))
  })

  it("a bid raise raises taps by r^0.6 and CPT by r^0.4 from the day of the change", async () => {
    const raised = await start()
    const kept = await start()
    const orgId = usOrgOf(raised)
    const today = raised.today(orgId)
    const keyword = busiestKeyword(raised, orgId, isoPlus(today, -1))
    // Both start from one bid, with budgets that do not bind, so the bid is the only difference.
    for (const simulator of [raised, kept]) {
      v1Write(simulator, orgId, `/v1/campaigns/${keyword.campaignId}`, { dailyBudget: { value: usd(10_000_000_000) } })
      v1Write(simulator, orgId, `/v1/keywords/${keyword.keywordId}`, { bid: usd(1_000_000) })
      await advanceDays(simulator, 1)
    }
    const dayBefore = keywordOn(raised, orgId, keyword.keywordId, today)
    v1Write(raised, orgId, `/v1/keywords/${keyword.keywordId}`, { bid: usd(2_000_000) })
    await advanceDays(raised, 3)
    await advanceDays(kept, 3)

    expect(keywordOn(raised, orgId, keyword.keywordId, today)).toEqual(dayBefore)
    const r = 2
    let raisedTaps = 0
    let keptTaps = 0
    let raisedSpend = 0
    let keptSpend = 0
    for (const day of [isoPlus(today, 2), isoPlus(today, 3)]) {
      const a = keywordOn(raised, orgId, keyword.keywordId, day)
      const b = keywordOn(kept, orgId, keyword.keywordId, day)
      raisedTaps += a.taps
      keptTaps += b.taps
      raisedSpend += a.spendMicros
      keptSpend += b.spendMicros
    }
    expect(keptTaps).toBeGreaterThan(50)
    // Integer rounding of each day's impressions and taps: a few percent at this volume.
    expect(raisedTaps / keptTaps).toBeGreaterThan(Math.pow(r, TAP_ELASTICITY) * 0.93)
    expect(raisedTaps / keptTaps).toBeLessThan(Math.pow(r, TAP_ELASTICITY) * 1.07)
    const cptRatio = (raisedSpend / raisedTaps) / (keptSpend / keptTaps)
    expect(cptRatio).toBeGreaterThan(Math.pow(r, CPT_ELASTICITY) * 0.95)
    expect(cptRatio).toBeLessThan(Math.pow(r, CPT_ELASTICITY) * 1.05)
    expectCoherent(raised, orgId, isoPlus(today, -2), isoPlus(today, 3))
  })

  it("a paused keyword has no taps from the pause on, and its days before keep their numbers", async () => {
    const simulator = await start()
    const orgId = usOrgOf(simulator)
    const today = simulator.today(orgId)
    const keyword = busiestKeyword(simulator, orgId, isoPlus(today, -1))
    const before = simulatorTotals(simulator, orgId, "keywords", isoPlus(today, -10), isoPlus(today, -1)).rows
      .find((row) => row.keywordId === keyword.keywordId)!.total
    const todayBefore = keywordOn(simulator, orgId, keyword.keywordId, today)
    v1Write(simulator, orgId, `/v1/keywords/${keyword.keywordId}`, { status: "PAUSED" })
    await advanceDays(simulator, 2)
    // Paused at 20:00: today keeps its hours before, and has nothing after.
    expect(keywordOn(simulator, orgId, keyword.keywordId, today)).toEqual(todayBefore)
    for (const day of [isoPlus(today, 1), isoPlus(today, 2)]) expect(keywordOn(simulator, orgId, keyword.keywordId, day).taps).toBe(0)
    expect(simulatorTotals(simulator, orgId, "keywords", isoPlus(today, -10), isoPlus(today, -1)).rows
      .find((row) => row.keywordId === keyword.keywordId)!.total).toEqual(before)
    expectCoherent(simulator, orgId, isoPlus(today, -2), isoPlus(today, 2))
  })

  it("a scenario of -40 % installs per tap shows from its day on, deterministically", async () => {
    const scenario = await start()
    const plain = await start()
    const again = await start()
    const orgId = usOrgOf(scenario)
    const today = scenario.today(orgId)
    const campaignId = busiestKeyword(scenario, orgId, isoPlus(today, -1)).campaignId
    for (const simulator of [scenario, plain, again]) {
      v1Write(simulator, orgId, `/v1/campaigns/${campaignId}`, { dailyBudget: { value: usd(10_000_000_000) } })
    }
    for (const simulator of [scenario, again]) {
      const answer = await control(simulator, "/scenarios", { entityId: Number(campaignId), installsPerTapPercent: -40 })
      expect(answer.status).toBe(201)
      expect(answer.json).toMatchObject({ scenario: { entityId: Number(campaignId), installsPerTapPercent: -40, cptPercent: 0 } })
    }
    expect((await control(scenario, "/scenarios", { entityId: 1, installsPerTapPercent: -40 })).status).toBe(404)
    for (const simulator of [scenario, plain, again]) await advanceDays(simulator, 3)

    expect(campaignOn(scenario, orgId, campaignId, isoPlus(today, -1))).toEqual(campaignOn(plain, orgId, campaignId, isoPlus(today, -1)))
    const withScenario = simulatorTotals(scenario, orgId, "campaigns", isoPlus(today, 1), isoPlus(today, 2), { campaignId }).total
    const without = simulatorTotals(plain, orgId, "campaigns", isoPlus(today, 1), isoPlus(today, 2), { campaignId }).total
    expect(withScenario.taps).toBe(without.taps)
    expect(without.installs).toBeGreaterThan(100)
    const ratio = (withScenario.installs / withScenario.taps) / (without.installs / without.taps)
    expect(ratio).toBeGreaterThan(0.6 * 0.93)
    expect(ratio).toBeLessThan(0.6 * 1.07)
    // Same seed, same changes: the same numbers, every row.
    expect(simulatorTotals(again, orgId, "keywords", isoPlus(today, -5), isoPlus(today, 3))).toEqual(
      simulatorTotals(scenario, orgId, "keywords", isoPlus(today, -5), isoPlus(today, 3))
    )
    expectCoherent(scenario, orgId, isoPlus(today, -1), isoPlus(today, 3))
    const listed = await (await fetch(`${scenario.url}/_control/scenarios`)).json() as { readonly scenarios: ReadonlyArray<unknown> }
    expect(listed.scenarios).toHaveLength(1)
  })

  it("a scenario of +25 % cost per tap on a keyword raises its CPT, not its taps, from its day on", async () => {
    const scenario = await start()
    const plain = await start()
    const orgId = usOrgOf(scenario)
    const today = scenario.today(orgId)
    const keyword = busiestKeyword(scenario, orgId, isoPlus(today, -1))
    for (const simulator of [scenario, plain]) {
      v1Write(simulator, orgId, `/v1/campaigns/${keyword.campaignId}`, { dailyBudget: { value: usd(10_000_000_000) } })
    }
    expect(scenario.control.addScenario({ entityId: Number(keyword.keywordId), cptPercent: 25 })).toMatchObject({ installsPerTapPercent: 0, cptPercent: 25 })
    for (const simulator of [scenario, plain]) simulator.control.advanceClock({ days: 3 })

    const a = simulatorTotals(scenario, orgId, "keywords", isoPlus(today, 1), isoPlus(today, 2)).rows.find((row) => row.keywordId === keyword.keywordId)!.total
    const b = simulatorTotals(plain, orgId, "keywords", isoPlus(today, 1), isoPlus(today, 2)).rows.find((row) => row.keywordId === keyword.keywordId)!.total
    expect(a.taps).toBe(b.taps)
    expect(b.taps).toBeGreaterThan(50)
    const ratio = (a.spendMicros / a.taps) / (b.spendMicros / b.taps)
    expect(ratio).toBeGreaterThan(1.25 * 0.98)
    expect(ratio).toBeLessThan(1.25 * 1.02)
    expect(keywordOn(scenario, orgId, keyword.keywordId, isoPlus(today, -1))).toEqual(keywordOn(plain, orgId, keyword.keywordId, isoPlus(today, -1)))
    expect(scenario.control.clearScenarios()).toBe(1)
  })

  it("a scenario with everyDay makes a source serve its quiet days too, and leaves its active days as they were", async () => {
    const scenario = await start()
    const plain = await start()
    const orgId = usOrgOf(scenario)
    const today = scenario.today(orgId)
    // A keyword of the busiest campaign that is quiet on one of the 20 days after today.
    const campaignId = busiestKeyword(plain, orgId, isoPlus(today, -1)).campaignId
    for (const simulator of [scenario, plain]) {
      v1Write(simulator, orgId, `/v1/campaigns/${campaignId}`, { dailyBudget: { value: usd(10_000_000_000) } })
      simulator.control.advanceClock({ days: 21 })
    }
    const days = Array.from({ length: 20 }, (_, n) => isoPlus(today, n + 1))
    const keywords = simulatorTotals(plain, orgId, "keywords", days[0]!, days.at(-1)!, { campaignId }).rows
      .filter((row) => row.total.taps > 0).map((row) => row.keywordId!)
    const quiet = keywords.map((keywordId) => ({ keywordId, day: days.find((day) => keywordOn(plain, orgId, keywordId, day).impressions === 0) }))
      .find((k) => k.day !== undefined)
    expect(quiet, "a keyword with a quiet day").toBeDefined()
    const before = simulatorTotals(scenario, orgId, "keywords", isoPlus(today, -1), isoPlus(today, -1)).rows
    expect(scenario.control.addScenario({ entityId: Number(quiet!.keywordId), everyDay: true })).toMatchObject({ everyDay: true })
    // From the scenario's moment on: the simulator's today is 21 days on, so its effect shows on days after that.
    scenario.control.advanceClock({ days: 21 })
    plain.control.advanceClock({ days: 21 })
    const later = Array.from({ length: 20 }, (_, n) => isoPlus(today, n + 22))
    const active = later.filter((day) => keywordOn(scenario, orgId, quiet!.keywordId, day).impressions > 0)
    expect(active).toEqual(later)
    for (const day of later) {
      const plainDay = keywordOn(plain, orgId, quiet!.keywordId, day)
      if (plainDay.impressions > 0) expect(keywordOn(scenario, orgId, quiet!.keywordId, day)).toEqual(plainDay)
    }
    expect(later.some((day) => keywordOn(plain, orgId, quiet!.keywordId, day).impressions === 0)).toBe(true)
    expect(simulatorTotals(scenario, orgId, "keywords", isoPlus(today, -1), isoPlus(today, -1)).rows).toEqual(before)
  })

  it("an ad group's default bid moves its Search Match's impressions and taps by the same elasticity", async () => {
    const raised = await start()
    const kept = await start()
    const orgId = usOrgOf(raised)
    const today = raised.today(orgId)
    const searchMatchOf = (simulator: Simulator, from: string, to: string) => {
      const totals = new Map<string, { campaignId: string; impressions: number; taps: number }>()
      for (const row of simulatorTotals(simulator, orgId, "searchTerms", from, to).rows) {
        if (row.keywordId !== null) continue
        const entry = totals.get(row.adGroupId!) ?? { campaignId: row.campaignId, impressions: 0, taps: 0 }
        entry.impressions += row.total.impressions
        entry.taps += row.total.taps
        totals.set(row.adGroupId!, entry)
      }
      return totals
    }
    const [adGroupId, busiest] = [...searchMatchOf(raised, isoPlus(today, -7), isoPlus(today, -1))].sort((a, b) => b[1].impressions - a[1].impressions)[0]!
    for (const simulator of [raised, kept]) {
      v1Write(simulator, orgId, `/v1/campaigns/${busiest.campaignId}`, { dailyBudget: { value: usd(10_000_000_000) } })
      v1Write(simulator, orgId, `/v1/adgroups/${adGroupId}`, { defaultBid: usd(1_000_000) })
      simulator.control.advanceClock({ days: 1 })
    }
    v1Write(raised, orgId, `/v1/adgroups/${adGroupId}`, { defaultBid: usd(3_000_000) })
    for (const simulator of [raised, kept]) simulator.control.advanceClock({ days: 15 })

    const a = searchMatchOf(raised, isoPlus(today, 1), isoPlus(today, 15)).get(adGroupId)!
    const b = searchMatchOf(kept, isoPlus(today, 1), isoPlus(today, 15)).get(adGroupId)!
    // Search Match is low volume: its impressions (which the bid scales, taps following) are the measure.
    expect(b.impressions).toBeGreaterThan(500)
    expect(a.taps).toBeGreaterThan(b.taps)
    expect(a.impressions / b.impressions).toBeGreaterThan(Math.pow(3, TAP_ELASTICITY) * 0.95)
    expect(a.impressions / b.impressions).toBeLessThan(Math.pow(3, TAP_ELASTICITY) * 1.05)
    expect(searchMatchOf(raised, today, today).get(adGroupId)).toEqual(searchMatchOf(kept, today, today).get(adGroupId))
  })
})
