/**
 * The change pipeline's world for `pnpm bench` (proposals and the cheap read): its own database in the bench
 * cluster, a simulator with two writable accounts (one with many campaigns, so that every person proposal of a
 * measured window can take a campaign of its own and no apply meets another's change), and acs as a real
 * process. The ledgers are seeded in SQL (generate_series): 1,000,000 rows on the large account, 10,000 on the
 * small one. The bench signs in as the admin person (session cookie) and creates a write key.
 *
 * The 24-hour auto-apply cap (20 per account) would turn all but the first 20 person proposals into queued
 * ones; a trigger in this throwaway database takes auto-applied rows out of the count as they are inserted
 * (`counts_toward_cap` false), so acs runs its auto-apply path, count included, for every one of them.
 *
 * BENCH_WORKER=process (the default) runs the apply and webhook workers in a process of their own (`acs worker`,
 * with WORKER_CONCURRENCY=8) beside an API process with WORKER_CONCURRENCY=0 and WEBHOOK_CONCURRENCY=0, as issue
 * 12 lets a deployment do;
 * BENCH_WORKER=inline runs them inside the API process (the defaults). BENCH_WORKER_NODE_ARGS adds node flags to
 * the worker process (`--cpu-prof --cpu-prof-dir=/tmp/prof` to see where an apply's CPU goes), and
 * BENCH_API_NODE_OPTIONS sets NODE_OPTIONS for the API process (`--cpu-prof` is not allowed there: `--require` a
 * script that runs node:inspector's profiler).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { nodeArgs } from "../../packages/server/test/support/entries.ts"
import { repoRoot } from "../../packages/server/test/support/server.ts"
import { type Simulator, startSimulator } from "../../packages/upstream/src/simulator/Simulator.ts"
import { ACCOUNT_MANAGER } from "../../packages/upstream/src/simulator/SimulatorSize.ts"
import { type AcsInstance, BENCH_ADMIN, signIn, startAcs } from "./acs.ts"
import type { BenchCluster } from "./cluster.ts"
import { makeHttpClient, retrying } from "./measure.ts"
import { makePool, type Pool } from "./pg.ts"

export const PIPELINE_DATABASE = "acs_bench_ledger"
export const SMALL_LEDGER = 10_000
export const LARGE_LEDGER = 1_000_000
const CAMPAIGNS = 600
const BOOTSTRAP_KEY = "acs_bench_ledger_key_0123456789abcdefghijklmnopqrstu"
const SECRETS_KEY = Buffer.alloc(32, 13).toString("base64")

export type WorkerMode = "process" | "inline"

const workerMode = (): WorkerMode => {
  const raw = process.env["BENCH_WORKER"] ?? "process"
  if (raw !== "process" && raw !== "inline") throw new Error(`BENCH_WORKER is process or inline, not ${raw}`)
  return raw
}

export interface PipelineAccount {
  readonly projectId: string
  readonly orgId: string
}

export interface Pipeline {
  readonly cluster: BenchCluster
  readonly database: string
  readonly acs: AcsInstance
  /** The bench's own connection (role `bench`: left out of the statement counts). */
  readonly pool: Pool
  readonly large: PipelineAccount
  readonly small: PipelineAccount
  /** A write key's secret (org-level): key proposals queue. */
  readonly writeKey: string
  /** The admin's session cookie (`acs_session=...`): person proposals go through the policy and auto-apply. */
  readonly cookie: string
  /** The large account's campaigns with a daily budget, as the warehouse has them now. */
  readonly budgets: () => Promise<Map<string, number>>
  /** Where the apply worker runs. */
  readonly worker: WorkerMode
  /** acs's processes (the API, and the worker when it runs apart): their CPU is acs's CPU. */
  readonly pids: ReadonlyArray<number | undefined>
  readonly stop: () => Promise<void>
}

/** `acs worker` as its own process (the run's build when there is one), stopped with SIGTERM. */
export const startWorker = (env: Record<string, string>) => {
  let output = ""
  const child: ChildProcess = spawn(process.execPath, [...(process.env["BENCH_WORKER_NODE_ARGS"]?.split(" ") ?? []), ...nodeArgs("cli"), "worker"], {
    cwd: repoRoot,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()))
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
      child.once("exit", () => {
        clearTimeout(timer)
        resolve()
      })
      child.kill("SIGTERM")
    })
  return { pid: child.pid, logs: () => output, alive: () => child.exitCode === null && child.signalCode === null, stop }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Fills an account's ledger with `rows` applied budget changes, one millisecond apart, ending an hour ago. */
