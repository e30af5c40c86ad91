/**
 * The change-pipeline part of `pnpm bench`: its own database in the bench's cluster, the simulator at demo
 * size (it answers at once) and acs as a real process. It measures
 *
 * - ledger page latency (`GET actions?limit=50`, first page and a page deep in the history) on an account with
 *   10,000 ledger rows and one with 1,000,000 (target: within 1.5× of each other);
 * - proposal latency p50/p95 and throughput with 1,000,000 rows in the ledger (8 clients, key proposals, which
 *   queue, so only the proposal transaction is measured);
 * - the time from an auto-applied proposal to `applied`, as a client polling the ledger sees it (target: p95
 *   under one second). The 24-hour cap allows 20 auto-applies per account, so after each 20 the bench takes
 *   them out of the count in its throwaway database.
 */
import { performance } from "node:perf_hooks"
import type { Cluster } from "../../packages/server/test/support/postgres.ts"
import { startSimulator } from "../../packages/upstream/src/simulator/Simulator.ts"
import { startAcs } from "./acs.ts"
import { type HttpClient, interleaved, makeHttpClient, summarize, type Summary } from "./measure.ts"
import { makePool } from "./pg.ts"

export const TARGET_LEDGER_PAGE_RATIO = 1.5
export const TARGET_APPLY_P95_MS = 1_000

const SMALL_LEDGER = 10_000
const LARGE_LEDGER = 1_000_000
const PROPOSALS = 400
const PROPOSAL_CLIENTS = 8
const AUTO_APPLIES = 60
const KEY = "acs_bench_ledger_key_0123456789abcdefghijklmnopqrstu"
const EMAIL = "bench@acs.example"
const PASSWORD = "bench-password-0123456789"

export interface LedgerResults {
  readonly ledgerRows: { readonly small: number; readonly large: number }
  readonly pages: {
    readonly small: { readonly first: Summary; readonly deep: Summary }
    readonly large: { readonly first: Summary; readonly deep: Summary }
    readonly ratioP95: number
  }
  readonly proposals: { readonly latency: Summary; readonly perSecond: number; readonly clients: number }
  readonly autoApply: { readonly proposalToApplied: Summary; readonly serverSide: Summary }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const post = async (url: string, body: unknown, headers: Record<string, string>) => {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) })
  const text = await response.text()
  if (response.status !== 201) throw new Error(`POST ${url} answered ${response.status}: ${text.slice(0, 400)}`)
  return JSON.parse(text) as { actionId: string; mode: string }
}

