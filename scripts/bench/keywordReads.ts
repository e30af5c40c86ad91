/**
 * The keyword read of `pnpm bench` (the expensive read), on the warehouse's world after its sync, with acs
 * restarted on the default settings:
 *
 * - acs's `GET keywords?days=30&limit=50` against the obvious aggregate SQL over the daily rows through bare
 *   `pg`, sampled the same number of times in alternating blocks (target: acs at least 5× faster at p50, with
 *   identical rows);
 * - acs against a bare `node:http` + `pg` server running acs's own statements (scripts/bench/bareServer.ts),
 *   also interleaved: acs's HTTP overhead on a slow read (target: within 1.3× at p50);
 * - `GET campaigns`, acs's statements through bare `pg`, and EXPLAIN ANALYZE of each statement (findings).
 */
import { daysBetween, windowEndingYesterday } from "../../packages/server/src/warehouse/Window.ts"
import { array, canonical, type Json, number, record } from "./json.ts"
import { interleaved, makeHttpClient, sample, summarize, type Summary, timeIt } from "./measure.ts"
import { makePool, type Pool } from "./pg.ts"
import { type BareServer, startBareServer } from "./processes.ts"
import {
  ACS_SQL,
  acsKeywords,
  type BenchAccount,
  type KeywordPage,
  type KeywordResult,
  OBVIOUS_SQL,
  obviousKeywords,
  obviousParams,
  suffixDays
} from "./queries.ts"
import { fmt, type TargetRow } from "./report.ts"
import type { Warehouse } from "./warehouse.ts"

const DAYS = 30
const LIMIT = 50
/** acs against the bare server running acs's statements: many samples, both fast. */
const PAIRED = { warmup: 20, rounds: 20, block: 3 } as const
/** acs against the obvious SQL (about a second each): the same number of samples each, interleaved. */
const AGAINST_OBVIOUS = { warmup: 2, rounds: 15, block: 2 } as const

export const TARGET_READ_SPEEDUP = 5
export const TARGET_HTTP_OVERHEAD = 1.3
const TARGET_KEYWORDS = 100_000
const TARGET_DAYS = 90

const keywordFields: ReadonlyArray<keyof KeywordResult> = [
  "keywordId", "adGroupId", "campaignId", "text", "matchType", "status", "bidMicros", "impressions", "taps", "installs",
  "spendMicros", "avgCptMicros", "cpaMicros", "ttr", "conversionRate"
]

interface ComparablePage {
  readonly keywords: ReadonlyArray<Json>
  readonly total: number
}

/** A keyword page from an HTTP answer (acs's or the bare server's), reduced to the compared fields. */
const toKeywordPage = (value: unknown, what: string): ComparablePage => {
  const o = record(value, what)
  const keywords = array(o["keywords"], `${what}.keywords`).map((row) => {
    const r = record(row, `${what} row`)
    return Object.fromEntries(keywordFields.map((field) => [field, r[field]]))
  })
  return { keywords, total: number(o, "total") }
}

const pageAsJson = (page: KeywordPage) => toKeywordPage(JSON.parse(JSON.stringify(page)) as unknown, "bare pg")

export interface Comparison {
  readonly identical: boolean
  readonly sameIdsInOrder: boolean
  readonly sameMetrics: boolean
  readonly sameAllFields: boolean
  readonly sameTotal: boolean
  readonly rows: readonly [number, number]
  readonly totals: readonly [number, number]
  readonly firstDifferences: ReadonlyArray<{ readonly index: number; readonly a: Json | null; readonly b: Json | null }>
}

const compare = (a: ComparablePage, b: ComparablePage): Comparison => {
  const metric = (row: Json | undefined) =>
    row === undefined ? "" : canonical([row["keywordId"], row["impressions"], row["taps"], row["installs"], row["spendMicros"]])
  const n = Math.max(a.keywords.length, b.keywords.length)
  const differences: Array<{ index: number; a: Json | null; b: Json | null }> = []
  let sameIds = a.keywords.length === b.keywords.length
  let sameMetrics = sameIds
  let sameAll = sameIds
  for (let i = 0; i < n; i++) {
    const x = a.keywords[i]
    const y = b.keywords[i]
    if (x?.["keywordId"] !== y?.["keywordId"]) sameIds = false
    if (metric(x) !== metric(y)) sameMetrics = false
    if (canonical(x ?? null) !== canonical(y ?? null)) {
      sameAll = false
      if (differences.length < 5) differences.push({ index: i, a: x ?? null, b: y ?? null })
    }
  }
  const sameTotal = a.total === b.total
  return {
    identical: sameIds && sameMetrics && sameAll && sameTotal,
    sameIdsInOrder: sameIds,
    sameMetrics,
    sameAllFields: sameAll,
    sameTotal,
    rows: [a.keywords.length, b.keywords.length],
    totals: [a.total, b.total],
    firstDifferences: differences
  }
}

