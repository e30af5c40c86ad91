/**
 * Key proposals on a Citus cluster beside plain PostgreSQL, in the same run (bench/README.md, `--only scale`).
 *
 * Two worlds alike but for their database: a simulator with the same two writable accounts (seed and sizes), acs as
 * a real process with its workers inside (the defaults), signed in as the admin person and holding a write key. One
 * world's database is a database of the bench's PostgreSQL; the other's is a Citus 13 coordinator with two workers
 * on loopback (packages/server/test/support/citus.ts builds Citus once per machine), acs migrated onto it and the
 * distribution plan applied (docs/scale.md). Three PostgreSQL servers on two cores are not expected to be faster
 * than one: what is measured is that acs is correct there, and what it costs.
 *
 * - Key proposals (a write key's budget cuts: they queue, one transaction each under the account's lock) at 8
 *   clients, in windows alternating between the worlds, so load from elsewhere falls on both alike: proposals per
 *   second (median of the windows) and each proposal's latency (p50 / p95 over all windows); then one window from
 *   one client on each (a proposal's own latency, no lock to wait for). Around every window, pg_stat_statements
 *   (the coordinator's on Citus): statements per proposal and the ones that took the most time.
 * - The 24 h cap under concurrency: 40 person proposals (the signed-in admin, each a 1-cent cut of a campaign of its
 *   own, which the policy clears) sent by 8 clients at once to the second account: exactly the cap (20) must
 *   auto-apply and the rest queue, and the account's policy must then say 20 used of 20. The auto-applied ones are
 *   waited for until applied.
 */
import { performance } from "node:perf_hooks"
import * as Os from "node:os"
import { type CitusCluster, startCitusCluster } from "../../packages/server/test/support/citus.ts"
import { migrateAndDistribute } from "../../packages/server/test/support/distributed.ts"
import { type Simulator, startSimulator } from "../../packages/upstream/src/simulator/Simulator.ts"
import { ACCOUNT_MANAGER } from "../../packages/upstream/src/simulator/SimulatorSize.ts"
import { type AcsInstance, BENCH_ADMIN, signIn, startAcs } from "./acs.ts"
import type { BenchCluster } from "./cluster.ts"
import { type HttpClient, makeHttpClient, retrying, summarize, type Summary } from "./measure.ts"
import { makePool, type Pool } from "./pg.ts"
import { fmt, type TargetRow } from "./report.ts"
import { type StatementDelta, statementDelta, statementSnapshot } from "./statements.ts"

const DATABASE = "acs_bench_beside_citus"
const BOOTSTRAP_KEY = "acs_bench_citus_key_0123456789abcdefghijklmnopqrstuv"
const SECRETS_KEY = Buffer.alloc(32, 17).toString("base64")
/** The auto-apply cap per account per 24 h (src/policy/Policy.ts). */
export const CAP = 20
const CAP_PROPOSALS = 40
const CLIENTS = 8
const KEY_CAMPAIGNS = 40

export type Side = "postgres" | "citus"
const SIDES: ReadonlyArray<Side> = ["postgres", "citus"]
const label = (side: Side) => (side === "postgres" ? "PostgreSQL" : "Citus")

export interface SideResult {
  readonly side: Side
  /** Key proposals per second at 8 clients, median of the windows, and each window's. */
  readonly keyTps: number
  readonly windowTps: ReadonlyArray<number>
  readonly keyLatency: Summary
  /** Key proposals from one client for a window: a proposal's own latency, no lock to wait for. */
  readonly oneClientLatency: Summary
  readonly keyProposals: number
  readonly failed: number
  /** The cap check: proposals sent at once, how many auto-applied and queued, and the policy's count after. */
  readonly capSent: number
  readonly autoApplied: number
  readonly queued: number
  readonly usedLast24h: number
  readonly limitPer24h: number
  readonly appliedOfAutoApplied: number
  readonly capSeconds: number
  /** pg_stat_statements over the key windows (idle polling included), on the coordinator for Citus: per proposal. */
  readonly statementsPerProposal: number
  readonly databaseMsPerProposal: number
  /** The statements that took the most time, with their calls per proposal and mean ms. */
  readonly slowest: ReadonlyArray<Slow>
  /** The same for the one-client window: no time waiting for the account's lock. */
  readonly slowestAlone: ReadonlyArray<Slow>
}

interface Slow {
  readonly query: string
  readonly perProposal: number
  readonly meanMs: number
}

