/**
 * `pnpm bench`: the warehouse benchmark (a script, not a test).
 *
 * One run starts a throwaway PostgreSQL cluster, the upstream simulator at bench size (one account with
 * 100,000 keywords), and acs as a real process with ACS_DEMO=true, which imports the simulator's accounts
 * and syncs 90 days. It then measures, in the same run:
 *
 * - sync time and metric rows per second into Postgres;
 * - the same account fully synced over each API version of the connection (v5, v1, v1, v5, v5, v1, switched
 *   with `PUT /connection`): rows per second for each (fastest sync) and v1's over v5's, which must be >= 0.9,
 *   with the same daily rows left by every sync (scripts/bench/versions.ts);
 * - p50/p95 of acs's `GET keywords?days=30&limit=50` and `GET campaigns` over keep-alive HTTP;
 * - p50/p95 of the obvious aggregate SQL over the daily rows through bare `pg`, and whether its answer is
 *   identical to acs's;
 * - p50/p95 of a bare `node:http` + `pg` server answering the same read, once with the obvious SQL and once
 *   with the statements acs itself runs (the baseline for acs's HTTP overhead).
 *
 * Then the change pipeline (scripts/bench/ledger.ts): ledger page latency at 10,000 and 1,000,000 rows,
 * proposal latency and throughput with 1,000,000 rows in the ledger, and the time from an auto-applied
 * proposal to `applied`.
 *
 * Then the heap an unauthenticated sign-in flood leaves in the rate limiter (scripts/bench/loginFlood.ts);
 * `--only=login-flood` runs just that section, without PostgreSQL or acs. `--only=sync` runs PostgreSQL, the
 * simulator and acs, the first sync and the v1/v5 comparison only, and writes bench/results-sync.json.
 * `--only=surfaces` runs PostgreSQL, the simulator (default size) and acs, and the same read over REST, RPC
 * and MCP only (scripts/bench/surfaces.ts), and writes bench/results-surfaces.json; the full run measures it
 * on the bench account too.
 *
 * It prints a table (target, measured, pass/fail) and writes bench/results.json. Everything it started is
 * stopped at the end, on failure too.
 *
 * A sync statement of acs's that runs longer than BENCH_STALL_SECONDS (default 90) is a stall: the bench
 * records it (statement, plan) as the sync result, cancels it, and, unless BENCH_NO_WORKAROUND=1, syncs again
 * with `enable_nestloop=off` on acs's sessions so the reads can still be measured; that second sync is
 * reported separately and never counts for the target. The reads are always measured on an acs started
 * with the default settings.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { startSimulator, type Simulator } from "../packages/upstream/src/simulator/Simulator.ts"
import { type Cluster, startCluster } from "../packages/server/test/support/postgres.ts"
import { repoRoot } from "../packages/server/test/support/server.ts"
import { daysBetween, windowEndingYesterday } from "../packages/server/src/warehouse/Window.ts"
import { abortStalledSync, type AcsInstance, startAcs, type SyncInfo, type SyncOutcome, toSyncInfo, waitForSync } from "./bench/acs.ts"
import { cpuMeter, type CpuSnapshot, type CpuSpan, cpuSpan } from "./bench/cpu.ts"
import { array, boolean, canonical, type Json, number, record, string } from "./bench/json.ts"
import { interleaved, makeHttpClient, sample, summarize, type Summary, timeIt } from "./bench/measure.ts"
import { benchLedger, TARGET_APPLY_P95_MS, TARGET_LEDGER_PAGE_RATIO } from "./bench/ledger.ts"
import { benchLoginFlood, describeLoginFlood } from "./bench/loginFlood.ts"
import { makePool, type Pool } from "./bench/pg.ts"
import { benchSyncVersions, describeSyncVersions, type SyncVersions } from "./bench/versions.ts"
import { benchSurfaces, SURFACE_RATIO_TARGET, type SurfacesResult } from "./bench/surfaces.ts"
import { type BareServer, startBareServer } from "./bench/processes.ts"
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
} from "./bench/queries.ts"

const SEED = 42
const DAYS = 30
const LIMIT = 50
const BOOTSTRAP_KEY = "acs_bench_bootstrap_key_0123456789abcdefghijklmnopq"
const SECRETS_KEY = Buffer.alloc(32, 11).toString("base64")
const SYNC_TIMEOUT_MS = 20 * 60_000
const STALL_SECONDS = Number(process.env["BENCH_STALL_SECONDS"] ?? 90)
const NO_WORKAROUND = process.env["BENCH_NO_WORKAROUND"] === "1"
const WORKAROUND_OPTIONS = "-c enable_nestloop=off"
const FAST = { warmup: 20, rounds: 40, block: 5 } as const
const SLOW = { warmup: 2, samples: 200, budgetMs: 20_000, minSamples: 15 } as const

const TARGET_READ_SPEEDUP = 5
const TARGET_HTTP_OVERHEAD = 1.3
const TARGET_SYNC_ROWS_PER_SECOND = 50_000
const TARGET_KEYWORDS = 100_000
const TARGET_DAYS = 90

const log = (message: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// ---------------------------------------------------------------------------------------------------------
// Clean-up of everything started, in reverse order, once, on success, failure or Ctrl-C.

const cleanups: Array<{ readonly name: string; readonly run: () => Promise<void> | void }> = []
let cleaned = false
const cleanUp = async () => {
  if (cleaned) return
  cleaned = true
  for (const { name, run } of cleanups.reverse()) {
    try {
      await run()
    } catch (error) {
      log(`stopping ${name} failed: ${String(error)}`)
    }
  }
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping everything`)
    void cleanUp().finally(() => process.exit(130))
  })
}

// ---------------------------------------------------------------------------------------------------------
// Comparing answers.

const keywordFields: ReadonlyArray<keyof KeywordResult> = [
  "keywordId",
  "adGroupId",
  "campaignId",
  "text",
  "matchType",
  "status",
  "bidMicros",
  "impressions",
  "taps",
  "installs",
  "spendMicros",
  "avgCptMicros",
  "cpaMicros",
  "ttr",
  "conversionRate"
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

interface Comparison {
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

// ---------------------------------------------------------------------------------------------------------
// EXPLAIN ANALYZE of the statements, for the findings.

interface Plan {
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

// ---------------------------------------------------------------------------------------------------------
// Output.

const fmt = (value: number, digits = 2) =>
  Number.isFinite(value) ? value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 }) : String(value)

const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`
  return [line(headers), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n")
}

interface TargetRow {
  readonly name: string
  readonly target: string
  readonly measured: string
  readonly value: number | null
  /** null: informational, not a target. */
  readonly pass: boolean | null
}

