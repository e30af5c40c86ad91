/**
 * The warehouse's world for `pnpm bench`: database `acs_bench` in the bench cluster, the simulator at bench
 * size (one account with 100,000 keywords), and acs as a real process with ACS_DEMO=true, which imports the
 * simulator's accounts and syncs 90 days. The first sync is measured (rows per second into Postgres, CPU of
 * the bench process, acs and PostgreSQL per phase).
 *
 * A sync statement of acs's that runs longer than BENCH_STALL_SECONDS (default 90) is a stall: the bench
 * records it (statement, plan) as the sync result, cancels it, and, unless BENCH_NO_WORKAROUND=1, syncs again
 * with `enable_nestloop=off` on acs's sessions so the reads can still be measured; that second sync is
 * reported separately and never counts for the target.
 */
import { startSimulator, type Simulator } from "../../packages/upstream/src/simulator/Simulator.ts"
import { abortStalledSync, type AcsInstance, startAcs, type SyncInfo, toSyncInfo, waitForSync } from "./acs.ts"
import type { BenchCluster } from "./cluster.ts"
import { cpuMeter, type CpuSnapshot, type CpuSpan, cpuSpan } from "./cpu.ts"
import { array, boolean, record, string } from "./json.ts"
import { retrying } from "./measure.ts"
import { makePool, type Pool } from "./pg.ts"
import { fmt, type TargetRow } from "./report.ts"

export const SEED = 42
export const BOOTSTRAP_KEY = "acs_bench_bootstrap_key_0123456789abcdefghijklmnopq"
const SECRETS_KEY = Buffer.alloc(32, 11).toString("base64")
export const SYNC_TIMEOUT_MS = 20 * 60_000
export const STALL_SECONDS = Number(process.env["BENCH_STALL_SECONDS"] ?? 90)
const NO_WORKAROUND = process.env["BENCH_NO_WORKAROUND"] === "1"
export const WORKAROUND_OPTIONS = "-c enable_nestloop=off"
export const TARGET_SYNC_ROWS_PER_SECOND = 50_000
export const WAREHOUSE_DATABASE = "acs_bench"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** acs as the bench runs it: the demo org connected to the simulator, no scheduled sync, reads and writes unlimited. */
export const acsEnv = (databaseUrl: string, simulatorUrl: string): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  ACS_SECRETS_KEY: SECRETS_KEY,
  ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
  SIMULATOR_URL: simulatorUrl,
  ACS_DEMO: "true",
  SYNC_INTERVAL_MINUTES: "0",
  RATE_LIMIT_READ: "1000000",
  RATE_LIMIT_WRITE: "1000000",
  // acs's default pool unless asked: the guard part's proposals measured how much a larger one buys (bench/history.md).
  DATABASE_POOL_SIZE: process.env["BENCH_POOL"] ?? "10",
  LOG_LEVEL: "warn"
})

export interface SyncCpu {
  /** From when the bench starts waiting (acs ready) to the first poll that sees the swap step. */
  readonly fetchAndStage: CpuSpan
  readonly swap: CpuSpan | null
}