/** The statements of windows summed by text, the most time first. */
const slowestOf = (deltas: ReadonlyArray<StatementDelta>, proposals: number): ReadonlyArray<Slow> => {
  const byQuery = new Map<string, { calls: number; ms: number }>()
  for (const delta of deltas) {
    for (const t of delta.top) {
      const got = byQuery.get(t.query) ?? { calls: 0, ms: 0 }
      byQuery.set(t.query, { calls: got.calls + t.calls, ms: got.ms + t.calls * t.meanMs })
    }
  }
  return [...byQuery].sort((a, b) => b[1].ms - a[1].ms).slice(0, 6)
    .map(([query, t]) => ({ query, perProposal: Math.round((t.calls / Math.max(proposals, 1)) * 100) / 100, meanMs: Math.round((t.ms / t.calls) * 100) / 100 }))
}

export interface CitusProposalResults {
  readonly clients: number
  readonly rounds: number
  readonly seconds: number
  readonly nodes: string
  readonly distributed: { readonly placed: number; readonly refused: number }
  readonly setupSeconds: { readonly postgres: number; readonly citus: number }
  readonly sides: ReadonlyArray<SideResult>
  /** Citus's median key proposals per second over PostgreSQL's. */
  readonly ratio: number
}

interface World {
  readonly side: Side
  readonly acs: AcsInstance
  /** The bench's own connection (on PostgreSQL as role `bench`, left out of the statement counts). */
  readonly pool: Pool
  /** A connection that reads pg_stat_statements, and the database whose statements count. */
  readonly stats: Pool
  readonly database: string
  readonly keyProject: string
  readonly capProject: string
  readonly writeKey: string
  readonly cookie: string
  readonly keyBudgets: ReadonlyArray<readonly [string, number]>
  readonly capBudgets: ReadonlyArray<readonly [string, number]>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length === 0 ? Number.NaN : sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** The simulator, acs on `url`, the two accounts synced, a write key and the admin's session. */
const startWorld = async (side: Side, url: string, benchUrl: string, statsUrl: string, database: string, stops: Array<() => Promise<void> | void>, log: (message: string) => void): Promise<World> => {
  const simulator: Simulator = await startSimulator({
    seed: 11,
    size: {
      accounts: [
        { name: "Key load", currency: "USD", timeZone: "America/New_York", roleNames: [ACCOUNT_MANAGER], countriesOrRegions: ["US"], campaigns: KEY_CAMPAIGNS, adGroupsPerCampaign: 1, keywordsPerAdGroup: 2 },
        { name: "Cap", currency: "EUR", timeZone: "Europe/Berlin", roleNames: [ACCOUNT_MANAGER], countriesOrRegions: ["DE"], campaigns: CAP_PROPOSALS, adGroupsPerCampaign: 1, keywordsPerAdGroup: 2 }
      ]
    }
  })
  stops.push(() => simulator.close())
  const acs = await startAcs({
    ACS_SECRETS_KEY: SECRETS_KEY,
    DATABASE_URL: url,
    ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    ADMIN_EMAIL: BENCH_ADMIN.email,
    ADMIN_PASSWORD: BENCH_ADMIN.password,
    SIMULATOR_URL: simulator.url,
    ACS_DEMO: "true",
    SYNC_INTERVAL_MINUTES: "0",
    CHANGE_HISTORY_POLL_SECONDS: "0",
    RATE_LIMIT_READ: "100000000",
    RATE_LIMIT_WRITE: "100000000",
    RATE_LIMIT_EXPENSIVE: "100000000",
    // Eight proposals wait for one account's lock, each holding a pooled connection (as test/citus.test.ts).
    DATABASE_CONNECT_TIMEOUT_MS: "120000",
    LOG_LEVEL: "warn"
  }, BOOTSTRAP_KEY)
  stops.push(() => acs.stop())
  const pool = makePool({ connectionString: benchUrl, max: 2 })
  stops.push(() => pool.end())
  const stats = makePool({ connectionString: statsUrl, max: 1 })
  stops.push(() => stats.end())

  let accounts: ReadonlyArray<{ projectId: string; currency: string }> = []
  for (let i = 0; ; i++) {
    accounts = ((await retrying("GET accounts", () => acs.client.getJson(`${acs.api}/accounts`))) as { accounts: typeof accounts }).accounts
    const synced = await Promise.all(accounts.map(async (a) =>
      ((await retrying("GET syncs", () => acs.client.getJson(`${acs.api}/accounts/${a.projectId}/syncs`))) as { syncs: Array<{ status: string }> }).syncs[0]?.status
    ))
    if (accounts.length === 2 && synced.every((s) => s === "succeeded")) break
    if (i > 2400) throw new Error(`${label(side)}: the accounts did not sync: ${JSON.stringify(synced)}\n${acs.logs()}`)
    await sleep(250)
  }
  const projectOf = (currency: string) => {
    const projectId = accounts.find((a) => a.currency === currency)?.projectId
    if (projectId === undefined) throw new Error(`${label(side)}: no ${currency} account in ${JSON.stringify(accounts)}`)
    return projectId
  }
  const budgets = async (projectId: string) =>
    (await pool.query<{ campaign_id: string; daily_budget_micros: string }>(
      "SELECT campaign_id, daily_budget_micros::text FROM campaigns WHERE project_id = $1 AND daily_budget_micros IS NOT NULL ORDER BY campaign_id",
      [projectId]
    )).rows.map((row) => [row.campaign_id, Number(row.daily_budget_micros)] as const)
  const created = (await acs.client.sendJson("POST", `${acs.api}/keys`, { name: "bench writer", scope: "write" })) as { secret: string }
  const cookie = await signIn(acs.api, label(side))
  const keyProject = projectOf("USD")
  const capProject = projectOf("EUR")
  log(`citus: ${label(side)} world ready (acs on ${side === "postgres" ? "the bench's PostgreSQL" : "the Citus coordinator"})`)
  return { side, acs, pool, stats, database, keyProject, capProject, writeKey: created.secret, cookie, keyBudgets: await budgets(keyProject), capBudgets: await budgets(capProject) }
}

export const benchCitusProposals = async (
  cluster: BenchCluster,
  log: (message: string) => void,
  options: { readonly rounds: number; readonly seconds: number }
): Promise<CitusProposalResults> => {
  const stops: Array<() => Promise<void> | void> = []
  try {
    let started = performance.now()
    await cluster.createDatabase(DATABASE)
    const postgres = await startWorld("postgres", cluster.url(DATABASE), cluster.benchUrl(DATABASE), cluster.benchUrl("postgres"), DATABASE, stops, log)
    const postgresSetup = (performance.now() - started) / 1000

    started = performance.now()
    log("citus: starting a coordinator and two workers (Citus built once per machine: packages/server/test/support/citus.ts)")
    const citus: CitusCluster = await startCitusCluster()
    stops.push(() => citus.stop())
    const url = await citus.createDatabase("acs")
    // The coordinator loads pg_stat_statements (support/citus.ts): what a proposal's statements cost there.
    const admin = makePool({ connectionString: url, max: 1 })
    try {
      await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    } finally {
      await admin.end()
    }
    const outcome = await migrateAndDistribute(url)
    if (outcome.refused.length > 0) log(`citus: the plan left ${outcome.refused.length} tables on the coordinator: ${JSON.stringify(outcome.refused)}`)
    log(`citus: acs migrated and ${outcome.placed.length} tables placed`)
    const onCitus = await startWorld("citus", url, url, url, "acs", stops, log)
    const citusSetup = (performance.now() - started) / 1000
    const worlds: Record<Side, World> = { postgres, citus: onCitus }

    /** `clients` loops sending key cuts for `seconds`: latencies and how many were answered. */
    const sequence: Record<Side, number> = { postgres: 0, citus: 0 }
    const keyWindow = async (world: World, seconds: number, count = CLIENTS) => {
      const clients: Array<HttpClient> = Array.from({ length: count }, () => makeHttpClient({ authorization: `Bearer ${world.writeKey}` }))
      const latencies: Array<number> = []
      let failed = 0
      const t0 = performance.now()
      const deadline = t0 + seconds * 1000
      try {
        await Promise.all(clients.map(async (client) => {
          while (performance.now() < deadline) {
            const i = sequence[world.side]++
            const [campaignId, budget] = world.keyBudgets[i % world.keyBudgets.length]!
            const sent = performance.now()
            const body = { campaignId, newDailyBudgetMicros: budget - 10_000 * (1 + (i % 20)), reason: "bench key proposal" }
            const got = (await client.sendJson("POST", `${world.acs.api}/accounts/${world.keyProject}/actions/budget-change`, body).catch(() => null)) as
              | { mode?: string }
              | null
            if (got?.mode === "queued") latencies.push(performance.now() - sent)
            else failed++
          }
        }))
      } finally {
        for (const client of clients) client.close()
      }
      return { latencies, failed, seconds: (performance.now() - t0) / 1000 }
    }

    log(`citus: warming up key proposals on both (${CLIENTS} clients)`)
    for (const side of SIDES) await keyWindow(worlds[side], 2)
    const windows: Record<Side, Array<{ tps: number; latencies: Array<number>; failed: number; delta: StatementDelta }>> = { postgres: [], citus: [] }
    for (let round = 0; round < options.rounds; round++) {
      for (const side of round % 2 === 0 ? SIDES : [...SIDES].reverse()) {
        const world = worlds[side]
        const before = await statementSnapshot(world.stats, world.database)
        const run = await keyWindow(world, options.seconds)
        const delta = statementDelta(before, await statementSnapshot(world.stats, world.database))
        const tps = run.latencies.length / run.seconds
        windows[side].push({ tps, latencies: run.latencies, failed: run.failed, delta })
        log(`  key x${CLIENTS} on ${label(side)} round ${round + 1}: ${fmt(tps, 1)}/s (${run.latencies.length} in ${fmt(run.seconds)} s` +
          `${run.failed > 0 ? `, ${run.failed} FAILED` : ""}); load ${fmt(Os.loadavg()[0] ?? 0)}`)
      }
    }

    // One client: a proposal's own time, without waiting for the account's lock behind the others.
    const alone: Record<Side, { latencies: Array<number>; delta: StatementDelta | null }> = { postgres: { latencies: [], delta: null }, citus: { latencies: [], delta: null } }
    for (const side of SIDES) {
      const world = worlds[side]
      const before = await statementSnapshot(world.stats, world.database)
      const run = await keyWindow(world, options.seconds, 1)
      alone[side] = { latencies: run.latencies, delta: statementDelta(before, await statementSnapshot(world.stats, world.database)) }
      log(`  key x1 on ${label(side)}: ${fmt(run.latencies.length / run.seconds, 1)}/s, p50 ${fmt(summarize(run.latencies).p50Ms, 0)} ms`)
    }

    /** 40 person proposals by 8 clients at once on the cap account: the modes, the policy after, the applies. */
    const capCheck = async (world: World) => {
      const clients: Array<HttpClient> = Array.from({ length: CLIENTS }, () => makeHttpClient({ cookie: world.cookie }))
      const modes: Array<{ actionId: string; mode: string }> = []
      let next = 0
      const t0 = performance.now()
      try {
        await Promise.all(clients.map(async (client) => {
          while (next < CAP_PROPOSALS) {
            const [campaignId, budget] = world.capBudgets[next++ % world.capBudgets.length]!
            const got = (await client.sendJson("POST", `${world.acs.api}/accounts/${world.capProject}/actions/budget-change`, {
              campaignId,
              newDailyBudgetMicros: budget - 10_000,
              reason: "bench cap"
            })) as { actionId: string; mode: string }
            modes.push({ actionId: got.actionId, mode: got.mode })
          }
        }))
      } finally {
        for (const client of clients) client.close()
      }
      const capSeconds = (performance.now() - t0) / 1000
      const policy = (await world.acs.client.getJson(`${world.acs.api}/accounts/${world.capProject}/policy`)) as {
        autoApplies: { limitPer24h: number; usedLast24h: number }
      }
      const auto = modes.filter((m) => m.mode === "auto_applied").map((m) => m.actionId)
      let applied = 0
      for (let i = 0; i < 480; i++) {
        applied = Number((await world.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM actions WHERE project_id = $1 AND action_id = ANY($2) AND status = 'applied'",
          [world.capProject, auto]
        )).rows[0]?.n ?? 0)
        if (applied === auto.length) break
        await sleep(250)
      }
      log(`  cap on ${label(world.side)}: ${auto.length} of ${modes.length} auto-applied in ${fmt(capSeconds, 1)} s, policy ${policy.autoApplies.usedLast24h} used of ${
        policy.autoApplies.limitPer24h
      }, ${applied} applied`)
      return {
        capSent: modes.length,
        autoApplied: auto.length,
        queued: modes.filter((m) => m.mode === "queued").length,
        usedLast24h: policy.autoApplies.usedLast24h,
        limitPer24h: policy.autoApplies.limitPer24h,
        appliedOfAutoApplied: applied,
        capSeconds
      }
    }

    const sides: Array<SideResult> = []
    for (const side of SIDES) {
      const cap = await capCheck(worlds[side])
      const all = windows[side]
      const proposals = all.reduce((n, w) => n + w.latencies.length, 0)
      const one = alone[side]
      sides.push({
        side,
        keyTps: median(all.map((w) => w.tps)),
        windowTps: all.map((w) => Math.round(w.tps * 10) / 10),
        keyLatency: summarize(all.flatMap((w) => w.latencies)),
        oneClientLatency: summarize(one.latencies),
        keyProposals: proposals,
        statementsPerProposal: all.reduce((n, w) => n + w.delta.calls, 0) / proposals,
        databaseMsPerProposal: all.reduce((n, w) => n + w.delta.ms, 0) / proposals,
        slowest: slowestOf(all.map((w) => w.delta), proposals),
        slowestAlone: slowestOf(one.delta === null ? [] : [one.delta], one.latencies.length),
        failed: all.reduce((n, w) => n + w.failed, 0),
        ...cap
      })
    }
    return {
      clients: CLIENTS,
      rounds: options.rounds,
      seconds: options.seconds,
      nodes: "a coordinator and two workers on loopback, one machine",
      distributed: { placed: outcome.placed.length, refused: outcome.refused.length },
      setupSeconds: { postgres: Math.round(postgresSetup * 10) / 10, citus: Math.round(citusSetup * 10) / 10 },
      sides,
      ratio: sides[1]!.keyTps / sides[0]!.keyTps
    }
  } finally {
    for (const stop of stops.reverse()) {
      try {
        await stop()
      } catch (error) {
        log(`citus: stopping failed: ${String(error)}`)
      }
    }
  }
}