const writeResults = (results: unknown) => {
  const outDir = Path.join(repoRoot, "bench")
  Fs.mkdirSync(outDir, { recursive: true })
  const file = Path.join(outDir, "results.json")
  Fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`)
  return Path.relative(repoRoot, file)
}

const printTargets = (targets: ReadonlyArray<TargetRow>) =>
  table(
    ["target", "goal", "measured", "result"],
    targets.map((t) => [t.name, t.target, t.measured, t.pass === null ? "info" : t.pass ? "PASS" : "FAIL"])
  )

// ---------------------------------------------------------------------------------------------------------
// Sync measurement.

interface SyncMeasurement {
  readonly syncId: string
  readonly trigger: string
  readonly status: string
  readonly startedAt: string
  /** As acs recorded it (inside the swap transaction). */
  readonly finishedAt: string | null
  /** When the bench first saw the sync ended (polling every 0.5 s). */
  readonly observedEndAt: string
  readonly windowStart: string | null
  readonly windowEnd: string | null
  /** finishedAt − startedAt. */
  readonly reportedSeconds: number | null
  /** observedEndAt − startedAt: what the rates use. */
  readonly seconds: number
  /** startedAt → the "swap" heartbeat: reading upstream, staging, and building the new copy's indexes. */
  readonly fetchAndStageSeconds: number | null
  /** The "swap" heartbeat → observed end. */
  readonly swapSeconds: number | null
  readonly rowsWritten: number
  readonly error: string | null
  readonly cpu?: SyncCpu
}

interface SyncCpu {
  /** From when the bench starts waiting (acs ready) to the first poll that sees the swap step. */
  readonly fetchAndStage: CpuSpan
  readonly swap: CpuSpan | null
}

const describeCpu = (cpu: SyncCpu | undefined): string => {
  if (cpu === undefined) return "n/a"
  const one = (name: string, span: CpuSpan | null) =>
    span === null
      ? `${name}: n/a`
      : `${name} ${fmt(span.wallSeconds)} s wall, CPU s: bench+simulator ${fmt(span.benchProcessCpuSeconds)}, acs ${span.acsCpuSeconds === null ? "?" : fmt(span.acsCpuSeconds)}, postgres ${span.postgresCpuSeconds === null ? "?" : fmt(span.postgresCpuSeconds)}`
  return `${one("fetch+stage", cpu.fetchAndStage)}; ${one("swap", cpu.swap)}`
}

const measureSync = async (pool: Pool, sync: SyncInfo, observedEnd: number): Promise<SyncMeasurement> => {
  const row = (await pool.query<{ swap_at: string | null }>(
    `SELECT CASE WHEN progress->>'step' IN ('swap', 'done') THEN heartbeat_at::text END AS swap_at FROM syncs WHERE sync_id = $1`,
    [sync.syncId]
  )).rows[0]
  const started = Date.parse(sync.startedAt)
  const swapAt = row?.swap_at === null || row?.swap_at === undefined ? null : Date.parse(row.swap_at)
  return {
    syncId: sync.syncId,
    trigger: sync.trigger,
    status: sync.status,
    startedAt: sync.startedAt,
    finishedAt: sync.finishedAt,
    observedEndAt: new Date(observedEnd).toISOString(),
    windowStart: sync.windowStart,
    windowEnd: sync.windowEnd,
    reportedSeconds: sync.finishedAt === null ? null : (Date.parse(sync.finishedAt) - started) / 1000,
    seconds: (observedEnd - started) / 1000,
    fetchAndStageSeconds: swapAt === null ? null : (swapAt - started) / 1000,
    swapSeconds: swapAt === null ? null : (observedEnd - swapAt) / 1000,
    rowsWritten: sync.rowsWritten,
    error: sync.error
  }
}

// ---------------------------------------------------------------------------------------------------------

const main = async () => {
  const startedAt = new Date()
  const loadAtStart = Os.loadavg()

  log("starting PostgreSQL")
  const cluster: Cluster = await startCluster()
  cleanups.push({ name: "PostgreSQL", run: () => cluster.stop() })
  const admin = makePool({ connectionString: cluster.url("postgres"), max: 1 })
  await admin.query("CREATE DATABASE acs_bench")
  await admin.end()
  const databaseUrl = cluster.url("acs_bench")
  const pool = makePool({ connectionString: databaseUrl, max: 4 })
  cleanups.push({ name: "the bench pool", run: () => pool.end() })
  const dataDirectory = (await pool.query<{ d: string }>("SELECT current_setting('data_directory') AS d")).rows[0]?.d

  log("starting the simulator (bench size)")
  const simulator: Simulator = await startSimulator({ seed: SEED, size: "bench", port: 0 })
  let simulatorOpen = true
  const closeSimulator = async () => {
    if (!simulatorOpen) return
    simulatorOpen = false
    await simulator.close()
  }
  cleanups.push({ name: "the simulator", run: closeSimulator })

  let acs: AcsInstance | undefined
  cleanups.push({ name: "acs", run: () => acs?.stop() })
  const restartAcs = async (url: string) => {
    await acs?.stop()
    acs = undefined
    acs = await startAcs(acsEnv(url, simulator.url), BOOTSTRAP_KEY)
    return acs
  }

  log("starting acs (ACS_DEMO=true: imports the simulator's accounts and syncs them)")
  const spawnedAt = Date.now()
  let current = await restartAcs(databaseUrl)

  // The bench account: the writable one (the other is the small read-only account).
  let projectId: string | undefined
  let accountName = ""
  while (projectId === undefined) {
    const list = record(await current.client.getJson(`${current.api}/accounts`), "accounts")
    const accounts = array(list["accounts"], "accounts").map((a) => record(a, "account"))
    const bench = accounts.find((a) => !boolean(a, "readOnly"))
    if (bench !== undefined) {
      projectId = string(bench, "projectId")
      accountName = string(bench, "name")
    } else {
      if (Date.now() - spawnedAt > 60_000) throw new Error(`no writable account was imported:\n${current.logs()}`)
      await sleep(250)
    }
  }
  log(`bench account ${accountName} (${projectId}); waiting for its first sync (stall limit ${STALL_SECONDS} s per statement)`)

  /** Waits for a sync, metering CPU from now to the first sight of the swap step, and from there to the end. */
  const wait = async (acsNow: AcsInstance, syncId?: string) => {
    const meter = cpuMeter(acsNow.pid, dataDirectory)
    const start = meter()
    let swap: CpuSnapshot | undefined
    const outcome = await waitForSync({
      acs: acsNow,
      pool,
      projectId: projectId ?? "",
      ...(syncId !== undefined ? { syncId } : {}),
      stallSeconds: STALL_SECONDS,
      timeoutMs: SYNC_TIMEOUT_MS,
      log,
      onPoll: (sync) => {
        const step = typeof sync.progress === "object" && sync.progress !== null && "step" in sync.progress ? sync.progress.step : undefined
        if (swap === undefined && (step === "swap" || step === "done" || sync.status !== "running")) swap = meter()
      }
    })
    const end = meter()
    const cpu: SyncCpu = { fetchAndStage: cpuSpan(start, swap ?? end), swap: swap === undefined ? null : cpuSpan(swap, end) }
    return { outcome, cpu }
  }

  // The first sync, with acs as shipped.
  const { outcome: first, cpu: firstCpu }: { outcome: SyncOutcome; cpu: SyncCpu } = await wait(current)
  if (first.kind === "failed") throw new Error(`the first sync failed: ${first.sync.error}\n${current.logs()}`)
  let shipped: SyncMeasurement | undefined
  let stall: { readonly statement: unknown; readonly sync: SyncMeasurement; readonly stagedRows: number; readonly cpu: SyncCpu } | undefined
  let workaround: SyncMeasurement | undefined
  if (first.kind === "succeeded") {
    shipped = { ...await measureSync(pool, first.sync, Date.now()), cpu: firstCpu }
    log(`sync ${first.sync.syncId} succeeded in ${fmt(shipped.seconds)} s`)
  } else {
    const stalledAt = Date.now()
    log(`STALL: an acs statement has run ${fmt(first.statement.seconds)} s during the sync (step ${JSON.stringify(first.sync.progress)}):`)
    log(first.statement.query)
    for (const line of first.statement.plan ?? []) log(`  ${line}`)
    stall = {
      statement: first.statement,
      sync: await measureSync(pool, first.sync, stalledAt),
      stagedRows: first.sync.rowsWritten,
      cpu: firstCpu
    }
    log("cancelling the stuck statement")
    const aborted = await abortStalledSync({ acs: current, pool, projectId, syncId: first.sync.syncId, pid: first.statement.pid })
    log(`the stalled sync is now ${aborted?.status ?? "still running (backend terminated)"}`)
    if (NO_WORKAROUND) {
      const targets: Array<TargetRow> = [{
        name: "sync: metric rows / s into Postgres",
        target: `>= ${fmt(TARGET_SYNC_ROWS_PER_SECOND)}`,
        measured: `stalled: one statement ran > ${STALL_SECONDS} s`,
        value: null,
        pass: false
      }]
      const file = writeResults({ timestamp: new Date().toISOString(), stall, targets, allPass: false, notes: ["BENCH_NO_WORKAROUND=1: stopped at the stall; nothing else was measured."] })
      process.stdout.write(`\n${printTargets(targets)}\n\nwrote ${file}\n`)
      process.exitCode = 1
      return
    }
    log(`syncing again with acs's sessions under '${WORKAROUND_OPTIONS}' (reported separately, not for the target)`)
    current = await restartAcs(`${databaseUrl}?options=${encodeURIComponent(WORKAROUND_OPTIONS)}`)
    const begun = toSyncInfo(await current.client.postJson(`${current.api}/accounts/${projectId}/syncs`))
    const { outcome: second, cpu: secondCpu } = await wait(current, begun.syncId)
    if (second.kind !== "succeeded") {
      throw new Error(`the workaround sync did not succeed either (${second.kind}): ${JSON.stringify(second.kind === "stalled" ? second.statement : second.sync.error)}`)
    }
    workaround = { ...await measureSync(pool, second.sync, Date.now()), cpu: secondCpu }
    log(`workaround sync ${second.sync.syncId} succeeded in ${fmt(workaround.seconds)} s`)
  }
  // v1 against v5: full syncs over each, on the acs that synced (the workaround one if the first stalled).
  const versions: SyncVersions = await benchSyncVersions({ acs: current, pool, projectId, stallSeconds: STALL_SECONDS, timeoutMs: SYNC_TIMEOUT_MS, log })
  // The reads are measured on a freshly started acs with the default settings, so that its database sessions
  // start as clean as the baselines' (a session that ran the sync's JIT-compiled statements stays slower).
  log("restarting acs with the default settings for the reads")
  current = await restartAcs(databaseUrl)
  await closeSimulator()
  const measuredSync = shipped ?? workaround
  if (measuredSync === undefined) throw new Error("no sync succeeded")

  // What the sync wrote.
  const byLevel = await pool.query<{ level: string; n: string }>(
    `SELECT level, count(*) AS n FROM daily_metrics WHERE project_id = $1 GROUP BY level ORDER BY level`,
    [projectId]
  )
  const metricRowsByLevel = Object.fromEntries(byLevel.rows.map((row) => [row.level, Number(row.n)]))
  const metricRows = Object.values(metricRowsByLevel).reduce((a, b) => a + b, 0)
  const count = async (sql: string, params: ReadonlyArray<unknown>) =>
    Number((await pool.query<{ n: string }>(sql, [...params])).rows[0]?.n ?? 0)
  const keywordCount = await count(`SELECT count(*) AS n FROM keywords WHERE project_id = $1`, [projectId])
  const campaignCount = await count(`SELECT count(*) AS n FROM campaigns WHERE project_id = $1`, [projectId])
  const dayRange = (await pool.query<{ days: string; first: string; last: string }>(
    `SELECT count(DISTINCT day) AS days, min(day)::text AS first, max(day)::text AS last
     FROM daily_metrics WHERE project_id = $1 AND level = 'keywords'`,
    [projectId]
  )).rows[0]
  const syncedDays = measuredSync.windowStart !== null && measuredSync.windowEnd !== null
    ? daysBetween(measuredSync.windowStart, measuredSync.windowEnd) + 1
    : 0
  const accountRow = (await pool.query<{ time_zone: string; last_synced_day: string | null }>(
    `SELECT time_zone, last_synced_day::text AS last_synced_day FROM accounts WHERE project_id = $1`,
    [projectId]
  )).rows[0]
  if (accountRow === undefined) throw new Error("the bench account is not in the database")
  const account: BenchAccount = { projectId, timeZone: accountRow.time_zone, lastSyncedDay: accountRow.last_synced_day }
  const suffixRows = await count(`SELECT count(*) AS n FROM spend_suffixes WHERE project_id = $1 AND level = 'keywords'`, [projectId])
  const window = windowEndingYesterday(Date.now(), account.timeZone, DAYS)
  const windowKeywordRows = await count(
    `SELECT count(*) AS n FROM daily_metrics WHERE project_id = $1 AND level = 'keywords' AND day BETWEEN $2 AND $3`,
    [projectId, window.start, window.end]
  )
  log(`${fmt(keywordCount)} keywords, ${fmt(metricRows)} daily metric rows over ${syncedDays} days`)

  // The steady state autovacuum reaches a minute later anyway, without it running during the measurements.
  log("VACUUM ANALYZE")
  await pool.query("VACUUM ANALYZE")

  // Fresh pools for the measured statements: a backend that has run a JIT-compiled statement (the obvious
  // aggregate, or the counts above) runs later parallel statements measurably slower.
  const acsPool = makePool({ connectionString: databaseUrl, max: 2 })
  cleanups.push({ name: "the acs-statements pool", run: () => acsPool.end() })
  const obviousPool = makePool({ connectionString: databaseUrl, max: 2 })
  cleanups.push({ name: "the obvious-SQL pool", run: () => obviousPool.end() })

  log("starting the bare node:http + pg server")
  const bare: BareServer = await startBareServer(databaseUrl, projectId)
  cleanups.push({ name: "the bare server", run: () => bare.stop() })
  const bareClient = makeHttpClient()
  cleanups.push({ name: "the bare client", run: () => bareClient.close() })

  const acsClient = current.client
  const keywordsUrl = `${current.api}/accounts/${projectId}/keywords?days=${DAYS}&limit=${LIMIT}`
  const campaignsUrl = `${current.api}/accounts/${projectId}/campaigns`
  const bareAcsUrl = `${bare.baseUrl}/acs?days=${DAYS}&limit=${LIMIT}`
  const bareObviousUrl = `${bare.baseUrl}/obvious?days=${DAYS}&limit=${LIMIT}`

  // Identical answers?
  log("comparing answers")
  const acsPage = toKeywordPage(await acsClient.getJson(keywordsUrl), "acs keywords")
  const obviousPage = pageAsJson(await obviousKeywords(obviousPool, account, DAYS, LIMIT))
  const bareAcsPage = toKeywordPage(await bareClient.getJson(bareAcsUrl), "bare /acs")
  const bareObviousPage = toKeywordPage(await bareClient.getJson(bareObviousUrl), "bare /obvious")
  const identical = {
    acsVsObviousSql: compare(acsPage, obviousPage),
    acsVsBareAcsQuery: compare(acsPage, bareAcsPage),
    acsVsBareObvious: compare(acsPage, bareObviousPage)
  }
  log(`acs vs the obvious SQL: ${identical.acsVsObviousSql.identical ? "identical" : "DIFFERENT"}`)

  // Latencies.
  log("measuring acs keywords vs the bare server running acs's statements (interleaved)")
  const paired = await interleaved({
    acsKeywords: () => acsClient.getJson(keywordsUrl),
    bareAcsQuery: () => bareClient.getJson(bareAcsUrl)
  }, FAST)
  log("measuring acs campaigns")
  const campaigns = await sample(() => acsClient.getJson(campaignsUrl), { warmup: FAST.warmup, samples: FAST.rounds * FAST.block })
  log("measuring acs's statements through bare pg (no HTTP)")
  const acsDirect = await sample(() => acsKeywords(acsPool, account, DAYS, LIMIT), { warmup: FAST.warmup, samples: FAST.rounds * FAST.block })
  log("measuring the obvious SQL through bare pg")
  const obviousDirect = await sample(() => obviousKeywords(obviousPool, account, DAYS, LIMIT), SLOW)
  log("measuring the bare server running the obvious SQL")
  const bareObvious = await sample(() => bareClient.getJson(bareObviousUrl), SLOW)

  const latency = {
    acsKeywords: { description: `acs GET keywords?days=${DAYS}&limit=${LIMIT} (HTTP)`, ...summarize(paired.acsKeywords) },
    acsCampaigns: { description: "acs GET campaigns (HTTP)", ...summarize(campaigns) },
    bareAcsQuery: { description: "bare node:http + pg, acs's statements (HTTP)", ...summarize(paired.bareAcsQuery) },
    bareObviousSql: { description: "bare node:http + pg, obvious SQL (HTTP)", ...summarize(bareObvious) },
    acsQueryDirect: { description: "acs's statements through bare pg", ...summarize(acsDirect) },
    obviousSqlDirect: { description: "obvious aggregate SQL through bare pg", ...summarize(obviousDirect) }
  } satisfies Record<string, Summary & { readonly description: string }>

  // Plans.
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
  const single = await timeIt(() => acsClient.getJson(keywordsUrl))

  const settings = await pool.query<{ name: string; setting: string; unit: string | null }>(
    `SELECT name, setting, unit FROM pg_settings
     WHERE name IN ('shared_buffers', 'work_mem', 'max_parallel_workers_per_gather', 'jit', 'fsync', 'synchronous_commit')`
  )
  const version = (await pool.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v ?? "?"

  const surfaces = await benchSurfaces({ baseUrl: current.api.replace(/\/api\/v1$/, ""), key: BOOTSTRAP_KEY, projectId, log })

  log("the change pipeline: ledger pages, proposals, auto-apply latency")
  const ledger = await benchLedger(cluster, log)
  const loginFlood = await benchLoginFlood(log)

  // Targets.
  const readSpeedup = latency.obviousSqlDirect.p95Ms / latency.acsKeywords.p95Ms
  const httpOverhead = latency.acsKeywords.p50Ms / latency.bareAcsQuery.p50Ms
  const httpOverheadVsObvious = latency.acsKeywords.p50Ms / latency.bareObviousSql.p50Ms
  const rate = (s: SyncMeasurement) => metricRows / s.seconds
  const syncRow = (s: SyncMeasurement) =>
    `${fmt(rate(s), 0)} (${fmt(metricRows)} rows in ${fmt(s.seconds)} s: fetch+stage ${fmt(s.fetchAndStageSeconds ?? Number.NaN)} s, swap ${fmt(s.swapSeconds ?? Number.NaN)} s)`
  const targets: Array<TargetRow> = [
    ...surfaceTargets(surfaces),
    {
      name: "bench size: keywords",
      target: `>= ${fmt(TARGET_KEYWORDS)}`,
      measured: fmt(keywordCount),
      value: keywordCount,
      pass: keywordCount >= TARGET_KEYWORDS
    },
    {
      name: "bench size: days synced",
      target: `>= ${TARGET_DAYS}`,
      measured: `${syncedDays} (${dayRange?.days ?? 0} with keyword rows)`,
      value: syncedDays,
      pass: syncedDays >= TARGET_DAYS
    },
    shipped !== undefined
      ? {
        name: "sync: metric rows / s into Postgres",
        target: `>= ${fmt(TARGET_SYNC_ROWS_PER_SECOND)}`,
        measured: syncRow(shipped),
        value: rate(shipped),
        pass: rate(shipped) >= TARGET_SYNC_ROWS_PER_SECOND
      }
      : {
        name: "sync: metric rows / s into Postgres",
        target: `>= ${fmt(TARGET_SYNC_ROWS_PER_SECOND)}`,
        measured: `STALLED: a swap statement ran > ${STALL_SECONDS} s (fetch+stage ${fmt(stall?.sync.fetchAndStageSeconds ?? Number.NaN)} s for ${fmt(stall?.stagedRows ?? 0)} staged rows)`,
        value: null,
        pass: false
      },
    ...(workaround !== undefined
      ? [{
        name: "sync with enable_nestloop=off (workaround)",
        target: `(>= ${fmt(TARGET_SYNC_ROWS_PER_SECOND)})`,
        measured: syncRow(workaround),
        value: rate(workaround),
        pass: null
      }]
      : []),
    describeSyncVersions(versions),
    {
      name: "keyword read: obvious SQL p95 / acs p95",
      target: `>= ${TARGET_READ_SPEEDUP}x`,
      measured: `${fmt(readSpeedup)}x (${fmt(latency.obviousSqlDirect.p95Ms)} / ${fmt(latency.acsKeywords.p95Ms)} ms)`,
      value: readSpeedup,
      pass: readSpeedup >= TARGET_READ_SPEEDUP
    },
    {
      name: "keyword read: results identical to obvious SQL",
      target: "identical",
      measured: identical.acsVsObviousSql.identical ? "identical (50 ids, order, metrics, total)" : "DIFFERENT",
      value: identical.acsVsObviousSql.identical ? 1 : 0,
      pass: identical.acsVsObviousSql.identical
    },
    {
      name: "HTTP overhead: acs p50 / bare p50 (acs's query)",
      target: `<= ${TARGET_HTTP_OVERHEAD}x`,
      measured: `${fmt(httpOverhead)}x (${fmt(latency.acsKeywords.p50Ms)} / ${fmt(latency.bareAcsQuery.p50Ms)} ms)`,
      value: httpOverhead,
      pass: httpOverhead <= TARGET_HTTP_OVERHEAD
    },
    {
      name: "ledger page p95: 1,000,000 rows / 10,000 rows",
      target: `<= ${TARGET_LEDGER_PAGE_RATIO}x`,
      measured: `${fmt(ledger.pages.ratioP95)}x (first page ${fmt(ledger.pages.large.first.p95Ms)} / ${
        fmt(ledger.pages.small.first.p95Ms)
      } ms, deep page ${fmt(ledger.pages.large.deep.p95Ms)} / ${fmt(ledger.pages.small.deep.p95Ms)} ms)`,
      value: ledger.pages.ratioP95,
      pass: ledger.pages.ratioP95 <= TARGET_LEDGER_PAGE_RATIO
    },
    {
      name: "auto-applied proposal to applied, p95 (client polling)",
      target: `< ${fmt(TARGET_APPLY_P95_MS, 0)} ms`,
      measured: `${fmt(ledger.autoApply.proposalToApplied.p95Ms)} ms (p50 ${fmt(ledger.autoApply.proposalToApplied.p50Ms)} ms; ` +
        `server-side created→applied p95 ${fmt(ledger.autoApply.serverSide.p95Ms)} ms)`,
      value: ledger.autoApply.proposalToApplied.p95Ms,
      pass: ledger.autoApply.proposalToApplied.p95Ms < TARGET_APPLY_P95_MS
    },
    {
      name: `proposal latency with 1,000,000 ledger rows (${ledger.proposals.clients} clients)`,
      target: "(reported)",
      measured: `p50 ${fmt(ledger.proposals.latency.p50Ms)} ms, p95 ${fmt(ledger.proposals.latency.p95Ms)} ms, ${
        fmt(ledger.proposals.perSecond, 0)
      } proposals/s`,
      value: ledger.proposals.perSecond,
      pass: null
    }
  ]
  const allPass = targets.every((t) => t.pass !== false)

  const results = {
    timestamp: new Date().toISOString(),
    startedAt: startedAt.toISOString(),
    durationSeconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
    machine: {
      cpus: Os.cpus().length,
      cpuModel: Os.cpus()[0]?.model ?? "?",
      memoryGiB: Math.round(Os.totalmem() / 2 ** 30),
      loadAverageAtStart: loadAtStart,
      loadAverageAtEnd: Os.loadavg(),
      node: process.version,
      postgres: version
    },
    postgresSettings: Object.fromEntries(settings.rows.map((row) => [row.name, row.unit === null ? row.setting : `${row.setting} ${row.unit}`])),
    simulator: { seed: SEED, size: "bench" },
    account: { projectId, name: accountName, timeZone: account.timeZone, lastSyncedDay: account.lastSyncedDay },
    sizes: {
      keywords: keywordCount,
      campaigns: campaignCount,
      syncedDays,
      keywordDays: { count: Number(dayRange?.days ?? 0), first: dayRange?.first ?? null, last: dayRange?.last ?? null },
      metricRows,
      metricRowsByLevel,
      keywordSpendSuffixRows: suffixRows,
      readWindow: window,
      keywordDailyRowsInReadWindow: windowKeywordRows
    },
    sync: {
      shipped: shipped === undefined ? null : { ...shipped, metricRows, metricRowsPerSecond: Math.round(rate(shipped)) },
      stall: stall ?? null,
      workaround: workaround === undefined
        ? null
        : { options: WORKAROUND_OPTIONS, ...workaround, metricRows, metricRowsPerSecond: Math.round(rate(workaround)) },
      versions
    },
    latency,
    ratios: {
      obviousSqlP95OverAcsKeywordsP95: readSpeedup,
      acsKeywordsP50OverBareAcsQueryP50: httpOverhead,
      acsKeywordsP50OverBareObviousP50: httpOverheadVsObvious,
      bareObviousP95OverAcsKeywordsP95: latency.bareObviousSql.p95Ms / latency.acsKeywords.p95Ms
    },
    identical,
    surfaces,
    ledger,
    loginFlood,
    targets: targets.map(({ name, target, value, pass }) => ({ name, target, value, pass })),
    allPass,
    plans,
    notes: [
      "Sync seconds run from the sync row's startedAt to when the bench saw it end (polled every 0.5 s), so they hold even if acs's own finishedAt were taken at the swap transaction's start; finishedAt - startedAt is reported beside them. Rows/s counts every daily_metrics row of the account (all levels).",
      "VACUUM ANALYZE ran after the sync, before any read was measured; the reads ran on an acs restarted after the sync with the default settings.",
      "The obvious SQL runs on its own connections (bench pool and bare-server pool): a backend that has run a JIT-compiled statement runs later parallel statements slower, which would otherwise handicap whatever shares it.",
      "acs keywords and the bare server running acs's statements were sampled in alternating blocks over one keep-alive connection each.",
      "The bare server reads the account (time zone, last synced day) once at start; it has no authentication, rate limiting or request logging.",
      `A single acs keyword request after the EXPLAINs took ${fmt(single)} ms.`
    ]
  }
  const file = writeResults(results)

  const out = [
    "",
    `acs warehouse benchmark: ${accountName}, ${fmt(keywordCount)} keywords, ${syncedDays} days, ${fmt(metricRows)} daily metric rows`,
    "",
    printTargets(targets),
    "",
    table(
      ["latency", "samples", "p50 ms", "p95 ms", "min ms", "max ms"],
      Object.values(latency).map((l) => [l.description, String(l.samples), fmt(l.p50Ms), fmt(l.p95Ms), fmt(l.minMs), fmt(l.maxMs)])
    ),
    "",
    ...(shipped !== undefined
      ? [
        `sync: ${fmt(shipped.seconds)} s observed (acs's finishedAt says ${fmt(shipped.reportedSeconds ?? Number.NaN)} s), rowsWritten ${fmt(shipped.rowsWritten)}`,
        `  ${describeCpu(shipped.cpu)}`
      ]
      : [
        `sync as shipped: STALLED after ${fmt(stall?.sync.seconds ?? Number.NaN)} s; statement running ${STALL_SECONDS}+ s:`,
        `  ${JSON.stringify(stall?.statement)}`,
        `  ${describeCpu(stall?.cpu)}`
      ]),
    ...(workaround !== undefined
      ? [
        `sync with ${WORKAROUND_OPTIONS}: ${fmt(workaround.seconds)} s observed (acs's finishedAt says ${fmt(workaround.reportedSeconds ?? Number.NaN)} s), rowsWritten ${fmt(workaround.rowsWritten)}`,
        `  ${describeCpu(workaround.cpu)}`
      ]
      : []),
    `acs p50 / bare obvious-SQL server p50: ${fmt(httpOverheadVsObvious)}x`,
    ...describeLoginFlood(loginFlood).map((line) => `login flood, ${line}`),
    `answers: acs vs obvious SQL ${identical.acsVsObviousSql.identical ? "identical" : "DIFFERENT"}; acs vs bare acs-statements ${identical.acsVsBareAcsQuery.identical ? "identical" : "DIFFERENT"}; acs vs bare obvious ${identical.acsVsBareObvious.identical ? "identical" : "DIFFERENT"}`,
    "",
    table(
      ["plan (EXPLAIN ANALYZE)", "execution ms", "top node"],
      plans.map((p) => [p.name, p.executionMs === null ? "?" : fmt(p.executionMs, 3), (p.text[0] ?? "").trim().slice(0, 100)])
    ),
    "",
    `wrote ${file}; ${allPass ? "all targets met" : "SOME TARGETS MISSED"}`,
    ""
  ].join("\n")
  process.stdout.write(out)
  if (!identical.acsVsObviousSql.identical) {
    process.stdout.write(`first differences: ${JSON.stringify(identical.acsVsObviousSql.firstDifferences, null, 2)}\n`)
  }
  if (!allPass) process.exitCode = 1
}