const fillLedger = async (pool: Pool, projectId: string, rows: number) => {
  // Trusted rows of existing accounts: the foreign-key triggers (two lookups per row) are skipped for the seed.
  const client = await pool.connect()
  try {
    await client.query("SET session_replication_role = replica")
    await client.query(
    `INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason,
       payload, proposed_by, created_at, applied_at)
     SELECT 'act_fill_' || $1 || '_' || i, a.org_id, a.project_id, 'budget_change', 'queued', 'applied', 'review',
       '["proposed with an API key: every key-proposed change queues for review"]'::jsonb,
       'Change the daily budget of campaign "Filler" from 100.00 USD to 90.00 USD (-10.0%)', 'history',
       jsonb_build_object('campaignId', '1', 'campaignName', 'Filler', 'currency', 'USD',
         'newDailyBudgetMicros', 90000000, 'priorDailyBudgetMicros', 100000000),
       '{"kind":"key","id":"key_fill","name":"history"}'::jsonb,
       now() - interval '1 hour' - i * interval '1 millisecond', now() - interval '1 hour' - i * interval '1 millisecond'
     FROM accounts a, generate_series(1, $2::int) AS i
     WHERE a.project_id = $1`,
      [projectId, rows]
    )
    await client.query("SET session_replication_role = DEFAULT")
  } finally {
    client.release()
  }
}