/** Fills an account's ledger with `rows` applied budget changes, one millisecond apart, ending an hour ago. */
const fillLedger = async (databaseUrl: string, projectId: string, rows: number) => {
  const pool = makePool({ connectionString: databaseUrl, max: 1 })
  try {
    await pool.query(
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
    await pool.query("ANALYZE actions")
  } finally {
    await pool.end()
  }
}

export const benchLedger = async (cluster: Cluster, log: (message: string) => void): Promise<LedgerResults> => {
  const admin = makePool({ connectionString: cluster.url("postgres"), max: 1 })
  await admin.query("CREATE DATABASE acs_bench_ledger")
  await admin.end()
  const databaseUrl = cluster.url("acs_bench_ledger")

  log("ledger: starting the simulator (demo size) and acs")
  const simulator = await startSimulator({ seed: 9, size: "demo" })
  const acs = await startAcs({
    DATABASE_URL: databaseUrl,
    ADMIN_BOOTSTRAP_KEY: KEY,
    ADMIN_EMAIL: EMAIL,
    ADMIN_PASSWORD: PASSWORD,
    SIMULATOR_URL: simulator.url,
    ACS_DEMO: "true",
    SYNC_INTERVAL_MINUTES: "0",
    RATE_LIMIT_READ: "10000000",
    RATE_LIMIT_WRITE: "10000000",
    RATE_LIMIT_EXPENSIVE: "10000000",
    LOG_LEVEL: "warn"
  }, KEY)
  const pages: HttpClient = makeHttpClient({ authorization: `Bearer ${KEY}` })
  try {
    let accounts: ReadonlyArray<{ projectId: string; currency: string; readOnly: boolean }> = []
    for (let i = 0; i < 600; i++) {
      accounts = ((await acs.client.getJson(`${acs.api}/accounts`)) as { accounts: typeof accounts }).accounts
      const synced = await Promise.all(accounts.map(async (a) =>
        ((await acs.client.getJson(`${acs.api}/accounts/${a.projectId}/syncs`)) as { syncs: Array<{ status: string }> }).syncs[0]?.status
      ))
      if (accounts.length > 0 && synced.every((s) => s === "succeeded")) break
      await sleep(200)
    }
    const writable = accounts.filter((a) => !a.readOnly)
    const large = writable.find((a) => a.currency === "USD")
    const small = writable.find((a) => a !== large)
    if (large === undefined || small === undefined) throw new Error("the demo org has no two writable accounts")

    log(`ledger: filling ${SMALL_LEDGER.toLocaleString()} and ${LARGE_LEDGER.toLocaleString()} ledger rows`)
    await fillLedger(databaseUrl, small.projectId, SMALL_LEDGER)
    await fillLedger(databaseUrl, large.projectId, LARGE_LEDGER)

    log("ledger: page latency")
    // The filler rows end an hour ago, one millisecond apart: `before` half-way down the history.
    const middle = (rows: number) => new Date(Date.now() - 3_600_000 - Math.floor(rows / 2)).toISOString()
    const page = (projectId: string, before?: string) => () =>
      pages.getJson(`${acs.api}/accounts/${projectId}/actions?limit=50${before === undefined ? "" : `&before=${encodeURIComponent(before)}`}`)
    const samples = await interleaved({
      smallFirst: page(small.projectId),
      smallDeep: page(small.projectId, middle(SMALL_LEDGER)),
      largeFirst: page(large.projectId),
      largeDeep: page(large.projectId, middle(LARGE_LEDGER))
    }, { warmup: 20, rounds: 40, block: 5 })
    const smallFirst = summarize(samples.smallFirst)
    const smallDeep = summarize(samples.smallDeep)
    const largeFirst = summarize(samples.largeFirst)
    const largeDeep = summarize(samples.largeDeep)
    const ratioP95 = Math.max(largeFirst.p95Ms / smallFirst.p95Ms, largeDeep.p95Ms / smallDeep.p95Ms)

    log(`ledger: ${PROPOSALS} proposals from ${PROPOSAL_CLIENTS} clients`)
    const campaigns = ((await acs.client.getJson(`${acs.api}/accounts/${large.projectId}/campaigns?limit=100`)) as {
      campaigns: Array<{ campaignId: string; dailyBudgetMicros: number | null }>
    }).campaigns.filter((c) => c.dailyBudgetMicros !== null)
    const keyHeaders = { authorization: `Bearer ${KEY}` }
    const latencies: Array<number> = []
    let next = 0
    const started = performance.now()
    await Promise.all(Array.from({ length: PROPOSAL_CLIENTS }, async () => {
      while (next < PROPOSALS) {
        const index = next++
        const campaign = campaigns[index % campaigns.length]!
        const t0 = performance.now()
        await post(`${acs.api}/accounts/${large.projectId}/actions/budget-change`, {
          campaignId: campaign.campaignId,
          newDailyBudgetMicros: campaign.dailyBudgetMicros! - 10_000 * (index + 1),
          reason: "bench"
        }, keyHeaders)
        latencies.push(performance.now() - t0)
      }
    }))
    const perSecond = PROPOSALS / ((performance.now() - started) / 1000)

    log(`ledger: ${AUTO_APPLIES} auto-applied proposals, each polled until applied`)
    const login = await fetch(`${acs.api}/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD })
    })
    const cookie = login.headers.getSetCookie().find((line) => line.startsWith("acs_session="))?.split(";")[0]
    if (cookie === undefined) throw new Error(`bench login failed: ${login.status}`)
    const pool = makePool({ connectionString: databaseUrl, max: 1 })
    const budgets = new Map(campaigns.map((c) => [c.campaignId, c.dailyBudgetMicros!]))
    const observed: Array<number> = []
    const serverSide: Array<number> = []
    try {
      for (let index = 0; index < AUTO_APPLIES; index++) {
        if (index % 20 === 0) await pool.query("UPDATE actions SET counts_toward_cap = false WHERE project_id = $1", [large.projectId])
        const campaign = campaigns[index % campaigns.length]!
        // A 1% cut in whole cents (amounts finer than the currency are refused).
        const target = Math.round((budgets.get(campaign.campaignId)! * 0.99) / 10_000) * 10_000
        const t0 = performance.now()
        const proposed = await post(`${acs.api}/accounts/${large.projectId}/actions/budget-change`, {
          campaignId: campaign.campaignId,
          newDailyBudgetMicros: target,
          reason: "bench auto-apply"
        }, { cookie })
        if (proposed.mode !== "auto_applied") throw new Error(`expected an auto-applied proposal, got ${JSON.stringify(proposed)}`)
        for (;;) {
          const record = (await pages.getJson(`${acs.api}/accounts/${large.projectId}/actions/${proposed.actionId}`)) as {
            status: string
            created_at: string
            appliedAt: string | null
          }
          if (record.status === "applied") {
            observed.push(performance.now() - t0)
            serverSide.push(Date.parse(record.appliedAt!) - Date.parse(record.created_at))
            break
          }
          if (record.status !== "approved" && record.status !== "applying") throw new Error(`auto-apply ended ${record.status}`)
          await sleep(5)
        }
        budgets.set(campaign.campaignId, target)
      }
    } finally {
      await pool.end()
    }
    return {
      ledgerRows: { small: SMALL_LEDGER, large: LARGE_LEDGER },
      pages: { small: { first: smallFirst, deep: smallDeep }, large: { first: largeFirst, deep: largeDeep }, ratioP95 },
      proposals: { latency: summarize(latencies), perSecond, clients: PROPOSAL_CLIENTS },
      autoApply: { proposalToApplied: summarize(observed), serverSide: summarize(serverSide) }
    }
  } finally {
    pages.close()
    await acs.stop()
    await simulator.close()
  }
}