/** acs as the bench runs it: the demo org connected to the simulator, no scheduled sync, reads unlimited. */
const acsEnv = (databaseUrl: string, simulatorUrl: string): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  ACS_SECRETS_KEY: SECRETS_KEY,
  ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
  SIMULATOR_URL: simulatorUrl,
  ACS_DEMO: "true",
  SYNC_INTERVAL_MINUTES: "0",
  RATE_LIMIT_READ: "1000000",
  LOG_LEVEL: "warn"
})

/**
 * A partial run's world: PostgreSQL, the simulator (`size`), acs with the demo org (ACS_DEMO=true) and its first
 * sync of the writable account; the cleanups are registered.
 */
const startPartialRun = async (size: "bench" | "demo") => {
  const cluster: Cluster = await startCluster()
  cleanups.push({ name: "PostgreSQL", run: () => cluster.stop() })
  const admin = makePool({ connectionString: cluster.url("postgres"), max: 1 })
  await admin.query("CREATE DATABASE acs_bench")
  await admin.end()
  const pool = makePool({ connectionString: cluster.url("acs_bench"), max: 4 })
  cleanups.push({ name: "the bench pool", run: () => pool.end() })
  const simulator: Simulator = await startSimulator({ seed: SEED, size, port: 0 })
  cleanups.push({ name: "the simulator", run: () => simulator.close() })
  const acs = await startAcs(acsEnv(cluster.url("acs_bench"), simulator.url), BOOTSTRAP_KEY)
  cleanups.push({ name: "acs", run: () => acs.stop() })
  const spawnedAt = Date.now()
  let projectId: string | undefined
  while (projectId === undefined) {
    const accounts = array(record(await acs.client.getJson(`${acs.api}/accounts`), "accounts")["accounts"], "accounts").map((a) => record(a, "account"))
    const bench = accounts.find((a) => !boolean(a, "readOnly"))
    if (bench !== undefined) projectId = string(bench, "projectId")
    else if (Date.now() - spawnedAt > 60_000) throw new Error(`no writable account was imported:\n${acs.logs()}`)
    else await sleep(250)
  }
  log("waiting for the first sync (ACS_DEMO)")
  const first = await waitForSync({ acs, pool, projectId, stallSeconds: STALL_SECONDS, timeoutMs: SYNC_TIMEOUT_MS, log })
  if (first.kind !== "succeeded") throw new Error(`the first sync did not succeed (${first.kind})\n${acs.logs()}`)
  return { acs, pool, projectId, first }
}

