/**
 * Search terms end to end, over both upstream versions: the real server syncs the simulator's demo org (v1 per
 * campaign in the ORTZ time zone, and v5) into PostgreSQL. The terms of every campaign, ad group and keyword add up
 * to that entity's own metrics to the micro, the low-volume bucket included (one row per ad group, its sources'
 * buckets summed); `GET …/search-terms` ranks by spend, narrows, names each term's source and says how fresh it is.
 */
import { type Simulator, startSimulator } from "@acs/upstream/simulator/Simulator"
import type { Metrics } from "@acs/upstream/Upstream"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ApiClient, withApi } from "./support/apiClient.ts"
import { createDatabase, query } from "./support/database.ts"
import { BOOTSTRAP_KEY, type RunningServer, startServer } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

let simulator: Simulator

beforeAll(async () => {
  simulator = await startSimulator({ seed: 11, size: "demo" })
})

afterAll(async () => {
  await simulator?.close()
})

const ZERO: Metrics = { impressions: 0, taps: 0, installs: 0, spendMicros: 0 }
const plus = (a: Metrics, b: Metrics): Metrics => ({
  impressions: a.impressions + b.impressions,
  taps: a.taps + b.taps,
  installs: a.installs + b.installs,
  spendMicros: a.spendMicros + b.spendMicros
})
const sumOf = (rows: ReadonlyArray<Metrics>): Metrics => rows.reduce(plus, ZERO)
const metricsOf = (m: Metrics): Metrics => ({ impressions: m.impressions, taps: m.taps, installs: m.installs, spendMicros: m.spendMicros })