const capExact = (s: SideResult) =>
  s.autoApplied === CAP && s.limitPer24h === CAP && s.usedLast24h === CAP && s.queued === s.capSent - CAP && s.appliedOfAutoApplied === CAP

export const citusProposalTargets = (r: CitusProposalResults): Array<TargetRow> => {
  const [postgres, citus] = [r.sides[0]!, r.sides[1]!]
  const side = (s: SideResult) =>
    `${fmt(s.keyTps, 1)} per s (windows ${s.windowTps.map((t) => fmt(t, 1)).join("/")}), p50 ${fmt(s.keyLatency.p50Ms, 0)} ms, p95 ${fmt(s.keyLatency.p95Ms, 0)} ms, ` +
    `one client p50 ${fmt(s.oneClientLatency.p50Ms, 0)} ms`
  return [
    {
      name: `key proposals, ${r.clients} clients: Citus (3 nodes, one machine) / PostgreSQL`,
      target: "(reported: not expected to be faster)",
      measured: `${fmt(r.ratio * 100, 1)} % (Citus ${side(citus)}; PostgreSQL ${side(postgres)})`,
      value: r.ratio,
      pass: null
    },
    ...r.sides.map((s): TargetRow => ({
      // Exactness, not speed: of proposals sent at once, the cap's number auto-apply, the policy counts the cap.
      name: `24 h cap exact on ${label(s.side)}: ${s.capSent} person proposals by ${r.clients} clients at once`,
      target: `${CAP} auto-applied, ${CAP} used of ${CAP}, all applied; no key proposal failed`,
      measured: `${s.autoApplied} auto-applied, ${s.queued} queued; policy ${s.usedLast24h} used of ${s.limitPer24h}; ${s.appliedOfAutoApplied} applied ` +
        `(${fmt(s.capSeconds, 1)} s to answer all); ${s.failed} key proposals failed`,
      value: s.autoApplied,
      pass: capExact(s) && s.failed === 0
    }))
  ]
}