export interface Plan {
  readonly name: string
  readonly executionMs: number | null
  readonly planningMs: number | null
  readonly text: ReadonlyArray<string>
}

const explain = async (pool: Pool, name: string, sql: string, params: ReadonlyArray<unknown>): Promise<Plan> => {
  // Once to warm the cache, the second one is kept.
  await pool.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, [...params])
  const result = await pool.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, [...params])
  const text = result.rows.map((row) => row["QUERY PLAN"])
  const timing = (label: string) => {
    const line = text.find((l) => l.startsWith(label))
    const match = line === undefined ? null : /([\d.]+) ms/.exec(line)
    return match?.[1] === undefined ? null : Number(match[1])
  }
  return { name, executionMs: timing("Execution Time"), planningMs: timing("Planning Time"), text }
}

type Latency = Summary & { readonly description: string }

export interface KeywordReads {
  readonly sizes: {
    readonly keywords: number
    readonly campaigns: number
    readonly syncedDays: number
    readonly keywordDays: { readonly count: number; readonly first: string | null; readonly last: string | null }
    readonly metricRows: number
    readonly metricRowsByLevel: Record<string, number>
    readonly keywordSpendSuffixRows: number
    readonly readWindow: { readonly start: string; readonly end: string; readonly days: number }
    readonly keywordDailyRowsInReadWindow: number
  }
  readonly latency: Record<"acsKeywordsVsObvious" | "obviousSqlDirect" | "acsKeywords" | "bareAcsQuery" | "acsCampaigns" | "acsQueryDirect", Latency>
  readonly ratios: {
    /** obvious SQL p50 / acs p50, sampled alike and interleaved: the target. */
    readonly obviousOverAcsP50: number
    readonly obviousOverAcsP95: number
    /** acs p50 / bare server (acs's statements) p50: the expensive read's overhead. */
    readonly acsOverBareP50: number
  }
  readonly identical: { readonly acsVsObviousSql: Comparison; readonly acsVsBareAcsQuery: Comparison }
  readonly plans: ReadonlyArray<Plan>
  readonly singleRequestMs: number
}