const addDaysIso = (date: string, days: number): string => {
  const d = new Date(`${date}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + days)
  return d.toISOString().slice(0, 10)
}

/** Groups rows by a key and sums their metrics. */
const totalsBy = <Row extends Metrics>(rows: ReadonlyArray<Row>, key: (row: Row) => string | null): Map<string, Metrics> => {
  const out = new Map<string, Metrics>()
  for (const row of rows) {
    const k = key(row)
    if (k === null) continue
    out.set(k, plus(out.get(k) ?? ZERO, metricsOf(row)))
  }
  return out
}

describe.each(["v1", "v5"] as const)("search terms synced over %s", (version) => {
  let database: string
  let server: RunningServer
  let projectId: string
  let upstreamAccountId: string
  let windowStart: string
  let windowEnd: string

  const api = <A, E>(use: (client: ApiClient) => Effect.Effect<A, E>): Promise<A> => withApi(server.baseUrl, BOOTSTRAP_KEY, use)

  beforeAll(async () => {
    database = await createDatabase()
    server = await startServer({
      DATABASE_URL: database,
      ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
      SIMULATOR_URL: simulator.url,
      SIMULATOR_API_VERSION: version,
      ACS_DEMO: "true",
      SYNC_INTERVAL_MINUTES: "0",
      RATE_LIMIT_READ: "100000",
      RATE_LIMIT_WRITE: "100000"
    })
    const { accounts, syncs } = await waitFor(
      "every account's first sync",
      () =>
        api((client) =>
          Effect.gen(function*() {
            const { accounts } = yield* client.accounts.listAccounts()
            const syncs = yield* Effect.forEach(accounts, (a) =>
              Effect.map(client.warehouse.listSyncs({ path: { projectId: a.projectId }, urlParams: {} }), ({ syncs }) => syncs[0]))
            return { accounts, syncs }
          })
        ),
      ({ accounts, syncs }) => accounts.length > 0 && syncs.every((s) => s?.status === "succeeded"),
      { intervalMs: 250, show: ({ syncs }) => `${syncs.map((s) => s?.status ?? "none").join(", ")}\n${server.logs()}` }
    )
    const index = accounts.findIndex((a) => a.currency === "USD")
    projectId = accounts[index]!.projectId
    upstreamAccountId = accounts[index]!.upstreamAccountId
    windowStart = syncs[index]!.windowStart!
    windowEnd = syncs[index]!.windowEnd!
  })

  afterAll(async () => {
    await server?.stop()
  })

  /** Each synced term's sums over the sync's window, with what `search_terms` keeps of it. */
  const warehouseTerms = async () =>
    (await query<{
      campaign_id: string
      ad_group_id: string
      keyword_id: string | null
      text: string | null
      keyword_text: string | null
      match_type: string | null
      impressions: string
      taps: string
      installs: string
      spend: string
    }>(
      database,
      `SELECT st.campaign_id, st.ad_group_id, st.keyword_id, st.text, st.keyword_text, st.match_type,
         sum(m.impressions) AS impressions, sum(m.taps) AS taps, sum(m.installs) AS installs, sum(m.spend_micros) AS spend
       FROM search_terms st
       JOIN daily_metrics m ON m.project_id = st.project_id AND m.level = 'searchTerms' AND m.entity_key = st.entity_key
       WHERE st.project_id = $1 AND m.day BETWEEN $2 AND $3
       GROUP BY st.entity_key, st.campaign_id, st.ad_group_id, st.keyword_id, st.text, st.keyword_text, st.match_type`,
      [projectId, windowStart, windowEnd]
    )).map((r) => ({
      campaignId: r.campaign_id,
      adGroupId: r.ad_group_id,
      keywordId: r.keyword_id,
      text: r.text,
      keywordText: r.keyword_text,
      matchType: r.match_type,
      impressions: Number(r.impressions),
      taps: Number(r.taps),
      installs: Number(r.installs),
      spendMicros: Number(r.spend)
    }))

  const simulated = (level: "campaigns" | "adGroups" | "keywords" | "searchTerms", start = windowStart) =>
    simulator.totals(upstreamAccountId, level, start, windowEnd).rows.map((row) => ({ ...row, ...row.total }))

  it("adds up to every campaign's, ad group's and keyword's metrics to the micro, the low-volume bucket included", async () => {
    const terms = await warehouseTerms()
    const simTerms = simulated("searchTerms")
    expect(sumOf(terms)).toEqual(sumOf(simTerms))
    expect(sumOf(terms).spendMicros).toBeGreaterThan(0)

    // Campaigns and ad groups: every term, the bucket too.
    expect(totalsBy(terms, (t) => t.campaignId)).toEqual(totalsBy(simulated("campaigns"), (c) => c.campaignId))
    expect(totalsBy(terms, (t) => t.adGroupId)).toEqual(totalsBy(simulated("adGroups"), (g) => g.adGroupId))

    // The bucket: one row per ad group, no source, the sum of its sources' buckets (keywords' and Search Match's).
    const buckets = terms.filter((t) => t.text === null)
    expect(buckets.length).toBeGreaterThan(0)
    expect(new Set(buckets.map((b) => b.adGroupId)).size).toBe(buckets.length)
    expect(buckets.every((b) => b.keywordId === null && b.keywordText === null && b.matchType === null)).toBe(true)
    const simBuckets = simTerms.filter((t) => t.searchTerm === null)
    expect(simBuckets.some((b) => b.keywordId !== null)).toBe(true)
    expect(simBuckets.some((b) => b.keywordId === null)).toBe(true)
    expect(totalsBy(buckets, (b) => b.adGroupId)).toEqual(totalsBy(simBuckets, (b) => b.adGroupId))

    // Keywords: their named terms, plus their part of the bucket, are the keyword's own metrics.
    const named = terms.filter((t) => t.text !== null)
    const keywordParts = totalsBy(named, (t) => t.keywordId)
    for (const [keywordId, bucket] of totalsBy(simBuckets, (b) => b.keywordId)) {
      keywordParts.set(keywordId, plus(keywordParts.get(keywordId) ?? ZERO, bucket))
    }
    const keywords = totalsBy(simulated("keywords"), (k) => k.keywordId)
    expect(keywordParts).toEqual(keywords)

    // Search Match: each ad group's named Search Match terms and its bucket are what its keywords leave.
    const adGroups = totalsBy(simulated("adGroups"), (g) => g.adGroupId)
    const keywordTotalsByAdGroup = totalsBy(simulated("keywords"), (k) => k.adGroupId)
    const searchMatch = totalsBy(named.filter((t) => t.keywordId === null), (t) => t.adGroupId)
    for (const b of simBuckets.filter((s) => s.keywordId === null)) searchMatch.set(b.adGroupId!, plus(searchMatch.get(b.adGroupId!) ?? ZERO, metricsOf(b)))
    for (const [adGroupId, total] of searchMatch) {
      const keywordsPart = keywordTotalsByAdGroup.get(adGroupId) ?? ZERO
      expect(plus(total, keywordsPart), adGroupId).toEqual(adGroups.get(adGroupId))
    }

    // Each named term keeps its source as the report named it.
    const keywordRows = await query<{ keyword_id: string; text: string; match_type: string }>(
      database,
      "SELECT keyword_id, text, match_type FROM keywords WHERE project_id = $1",
      [projectId]
    )
    const keywordById = new Map(keywordRows.map((k) => [k.keyword_id, k]))
    const matched = named.filter((t) => t.keywordId !== null)
    expect(matched.length).toBeGreaterThan(0)
    for (const term of matched) {
      const keyword = keywordById.get(term.keywordId!)
      if (keyword === undefined) continue
      expect({ text: term.keywordText, matchType: term.matchType }).toEqual({ text: keyword.text, matchType: keyword.match_type })
    }
    expect(named.filter((t) => t.keywordId === null).every((t) => t.keywordText === null && t.matchType === null)).toBe(true)
  })

  it("GET …/search-terms: spend-ranked, narrowed by campaign and ad group to their totals, each row's source named", async () => {
    const days = 30
    const start = addDaysIso(windowEnd, -(days - 1))
    const read = (urlParams: { campaignId?: string; adGroupId?: string; limit?: number }) =>
      api((client) => client.warehouse.listSearchTerms({ path: { projectId }, urlParams: { days, limit: 1000, ...urlParams } }))

    const campaigns = simulated("campaigns", start)
    for (const campaign of campaigns) {
      const answer = await read({ campaignId: campaign.campaignId })
      expect(answer.truncated).toBe(false)
      expect(answer.total).toBe(answer.searchTerms.length)
      expect(answer.searchTerms.every((t) => t.campaignId === campaign.campaignId)).toBe(true)
      expect(sumOf(answer.searchTerms), campaign.campaignId).toEqual(metricsOf(campaign))
      for (let i = 1; i < answer.searchTerms.length; i++) {
        expect(answer.searchTerms[i - 1]!.spendMicros).toBeGreaterThanOrEqual(answer.searchTerms[i]!.spendMicros)
      }
    }

    // An ad group with a bucket: its rows are its total, the bucket one of them, marked and without a source.
    const simBuckets = simulated("searchTerms", start).filter((t) => t.searchTerm === null && t.spendMicros > 0)
    const adGroupId = simBuckets.find((b) => b.keywordId !== null)?.adGroupId ?? simBuckets[0]!.adGroupId!
    const adGroup = simulated("adGroups", start).find((g) => g.adGroupId === adGroupId)!
    const narrowed = await read({ adGroupId: adGroupId! })
    expect(narrowed.searchTerms.every((t) => t.adGroupId === adGroupId)).toBe(true)
    expect(sumOf(narrowed.searchTerms)).toEqual(metricsOf(adGroup))
    const bucketRows = narrowed.searchTerms.filter((t) => t.lowVolume)
    expect(bucketRows).toHaveLength(1)
    expect(bucketRows[0]).toMatchObject({ text: null, source: null, keywordId: null })
    expect(metricsOf(bucketRows[0]!)).toEqual(sumOf(simBuckets.filter((b) => b.adGroupId === adGroupId).map(metricsOf)))
    expect(bucketRows[0]!.spendMicros).toBeGreaterThan(0)

    const keywords = await api((client) => client.warehouse.listKeywords({ path: { projectId }, urlParams: { adGroupId: adGroupId!, limit: 1000 } }))
    const keywordById = new Map(keywords.keywords.map((k) => [k.keywordId, k]))
    for (const term of narrowed.searchTerms.filter((t) => !t.lowVolume)) {
      expect(term.text).not.toBeNull()
      if (term.keywordId === null) {
        expect(term.source).toEqual({ type: "searchMatch" })
      } else {
        const keyword = keywordById.get(term.keywordId)!
        expect(term.source).toEqual({ type: "keyword", keywordId: keyword.keywordId, text: keyword.text, matchType: keyword.matchType })
      }
    }

    // A short slice: the count of every term of the account, truncated, freshness as every read.
    const top = await read({ limit: 3 })
    expect(top.searchTerms).toHaveLength(3)
    const all = await query<{ n: number }>(database, "SELECT count(*)::int AS n FROM search_terms WHERE project_id = $1", [projectId])
    expect(top.total).toBe(all[0]!.n)
    expect(top.truncated).toBe(true)
    expect(top.dataFreshness.coverage).toBe(`${days} of ${days} requested days`)
  })
})