export const startPipeline = async (cluster: BenchCluster, log: (message: string) => void): Promise<Pipeline> => {
  await cluster.createDatabase(PIPELINE_DATABASE)
  const stops: Array<() => Promise<void> | void> = []
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    for (const one of stops.reverse()) {
      try {
        await one()
      } catch (error) {
        log(`pipeline: stopping failed: ${String(error)}`)
      }
    }
  }
  try {
    log("pipeline: starting the simulator and acs")
    const simulator: Simulator = await startSimulator({
      seed: 9,
      size: {
        accounts: [
          { name: "Ledger 1M", currency: "USD", timeZone: "America/New_York", roleNames: [ACCOUNT_MANAGER], countriesOrRegions: ["US"], campaigns: CAMPAIGNS, adGroupsPerCampaign: 1, keywordsPerAdGroup: 2 },
          { name: "Ledger 10k", currency: "EUR", timeZone: "Europe/Berlin", roleNames: [ACCOUNT_MANAGER], countriesOrRegions: ["DE"], campaigns: 4, adGroupsPerCampaign: 2, keywordsPerAdGroup: 5 }
        ]
      }
    })
    stops.push(() => simulator.close())
    const worker = workerMode()
    const acs = await startAcs({
      ...(worker === "process" ? { WORKER_CONCURRENCY: "0", WEBHOOK_CONCURRENCY: "0" } : {}),
      ACS_SECRETS_KEY: SECRETS_KEY,
      DATABASE_URL: cluster.url(PIPELINE_DATABASE),
      ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
      ADMIN_EMAIL: BENCH_ADMIN.email,
      ADMIN_PASSWORD: BENCH_ADMIN.password,
      SIMULATOR_URL: simulator.url,
      ACS_DEMO: "true",
      SYNC_INTERVAL_MINUTES: "0",
      RATE_LIMIT_READ: "100000000",
      RATE_LIMIT_WRITE: "100000000",
      RATE_LIMIT_EXPENSIVE: "100000000",
      // The events part's webhook receiver listens on 127.0.0.1 over http (scripts/bench/events.ts).
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
      LOG_LEVEL: "warn",
      ...(process.env["BENCH_API_NODE_OPTIONS"] === undefined ? {} : { NODE_OPTIONS: process.env["BENCH_API_NODE_OPTIONS"] })
    }, BOOTSTRAP_KEY)
    stops.push(() => acs.stop())
    const workerProcess = worker === "process"
      ? startWorker({
        DATABASE_URL: cluster.url(PIPELINE_DATABASE),
        ACS_SECRETS_KEY: SECRETS_KEY,
        SIMULATOR_URL: simulator.url,
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
        // One apply fiber per proposing client (the bench's most is 8): an apply waits on the upstream most of
        // its time, and the default 4 left half the person windows' clients waiting for a free fiber.
        WORKER_CONCURRENCY: "8",
        LOG_LEVEL: "warn"
      })
      : undefined
    if (workerProcess !== undefined) stops.push(() => workerProcess.stop())
    const pool = makePool({ connectionString: cluster.benchUrl(PIPELINE_DATABASE), max: 2 })
    stops.push(() => pool.end())

    let accounts: ReadonlyArray<{ projectId: string; currency: string }> = []
    for (let i = 0; ; i++) {
      accounts = ((await retrying("GET accounts", () => acs.client.getJson(`${acs.api}/accounts`))) as { accounts: typeof accounts }).accounts
      const synced = await Promise.all(accounts.map(async (a) =>
        ((await retrying("GET syncs", () => acs.client.getJson(`${acs.api}/accounts/${a.projectId}/syncs`))) as { syncs: Array<{ status: string }> })
          .syncs[0]?.status
      ))
      if (accounts.length === 2 && synced.every((s) => s === "succeeded")) break
      if (i > 1200) throw new Error(`pipeline: the accounts did not sync: ${JSON.stringify(synced)}\n${acs.logs()}`)
      await sleep(250)
    }
    // The two accounts by their currencies (acs names accounts its own way).
    const account = async (currency: string): Promise<PipelineAccount> => {
      const projectId = accounts.find((a) => a.currency === currency)?.projectId
      const row = (await pool.query<{ org_id: string }>("SELECT org_id FROM accounts WHERE project_id = $1", [projectId])).rows[0]
      if (projectId === undefined || row === undefined) throw new Error(`pipeline: no ${currency} account in ${JSON.stringify(accounts)}`)
      return { projectId, orgId: row.org_id }
    }
    const large = await account("USD")
    const small = await account("EUR")

    log(`pipeline: seeding ${SMALL_LEDGER.toLocaleString("en-US")} and ${LARGE_LEDGER.toLocaleString("en-US")} ledger rows (generate_series)`)
    await fillLedger(pool, small.projectId, SMALL_LEDGER)
    await fillLedger(pool, large.projectId, LARGE_LEDGER)
    await pool.query(`
      CREATE FUNCTION bench_uncapped() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN NEW.counts_toward_cap := false; RETURN NEW; END $$`)
    await pool.query(`
      CREATE TRIGGER bench_uncapped BEFORE INSERT ON actions FOR EACH ROW WHEN (NEW.counts_toward_cap)
      EXECUTE FUNCTION bench_uncapped()`)
    await pool.query("VACUUM ANALYZE")

    const created = (await acs.client.sendJson("POST", `${acs.api}/keys`, { name: "bench writer", scope: "write" })) as { secret: string }
    const cookie = await signIn(acs.api, "pipeline")
    // The key works before anything is measured.
    const probe = makeHttpClient({ authorization: `Bearer ${created.secret}` })
    try {
      await probe.getJson(`${acs.api}/accounts/${large.projectId}/actions?limit=1`)
    } finally {
      probe.close()
    }

    const budgets = async () => {
      const rows = await pool.query<{ campaign_id: string; daily_budget_micros: string }>(
        "SELECT campaign_id, daily_budget_micros::text FROM campaigns WHERE project_id = $1 AND daily_budget_micros IS NOT NULL ORDER BY campaign_id",
        [large.projectId]
      )
      return new Map(rows.rows.map((row) => [row.campaign_id, Number(row.daily_budget_micros)]))
    }
    if (workerProcess !== undefined && !workerProcess.alive()) throw new Error(`pipeline: the worker process ended:\n${workerProcess.logs()}`)
    log(`pipeline: the apply and webhook workers run ${worker === "process" ? "in their own process (acs worker; the API has WORKER_CONCURRENCY=0 and WEBHOOK_CONCURRENCY=0)" : "inside the API process"}`)
    return {
      cluster,
      database: PIPELINE_DATABASE,
      acs,
      pool,
      large,
      small,
      writeKey: created.secret,
      cookie,
      budgets,
      worker,
      pids: [acs.pid, workerProcess?.pid],
      stop
    }
  } catch (error) {
    await stop()
    throw error
  }
}