export const benchKeywordReads = async (options: {
  readonly warehouse: Warehouse
  readonly log: (message: string) => void
  readonly cleanup: (name: string, run: () => Promise<void> | void) => void
}): Promise<KeywordReads> => {
  const { warehouse, log, cleanup } = options
  const { pool, projectId } = warehouse
  const measured = warehouse.shipped ?? warehouse.workaround
  // The reads run on a freshly started acs with the default settings, so that its database sessions start as
  // clean as the baselines' (a session that ran the sync's JIT-compiled statements stays slower).
  log("restarting acs with the default settings for the reads")
  const acs = await warehouse.restartAcs()
  await warehouse.closeSimulator()

  const byLevel = await pool.query<{ level: string; n: string }>(
    `SELECT level, count(*) AS n FROM daily_metrics WHERE project_id = $1 GROUP BY level ORDER BY level`,
    [projectId]
  )
  const metricRowsByLevel = Object.fromEntries(byLevel.rows.map((row) => [row.level, Number(row.n)]))
  const count = async (sql: string, params: ReadonlyArray<unknown>) => Number((await pool.query<{ n: string }>(sql, [...params])).rows[0]?.n ?? 0)
  const accountRow = (await pool.query<{ time_zone: string; last_synced_day: string | null }>(
    `SELECT time_zone, last_synced_day::text AS last_synced_day FROM accounts WHERE project_id = $1`,
    [projectId]
  )).rows[0]
  if (accountRow === undefined) throw new Error("the bench account is not in the database")
  const account: BenchAccount = { projectId, timeZone: accountRow.time_zone, lastSyncedDay: accountRow.last_synced_day }
  const window = windowEndingYesterday(Date.now(), account.timeZone, DAYS)
  const dayRange = (await pool.query<{ days: string; first: string | null; last: string | null }>(
    `SELECT count(DISTINCT day) AS days, min(day)::text AS first, max(day)::text AS last FROM daily_metrics WHERE project_id = $1 AND level = 'keywords'`,
    [projectId]
  )).rows[0]
  const sizes = {
    keywords: await count(`SELECT count(*) AS n FROM keywords WHERE project_id = $1`, [projectId]),
    campaigns: await count(`SELECT count(*) AS n FROM campaigns WHERE project_id = $1`, [projectId]),
    syncedDays: measured?.windowStart && measured.windowEnd ? daysBetween(measured.windowStart, measured.windowEnd) + 1 : 0,
    keywordDays: { count: Number(dayRange?.days ?? 0), first: dayRange?.first ?? null, last: dayRange?.last ?? null },
    metricRows: Object.values(metricRowsByLevel).reduce((a, b) => a + b, 0),
    metricRowsByLevel,
    keywordSpendSuffixRows: await count(`SELECT count(*) AS n FROM spend_suffixes WHERE project_id = $1 AND level = 'keywords'`, [projectId]),
    readWindow: window,
    keywordDailyRowsInReadWindow: await count(
      `SELECT count(*) AS n FROM daily_metrics WHERE project_id = $1 AND level = 'keywords' AND day BETWEEN $2 AND $3`,
      [projectId, window.start, window.end]
    )
  }
  log(`${fmt(sizes.keywords)} keywords, ${fmt(sizes.metricRows)} daily metric rows over ${sizes.syncedDays} days`)
  // The steady state autovacuum reaches a minute later anyway, without it running during the measurements.
  log("VACUUM ANALYZE")
  await pool.query("VACUUM ANALYZE")

  // Fresh pools for the measured statements: a backend that has run a JIT-compiled statement (the obvious
  // aggregate, or the counts above) runs later parallel statements measurably slower.
  const acsPool = makePool({ connectionString: warehouse.databaseUrl, max: 2 })
  cleanup("the acs-statements pool", () => acsPool.end())
  const obviousPool = makePool({ connectionString: warehouse.databaseUrl, max: 2 })
  cleanup("the obvious-SQL pool", () => obviousPool.end())

  log("starting the bare node:http + pg server")
  const bare: BareServer = await startBareServer(warehouse.databaseUrl, projectId)
  cleanup("the bare server", () => bare.stop())
  const bareClient = makeHttpClient()
  cleanup("the bare client", () => bareClient.close())

  const keywordsUrl = `${acs.api}/accounts/${projectId}/keywords?days=${DAYS}&limit=${LIMIT}`
  const campaignsUrl = `${acs.api}/accounts/${projectId}/campaigns`
  const bareAcsUrl = `${bare.baseUrl}/acs?days=${DAYS}&limit=${LIMIT}`

  log("comparing answers")
  const acsPage = toKeywordPage(await acs.client.getJson(keywordsUrl), "acs keywords")
  const identical = {
    acsVsObviousSql: compare(acsPage, pageAsJson(await obviousKeywords(obviousPool, account, DAYS, LIMIT))),
    acsVsBareAcsQuery: compare(acsPage, toKeywordPage(await bareClient.getJson(bareAcsUrl), "bare /acs"))
  }
  log(`acs vs the obvious SQL: ${identical.acsVsObviousSql.identical ? "identical" : "DIFFERENT"}`)

  log(`measuring acs keywords vs the obvious SQL (interleaved, ${AGAINST_OBVIOUS.rounds * AGAINST_OBVIOUS.block} samples each)`)
  const againstObvious = await interleaved({
    acs: () => acs.client.getJson(keywordsUrl),
    obvious: () => obviousKeywords(obviousPool, account, DAYS, LIMIT)
  }, AGAINST_OBVIOUS)
  log(`measuring acs keywords vs the bare server running acs's statements (interleaved, ${PAIRED.rounds * PAIRED.block} samples each)`)
  const paired = await interleaved({
    acs: () => acs.client.getJson(keywordsUrl),
    bare: () => bareClient.getJson(bareAcsUrl)
  }, PAIRED)
  log("measuring acs campaigns and acs's statements through bare pg")
  const campaigns = await sample(() => acs.client.getJson(campaignsUrl), { warmup: 20, samples: 60 })
  const acsDirect = await sample(() => acsKeywords(acsPool, account, DAYS, LIMIT), { warmup: 10, samples: 60 })

  const latency = {
    acsKeywordsVsObvious: { description: `acs GET keywords?days=${DAYS}&limit=${LIMIT} (HTTP), beside the obvious SQL`, ...summarize(againstObvious.acs) },
    obviousSqlDirect: { description: "obvious aggregate SQL through bare pg, beside acs", ...summarize(againstObvious.obvious) },
    acsKeywords: { description: `acs GET keywords?days=${DAYS}&limit=${LIMIT} (HTTP), beside the bare server`, ...summarize(paired.acs) },
    bareAcsQuery: { description: "bare node:http + pg, acs's statements (HTTP)", ...summarize(paired.bare) },
    acsCampaigns: { description: "acs GET campaigns (HTTP)", ...summarize(campaigns) },
    acsQueryDirect: { description: "acs's statements through bare pg", ...summarize(acsDirect) }
  }

  log("EXPLAIN ANALYZE")
  const d = suffixDays(account, window)
  const top = acsPage.keywords.map((row) => String(row["keywordId"]))
  const plans = [
    await explain(obviousPool, "obvious aggregate SQL", OBVIOUS_SQL, obviousParams(account, window, LIMIT)),
    await explain(acsPool, "acs: count", ACS_SQL.count, [projectId]),
    await explain(acsPool, "acs: top spenders (spend_suffixes)", ACS_SQL.spenders, [d, projectId, "keywords", d, d, LIMIT]),
    await explain(acsPool, "acs: entity rows", ACS_SQL.entities, [projectId, top]),
    await explain(acsPool, "acs: window metrics of the slice", ACS_SQL.metrics, [projectId, "keywords", top, window.start, window.end])
  ]
  const singleRequestMs = await timeIt(() => acs.client.getJson(keywordsUrl))
  return {
    sizes,
    latency,
    ratios: {
      obviousOverAcsP50: latency.obviousSqlDirect.p50Ms / latency.acsKeywordsVsObvious.p50Ms,
      obviousOverAcsP95: latency.obviousSqlDirect.p95Ms / latency.acsKeywordsVsObvious.p95Ms,
      acsOverBareP50: latency.acsKeywords.p50Ms / latency.bareAcsQuery.p50Ms
    },
    identical,
    plans,
    singleRequestMs
  }
}