/**
 * `--only=sync`: PostgreSQL, the simulator at bench size and acs (ACS_DEMO=true), the first sync, then the v1/v5
 * comparison; nothing else. Writes bench/results-sync.json (a partial run leaves a full run's results alone).
 */
const syncOnly = async () => {
  const { acs, pool, projectId, first } = await startPartialRun("bench")
  const versions = await benchSyncVersions({ acs, pool, projectId, stallSeconds: STALL_SECONDS, timeoutMs: SYNC_TIMEOUT_MS, log })
  const target = describeSyncVersions(versions)
  const outDir = Path.join(repoRoot, "bench")
  Fs.mkdirSync(outDir, { recursive: true })
  const file = Path.join(outDir, "results-sync.json")
  Fs.writeFileSync(file, `${JSON.stringify({ timestamp: new Date().toISOString(), only: "sync", cpus: Os.cpus().length, firstSync: first.sync, versions, targets: [target], allPass: versions.pass }, null, 2)}\n`)
  process.stdout.write(`\n${printTargets([target])}\n\nwrote ${Path.relative(repoRoot, file)}\n`)
  if (!versions.pass) process.exitCode = 1
}

/** The same read over REST, RPC and MCP: each of RPC and MCP within 1.2x of REST at p50, the same rows. */
const surfaceTargets = (surfaces: SurfacesResult): Array<TargetRow> => [
  {
    name: "same read: RPC p50 / REST p50",
    target: `<= ${SURFACE_RATIO_TARGET}x`,
    measured: `${fmt(surfaces.rpcOverRest)}x (${fmt(surfaces.rpc.p50Ms)} / ${fmt(surfaces.rest.p50Ms)} ms)`,
    value: surfaces.rpcOverRest,
    pass: surfaces.identical && surfaces.rpcOverRest <= SURFACE_RATIO_TARGET
  },
  {
    name: "same read: MCP p50 / REST p50",
    target: `<= ${SURFACE_RATIO_TARGET}x`,
    measured: `${fmt(surfaces.mcpOverRest)}x (${fmt(surfaces.mcp.p50Ms)} / ${fmt(surfaces.rest.p50Ms)} ms)`,
    value: surfaces.mcpOverRest,
    pass: surfaces.identical && surfaces.mcpOverRest <= SURFACE_RATIO_TARGET
  }
]