const slowLine = (t: Slow) => `  ${fmt(t.perProposal, 2).padStart(6)}  ${fmt(t.meanMs, 2).padStart(8)} ms  ${t.query}`

export const citusProposalDetails = (r: CitusProposalResults): Array<string> => [
  `citus: ${r.nodes}, the plan applied (${r.distributed.placed} tables placed, ${r.distributed.refused} refused); key proposals at ${r.clients} clients, ` +
  `${r.rounds} windows of ${r.seconds} s on each side, alternating; set-up (database, simulator, acs, first syncs) PostgreSQL ${fmt(r.setupSeconds.postgres, 1)} s, ` +
  `Citus ${fmt(r.setupSeconds.citus, 1)} s (cluster start, migrations, plan included). Three PostgreSQL servers on the same cores are not ` +
  "expected to be faster than one: the point is that acs is correct on the cluster and what it costs.",
  ...r.sides.flatMap((s) => [
    `statements per key proposal on ${label(s.side)}${s.side === "citus" ? " (the coordinator's)" : ""}: ${fmt(s.statementsPerProposal, 1)}, ` +
    `${fmt(s.databaseMsPerProposal, 1)} ms of statement time each; the most time (calls per proposal, mean ms):`,
    ...s.slowest.map(slowLine),
    `  from one client (p50 ${fmt(s.oneClientLatency.p50Ms, 0)} ms a proposal):`,
    ...s.slowestAlone.map(slowLine)
  ]),
  ""
]