export const keywordReadTargets = (r: KeywordReads): Array<TargetRow> => [
  {
    name: "bench size: keywords",
    target: `>= ${fmt(TARGET_KEYWORDS)}`,
    measured: fmt(r.sizes.keywords),
    value: r.sizes.keywords,
    pass: r.sizes.keywords >= TARGET_KEYWORDS
  },
  {
    name: "bench size: days synced",
    target: `>= ${TARGET_DAYS}`,
    measured: `${r.sizes.syncedDays} (${r.sizes.keywordDays.count} with keyword rows)`,
    value: r.sizes.syncedDays,
    pass: r.sizes.syncedDays >= TARGET_DAYS
  },
  {
    name: "keyword read: obvious SQL p50 / acs p50 (interleaved)",
    target: `>= ${TARGET_READ_SPEEDUP}x`,
    measured: `${fmt(r.ratios.obviousOverAcsP50)}x (${fmt(r.latency.obviousSqlDirect.p50Ms)} / ${fmt(r.latency.acsKeywordsVsObvious.p50Ms)} ms, ` +
      `${r.latency.acsKeywordsVsObvious.samples} samples each; p95 ${fmt(r.ratios.obviousOverAcsP95)}x)`,
    value: r.ratios.obviousOverAcsP50,
    pass: r.ratios.obviousOverAcsP50 >= TARGET_READ_SPEEDUP
  },
  {
    name: "keyword read: results identical to obvious SQL",
    target: "identical",
    measured: r.identical.acsVsObviousSql.identical ? "identical (50 ids, order, metrics, total)" : "DIFFERENT",
    value: r.identical.acsVsObviousSql.identical ? 1 : 0,
    pass: r.identical.acsVsObviousSql.identical
  },
  {
    name: "expensive read overhead: acs p50 / bare p50 (acs's statements)",
    target: `<= ${TARGET_HTTP_OVERHEAD}x`,
    measured: `${fmt(r.ratios.acsOverBareP50)}x (${fmt(r.latency.acsKeywords.p50Ms)} / ${fmt(r.latency.bareAcsQuery.p50Ms)} ms)`,
    value: r.ratios.acsOverBareP50,
    pass: r.ratios.acsOverBareP50 <= TARGET_HTTP_OVERHEAD
  }
]