/**
 * `--only=surfaces`: PostgreSQL, the simulator (default size) and acs (ACS_DEMO=true), the first sync, then the
 * same read over REST, RPC and MCP; nothing else. Writes bench/results-surfaces.json.
 */
const surfacesOnly = async () => {
  const { acs, projectId } = await startPartialRun("demo")
  const surfaces = await benchSurfaces({ baseUrl: acs.api.replace(/\/api\/v1$/, ""), key: BOOTSTRAP_KEY, projectId, log })
  const targets = surfaceTargets(surfaces)
  const outDir = Path.join(repoRoot, "bench")
  Fs.mkdirSync(outDir, { recursive: true })
  const file = Path.join(outDir, "results-surfaces.json")
  Fs.writeFileSync(file, `${JSON.stringify({ timestamp: new Date().toISOString(), only: "surfaces", cpus: Os.cpus().length, surfaces, targets, allPass: surfaces.pass }, null, 2)}\n`)
  process.stdout.write(`\n${printTargets(targets)}\n\nwrote ${Path.relative(repoRoot, file)}\n`)
  if (!surfaces.pass) process.exitCode = 1
}

const onlyAt = process.argv.indexOf("--only")
const only = process.argv.find((arg) => arg.startsWith("--only="))?.slice("--only=".length) ?? (onlyAt >= 0 ? process.argv[onlyAt + 1] : undefined)
try {
  if (only === "login-flood") process.stdout.write(`${describeLoginFlood(await benchLoginFlood(log)).join("\n")}\n`)
  else if (only === "sync") await syncOnly()
  else if (only === "surfaces") await surfacesOnly()
  else if (only !== undefined) throw new Error(`--only takes login-flood, sync or surfaces, not ${only}`)
  else await main()
} catch (error) {
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
  process.exitCode = 1
} finally {
  await cleanUp()
}