export interface SyncMeasurement {
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

export interface SyncStall {
  readonly statement: unknown
  readonly sync: SyncMeasurement
  readonly stagedRows: number
  readonly cpu: SyncCpu
}

export const describeCpu = (cpu: SyncCpu | undefined): string => {
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

export interface Warehouse {
  readonly databaseUrl: string
  readonly pool: Pool
  readonly projectId: string
  readonly accountName: string
  /** The acs now running (the workaround one after a stall). */
  readonly acs: () => AcsInstance
  /** Stops acs and starts it again on `url` (default: the database with the default settings). */
  readonly restartAcs: (url?: string) => Promise<AcsInstance>
  readonly closeSimulator: () => Promise<void>
  readonly shipped: SyncMeasurement | undefined
  readonly stall: SyncStall | undefined
  readonly workaround: SyncMeasurement | undefined
  /** Daily metric rows of the account after the first sync, all levels. */
  readonly metricRows: number
  /** Of those, the search terms': their daily rows, the terms, and the ad groups' low-volume buckets among them. */
  readonly searchTerms: { readonly rows: number; readonly terms: number; readonly buckets: number }
}

/**
 * Starts the warehouse's world and waits for its first sync; `cleanup` registers what to stop at the end.
 * Returns undefined when the first sync stalled and BENCH_NO_WORKAROUND=1 (nothing else can be measured).
 */
export const startWarehouse = async (options: {
  readonly cluster: BenchCluster
  readonly log: (message: string) => void
  readonly cleanup: (name: string, run: () => Promise<void> | void) => void
  readonly size?: "bench" | "demo"
}): Promise<Warehouse> => {
  const { cluster, log, cleanup } = options
  await options.cluster.createDatabase(WAREHOUSE_DATABASE)
  const databaseUrl = cluster.url(WAREHOUSE_DATABASE)
  const pool = makePool({ connectionString: cluster.benchUrl(WAREHOUSE_DATABASE), max: 4 })
  cleanup("the bench pool", () => pool.end())

  log(`starting the simulator (${options.size ?? "bench"} size)`)
  const simulator: Simulator = await startSimulator({ seed: SEED, size: options.size ?? "bench", port: 0 })
  let simulatorOpen = true
  const closeSimulator = async () => {
    if (!simulatorOpen) return
    simulatorOpen = false
    await simulator.close()
  }
  cleanup("the simulator", closeSimulator)

  let acs: AcsInstance | undefined
  cleanup("acs", () => acs?.stop())
  const restartAcs = async (url: string = databaseUrl) => {
    await acs?.stop()
    acs = undefined
    acs = await startAcs(acsEnv(url, simulator.url), BOOTSTRAP_KEY)
    return acs
  }

  log("starting acs (ACS_DEMO=true: imports the simulator's accounts and syncs them)")
  const spawnedAt = Date.now()
  let current = await restartAcs()

  // The bench account: the writable one (the other is the small read-only account).
  let projectId: string | undefined
  let accountName = ""
  while (projectId === undefined) {
    const list = record(await retrying("GET accounts", () => current.client.getJson(`${current.api}/accounts`)), "accounts")
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
  const benchProject = projectId
  log(`bench account ${accountName} (${benchProject}); waiting for its first sync (stall limit ${STALL_SECONDS} s per statement)`)

  /** Waits for a sync, metering CPU from now to the first sight of the swap step, and from there to the end. */
  const wait = async (acsNow: AcsInstance, syncId?: string) => {
    const meter = cpuMeter(acsNow.pid, cluster.dataDirectory)
    const start = meter()
    let swap: CpuSnapshot | undefined
    const outcome = await waitForSync({
      acs: acsNow,
      pool,
      projectId: benchProject,
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

  const { outcome: first, cpu: firstCpu } = await wait(current)
  if (first.kind === "failed") throw new Error(`the first sync failed: ${first.sync.error}\n${current.logs()}`)
  let shipped: SyncMeasurement | undefined
  let stall: SyncStall | undefined
  let workaround: SyncMeasurement | undefined
  if (first.kind === "succeeded") {
    shipped = { ...await measureSync(pool, first.sync, Date.now()), cpu: firstCpu }
    log(`sync ${first.sync.syncId} succeeded in ${fmt(shipped.seconds)} s`)
  } else {
    const stalledAt = Date.now()
    log(`STALL: an acs statement has run ${fmt(first.statement.seconds)} s during the sync (step ${JSON.stringify(first.sync.progress)}):`)
    log(first.statement.query)
    for (const line of first.statement.plan ?? []) log(`  ${line}`)
    stall = { statement: first.statement, sync: await measureSync(pool, first.sync, stalledAt), stagedRows: first.sync.rowsWritten, cpu: firstCpu }
    log("cancelling the stuck statement")
    const aborted = await abortStalledSync({ acs: current, pool, projectId: benchProject, syncId: first.sync.syncId, pid: first.statement.pid })
    log(`the stalled sync is now ${aborted?.status ?? "still running (backend terminated)"}`)
    if (!NO_WORKAROUND) {
      log(`syncing again with acs's sessions under '${WORKAROUND_OPTIONS}' (reported separately, not for the target)`)
      current = await restartAcs(`${databaseUrl}?options=${encodeURIComponent(WORKAROUND_OPTIONS)}`)
      const begun = toSyncInfo(await current.client.postJson(`${current.api}/accounts/${benchProject}/syncs`))
      const { outcome: second, cpu: secondCpu } = await wait(current, begun.syncId)
      if (second.kind !== "succeeded") {
        throw new Error(`the workaround sync did not succeed either (${second.kind}): ${JSON.stringify(second.kind === "stalled" ? second.statement : second.sync.error)}`)
      }
      workaround = { ...await measureSync(pool, second.sync, Date.now()), cpu: secondCpu }
      log(`workaround sync ${second.sync.syncId} succeeded in ${fmt(workaround.seconds)} s`)
    }
  }
  const metricRows = Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM daily_metrics WHERE project_id = $1`, [benchProject])).rows[0]?.n ?? 0)
  const terms = (await pool.query<{ rows: string; terms: string; buckets: string }>(
    `SELECT (SELECT count(*) FROM daily_metrics WHERE project_id = $1 AND level = 'searchTerms') AS rows,
       count(*) AS terms, count(*) FILTER (WHERE text IS NULL) AS buckets
     FROM search_terms WHERE project_id = $1`,
    [benchProject]
  )).rows[0]
  const searchTerms = { rows: Number(terms?.rows ?? 0), terms: Number(terms?.terms ?? 0), buckets: Number(terms?.buckets ?? 0) }
  return {
    databaseUrl,
    pool,
    projectId: benchProject,
    accountName,
    acs: () => {
      if (acs === undefined) throw new Error("acs is not running")
      return acs
    },
    restartAcs,
    closeSimulator,
    shipped,
    stall,
    workaround,
    metricRows,
    searchTerms
  }
}

export const syncRate = (warehouse: Warehouse, s: SyncMeasurement) => warehouse.metricRows / s.seconds

/** The sync's rows/s target (and the workaround's row, informational, after a stall). */
export const syncTargets = (warehouse: Warehouse): Array<TargetRow> => {
  const { shipped, stall, workaround, metricRows, searchTerms } = warehouse
  const terms = `${fmt(searchTerms.rows)} of them search-term rows of ${fmt(searchTerms.terms)} terms, ${fmt(searchTerms.buckets)} low-volume buckets`
  const syncRow = (s: SyncMeasurement) =>
    `${fmt(syncRate(warehouse, s), 0)} (${fmt(metricRows)} rows in ${fmt(s.seconds)} s: fetch+stage ${fmt(s.fetchAndStageSeconds ?? Number.NaN)} s, ` +
    `swap ${fmt(s.swapSeconds ?? Number.NaN)} s; ${terms})`
  const name = "sync: metric rows / s into Postgres"
  const target = `>= ${fmt(TARGET_SYNC_ROWS_PER_SECOND)}`
  return [
    shipped !== undefined
      ? { name, target, measured: syncRow(shipped), value: syncRate(warehouse, shipped), pass: syncRate(warehouse, shipped) >= TARGET_SYNC_ROWS_PER_SECOND }
      : {
        name,
        target,
        measured: `STALLED: a swap statement ran > ${STALL_SECONDS} s (fetch+stage ${fmt(stall?.sync.fetchAndStageSeconds ?? Number.NaN)} s for ${fmt(stall?.stagedRows ?? 0)} staged rows)`,
        value: null,
        pass: false
      },
    ...(workaround !== undefined
      ? [{ name: "sync with enable_nestloop=off (workaround)", target: `(${target})`, measured: syncRow(workaround), value: syncRate(warehouse, workaround), pass: null }]
      : [])
  ]
}
