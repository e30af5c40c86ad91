/**
 * Proposals against raw PostgreSQL (bench/README.md), in one run on the pipeline's database with 1,000,000 ledger
 * rows on the account:
 *
 * - pgbench running the proposal-shaped transaction (scripts/bench/pgbench.ts), with its default simple protocol
 *   (the baseline of the targets: bench/README.md) and with `-M prepared` (reported beside it);
 * - key proposals (`POST .../actions/budget-change` with a write key: the queued path, one transaction), cuts;
 * - key raises: the same, each raising a budget by 1 to 20 cents, so the guardrails (docs/contract.md 3.3) price it,
 *   reserve it and read its cooldown: against the cuts of the same round, what the guardrails cost;
 * - person proposals (the signed-in admin: the policy clears a 1-cent cut, so each auto-applies and the apply
 *   worker runs it against the simulator). A person window counts only what is applied: its rate is the
 *   proposals over the time from the window's start to the last one's `applied_at`, so work deferred to the
 *   queue cannot flatter it. Each proposal of a window takes a campaign of its own (an apply never meets
 *   another's change).
 *
 * At 1 and 8 clients, `rounds` times each, the five in turn (the order reversed every other round) for
 * `seconds` each, so drift and bursts of load from elsewhere fall on all alike; the ratio to pgbench is
 * taken per round and the median reported. For every acs window: acs's CPU (utime + stime from
 * /proc/<pid>/stat) per proposal, and statements per proposal from pg_stat_statements (acs's role only, the
 * apply worker's included, idle polling too). Then `applies` auto-applied proposals one after another, each
 * polled until `applied`: the client-observed latency, whose p95 is the target.
 */
import { performance } from "node:perf_hooks"
import * as Os from "node:os"
import { cpuMeter, processCpuSeconds } from "./cpu.ts"
import { type HttpClient, makeHttpClient, retrying, summarize, type Summary } from "./measure.ts"
import { runPgbench, writeProposalScripts } from "./pgbench.ts"
import type { Pipeline } from "./pipeline.ts"
import { type StatementDelta, statementDelta, statementSnapshot } from "./statements.ts"
import { makePool } from "./pg.ts"

export const TARGET_KEY_SHARE = 0.4
export const TARGET_PERSON_SHARE = 0.25
export const TARGET_CPU_MS_PER_PROPOSAL = 3
export const TARGET_APPLY_P95_MS = 1_000
/** Key raises (the guardrails priced, reserved and checked) against key cuts, the same round. */
export const TARGET_GUARDED_SHARE = 0.9

export type Subject = "pgbench" | "pgbenchPrepared" | "key" | "keyRaise" | "person"

export interface Window {
  readonly subject: Subject
  readonly clients: number
  readonly round: number
  readonly proposals: number
  readonly seconds: number
  /** Proposals per second: answered (key, pgbench) or applied (person). */
  readonly tps: number
  readonly latency: Summary | null
  /** acs's CPU milliseconds per proposal (null for pgbench). */
  readonly cpuMsPerProposal: number | null
  readonly statementsPerProposal: number
  /** Person windows: the proposal sent → its `applied` seen (polling the database every 5 ms). */
  readonly applyMs: Summary | null
  readonly failed: number
  readonly loadAverage: number
}

export interface ClientResult {
  readonly clients: number
  readonly pgbenchTps: number
  readonly pgbenchPreparedTps: number
  readonly keyTps: number
  readonly personTps: number
  /** Medians over the rounds of the per-round ratios. */
  readonly keyShare: number
  readonly personShare: number
  readonly keyShares: ReadonlyArray<number>
  readonly personShares: ReadonlyArray<number>
  /** The same medians against pgbench with prepared statements. */
  readonly keySharePrepared: number
  readonly personSharePrepared: number
  readonly keyRaiseTps: number
  /** Key raises / key cuts, per round and their median. */
  readonly keyRaiseShares: ReadonlyArray<number>
  readonly keyRaiseShare: number
  readonly keyRaiseCpuMs: number | null
  readonly keyRaiseStatements: number
  readonly keyCpuMs: number | null
  readonly personCpuMs: number | null
  readonly keyStatements: number
  readonly personStatements: number
  readonly pgbenchStatements: number
  readonly keyLatency: Summary
  /** Person proposals at these clients: sent → seen applied, over all rounds. */
  readonly personToApplied: Summary
}

export interface ProposalResults {
  /** Where the apply worker ran (scripts/bench/pipeline.ts). */
  readonly worker: string
  readonly rounds: number
  readonly seconds: number
  readonly windows: ReadonlyArray<Window>
  readonly byClients: ReadonlyArray<ClientResult>
  /** The statements of one window of each kind at the most clients, most calls first, per proposal. */
  readonly statements: Record<"pgbench" | "key" | "keyRaise" | "person", ReadonlyArray<{ readonly query: string; readonly perProposal: number; readonly meanMs: number }>>
  /** Auto-applied proposals one at a time (the one-client person windows): sent → seen applied. The target's p95. */
  readonly autoApply: Summary
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const round3 = (value: number) => Math.round(value * 1000) / 1000

export const benchProposals = async (pipeline: Pipeline, log: (message: string) => void, options: {
  readonly rounds: number
  readonly seconds: number
  readonly clientCounts: ReadonlyArray<number>
}): Promise<ProposalResults> => {
  const { acs, large, pool } = pipeline
  const stats = makePool({ connectionString: pipeline.cluster.benchUrl("postgres"), max: 1 })
  const scripts = writeProposalScripts()
  const maxClients = Math.max(...options.clientCounts)
  const keyClients: Array<HttpClient> = Array.from({ length: maxClients }, () => makeHttpClient({ authorization: `Bearer ${pipeline.writeKey}` }))
  const personClients: Array<HttpClient> = Array.from({ length: maxClients }, () => makeHttpClient({ cookie: pipeline.cookie }))
  const proposeUrl = `${acs.api}/accounts/${large.projectId}/actions/budget-change`
  const budgets = await pipeline.budgets()
  const campaigns = [...budgets.keys()]
  let keySequence = 0
  try {
    const snapshot = () => statementSnapshot(stats, pipeline.database)
    /** CPU seconds of each of acs's processes (the API, and the worker when it runs apart), or null off Linux. */
    const acsCpu = () => {
      const each = pipeline.pids.filter((pid) => pid !== undefined).map(processCpuSeconds)
      return each.some((v) => v === null) ? null : each.map((v) => v ?? 0)
    }
    const sum = (values: ReadonlyArray<number>) => values.reduce((a, b) => a + b, 0)
    /** The cluster's CPU and this process's (the simulator, the clients, the apply poll): where the rest goes. */
    const othersCpu = cpuMeter(undefined, pipeline.cluster.dataDirectory)

    /** Resolves with an action's status once it has left approved/applying; one poller for all waiting clients. */
    const applied = (() => {
      const waiting = new Map<string, { readonly since: number; readonly resolve: (status: string) => void; readonly reject: (error: Error) => void }>()
      let polling = false
      const poll = async () => {
        polling = true
        try {
          while (waiting.size > 0) {
            // Prepared: the poll runs every 5 ms, and its planning was PostgreSQL CPU charged to the window.
            const rows = await retrying("the apply poll", () =>
              pool.query<{ action_id: string; status: string }>({
                name: "bench_apply_poll",
                text: "SELECT action_id, status FROM actions WHERE action_id = ANY($1) AND status NOT IN ('approved', 'applying')",
                values: [[...waiting.keys()]]
              }))
            for (const row of rows.rows) {
              waiting.get(row.action_id)?.resolve(row.status)
              waiting.delete(row.action_id)
            }
            for (const [id, one] of waiting) {
              if (Date.now() - one.since > 120_000) {
                one.reject(new Error(`action ${id} was not applied within 120 s\n${acs.logs().slice(-4000)}`))
                waiting.delete(id)
              }
            }
            if (waiting.size > 0) await sleep(5)
          }
        } catch (error) {
          for (const one of waiting.values()) one.reject(error instanceof Error ? error : new Error(String(error)))
          waiting.clear()
        } finally {
          polling = false
        }
      }
      return {
        wait: (actionId: string) =>
          new Promise<string>((resolve, reject) => {
            waiting.set(actionId, { since: Date.now(), resolve, reject })
            if (!polling) void poll()
          })
      }
    })()

    /**
     * `clients` loops sending proposals until `seconds` pass or `limit` are sent; latencies and action ids.
     * With `untilApplied`, each client waits for its proposal to be applied before it sends the next (closed
     * loop): what is counted has been applied, and nothing is left queued after the window.
     */
    const drive = async (clients: ReadonlyArray<HttpClient>, seconds: number, limit: number, body: (index: number) => unknown, expectMode: string, untilApplied = false) => {
      const latencies: Array<number> = []
      const toApplied: Array<number> = []
      const actionIds: Array<string> = []
      let failed = 0
      let next = 0
      const started = performance.now()
      const deadline = started + seconds * 1000
      await Promise.all(clients.map(async (client) => {
        while (performance.now() < deadline && next < limit) {
          const index = next++
          const t0 = performance.now()
          const answer = (await client.sendJson("POST", proposeUrl, body(index))) as { actionId: string; mode: string; policyReasons?: unknown }
          latencies.push(performance.now() - t0)
          if (answer.mode !== expectMode) throw new Error(`expected a ${expectMode} proposal, got ${JSON.stringify(answer).slice(0, 600)}`)
          actionIds.push(answer.actionId)
          if (untilApplied) {
            const status = await applied.wait(answer.actionId)
            if (status === "applied") toApplied.push(performance.now() - t0)
            else failed++
          }
        }
      }))
      return { latencies, toApplied, actionIds, failed, started, endedAt: performance.now() }
    }

    // A key proposal: a cut of 1 to 20 cents from the campaign's budget; it queues and is never applied.
    const keyBody = () => {
      const i = keySequence++
      const campaignId = campaigns[i % campaigns.length]!
      return { campaignId, newDailyBudgetMicros: budgets.get(campaignId)! - 10_000 * (1 + (i % 20)), reason: "bench key proposal" }
    }
    // A key raise: 1 to 20 cents onto the campaign's budget; it queues, reserving its raise.
    let raiseSequence = 0
    const keyRaiseBody = () => {
      const i = raiseSequence++
      const campaignId = campaigns[i % campaigns.length]!
      return { campaignId, newDailyBudgetMicros: budgets.get(campaignId)! + 10_000 * (1 + (i % 20)), reason: "bench key raise" }
    }
    // A person proposal: a 1-cent cut of a campaign's budget, which the policy auto-applies. Campaigns are taken
    // in turn; the closed loop leaves at most one action per client in flight, never two on one campaign.
    let personSequence = 0
    const personBody = () => {
      const campaignId = campaigns[personSequence++ % campaigns.length]!
      const target = budgets.get(campaignId)! - 10_000
      budgets.set(campaignId, target)
      return { campaignId, newDailyBudgetMicros: target, reason: "bench person proposal" }
    }

    /**
     * pgbench's jobs (due at `infinity`) out of the queue after its window, as the bench's role: acs deletes a
     * job once applied, so its queue stays short; thousands of never-due rows would slow acs's own queue reads.
     */
    const clearPgbenchJobs = async () => {
      await pool.query("DELETE FROM jobs WHERE run_at = 'infinity'")
      await pool.query("VACUUM jobs")
    }

    /** Person proposals, sent → seen applied, per client count. */
    const toApplied = new Map<number, Array<number>>()
    let lastDeltas: Partial<Record<Subject, { delta: StatementDelta; proposals: number }>> = {}
    const windows: Array<Window> = []
    const measure = async (subject: Subject, clients: number, round: number): Promise<Window> => {
      const before = await snapshot()
      const cpuBefore = acsCpu()
      const othersBefore = othersCpu()
      let proposals: number
      let seconds: number
      let tps: number
      let latency: Summary | null = null
      let applyMs: Summary | null = null
      let failed = 0
      if (subject === "pgbench" || subject === "pgbenchPrepared") {
        const run = runPgbench({
          cluster: pipeline.cluster,
          database: pipeline.database,
          scripts,
          protocol: subject === "pgbench" ? "simple" : "prepared",
          clients,
          seconds: options.seconds,
          orgId: large.orgId,
          projectId: large.projectId
        })
        proposals = run.transactions
        seconds = run.seconds
        tps = run.tps
      } else if (subject === "key" || subject === "keyRaise") {
        const run = await drive(keyClients.slice(0, clients), options.seconds, Number.POSITIVE_INFINITY, subject === "key" ? keyBody : keyRaiseBody, "queued")
        proposals = run.actionIds.length
        seconds = (run.endedAt - run.started) / 1000
        tps = proposals / seconds
        latency = summarize(run.latencies)
      } else {
        const run = await drive(personClients.slice(0, clients), options.seconds, Number.POSITIVE_INFINITY, personBody, "auto_applied", true)
        proposals = run.actionIds.length
        failed = run.failed
        seconds = (run.endedAt - run.started) / 1000
        tps = (proposals - failed) / seconds
        latency = summarize(run.latencies)
        applyMs = summarize(run.toApplied)
        toApplied.set(clients, [...(toApplied.get(clients) ?? []), ...run.toApplied])
      }
      const cpuAfter = acsCpu()
      const othersAfter = othersCpu()
      const cpuMsByProcess = subject === "pgbench" || subject === "pgbenchPrepared" || cpuBefore === null || cpuAfter === null
        ? null
        : cpuAfter.map((after, i) => ((after - (cpuBefore[i] ?? 0)) * 1000) / proposals)
      const delta = statementDelta(before, await snapshot())
      if (subject === "pgbench" || subject === "pgbenchPrepared") await clearPgbenchJobs()
      if (clients === maxClients) lastDeltas = { ...lastDeltas, [subject]: { delta, proposals } }
      const window: Window = {
        subject,
        clients,
        round,
        proposals,
        seconds: round3(seconds),
        tps: round3(tps),
        latency,
        cpuMsPerProposal: cpuMsByProcess === null ? null : round3(sum(cpuMsByProcess)),
        statementsPerProposal: round3(delta.calls / proposals),
        applyMs,
        failed,
        loadAverage: Math.round((Os.loadavg()[0] ?? 0) * 100) / 100
      }
      log(
        `  ${subject} x${clients} round ${round + 1}: ${window.tps.toFixed(1)}/s (${proposals} in ${window.seconds.toFixed(2)} s)` +
          (cpuMsByProcess === null ? "" : `, acs CPU ${sum(cpuMsByProcess).toFixed(2)} ms (${cpuMsByProcess.map((ms) => ms.toFixed(2)).join(" + ")})`) +
          (othersAfter.postgres === null || othersBefore.postgres === null || cpuMsByProcess === null
            ? ""
            : `, PostgreSQL ${(((othersAfter.postgres - othersBefore.postgres) * 1000) / proposals).toFixed(2)} ms, bench ${
              (((othersAfter.bench - othersBefore.bench) * 1000) / proposals).toFixed(2)
            } ms`) +
          `, ${window.statementsPerProposal.toFixed(1)} statements` + (failed > 0 ? `, ${failed} FAILED` : "") + `; load ${window.loadAverage}`
      )
      windows.push(window)
      return window
    }

    log("proposals: warming up pgbench, key cuts and raises, person proposals")
    for (const protocol of ["simple", "prepared"] as const) {
      runPgbench({ cluster: pipeline.cluster, database: pipeline.database, scripts, protocol, clients: maxClients, seconds: 1, orgId: large.orgId, projectId: large.projectId })
    }
    await clearPgbenchJobs()
    await drive(keyClients, 2, Number.POSITIVE_INFINITY, keyBody, "queued")
    await drive(keyClients, 2, Number.POSITIVE_INFINITY, keyRaiseBody, "queued")
    await drive(personClients, 2, Number.POSITIVE_INFINITY, personBody, "auto_applied", true)

    const byClients: Array<ClientResult> = []
    for (const clients of options.clientCounts) {
      log(`proposals: ${clients} client(s), ${options.rounds} rounds of pgbench, key cuts and raises, person proposals, ${options.seconds} s each`)
      const rounds: Array<Record<Subject, Window>> = []
      for (let round = 0; round < options.rounds; round++) {
        const order: ReadonlyArray<Subject> = round % 2 === 0
          ? ["pgbench", "pgbenchPrepared", "key", "keyRaise", "person"]
          : ["person", "keyRaise", "key", "pgbenchPrepared", "pgbench"]
        const got: Partial<Record<Subject, Window>> = {}
        for (const subject of order) got[subject] = await measure(subject, clients, round)
        rounds.push(got as Record<Subject, Window>)
      }
      const all = (subject: Subject) => windows.filter((w) => w.subject === subject && w.clients === clients)
      const medianOf = (subject: Subject, pick: (w: Window) => number | null) => {
        const values = all(subject).map(pick).filter((v): v is number => v !== null)
        return values.length === 0 ? null : round3(median(values))
      }
      const keyShares = rounds.map((r) => round3(r.key.tps / r.pgbench.tps))
      const personShares = rounds.map((r) => round3(r.person.tps / r.pgbench.tps))
      const keyRaiseShares = rounds.map((r) => round3(r.keyRaise.tps / r.key.tps))
      const sharesPrepared = (subject: "key" | "person") => round3(median(rounds.map((r) => r[subject].tps / r.pgbenchPrepared.tps)))
      byClients.push({
        clients,
        pgbenchTps: medianOf("pgbench", (w) => w.tps) ?? 0,
        pgbenchPreparedTps: medianOf("pgbenchPrepared", (w) => w.tps) ?? 0,
        keyTps: medianOf("key", (w) => w.tps) ?? 0,
        personTps: medianOf("person", (w) => w.tps) ?? 0,
        keyShare: round3(median(keyShares)),
        personShare: round3(median(personShares)),
        keyShares,
        personShares,
        keySharePrepared: sharesPrepared("key"),
        personSharePrepared: sharesPrepared("person"),
        keyRaiseTps: medianOf("keyRaise", (w) => w.tps) ?? 0,
        keyRaiseShares,
        keyRaiseShare: round3(median(keyRaiseShares)),
        keyRaiseCpuMs: medianOf("keyRaise", (w) => w.cpuMsPerProposal),
        keyRaiseStatements: medianOf("keyRaise", (w) => w.statementsPerProposal) ?? 0,
        keyCpuMs: medianOf("key", (w) => w.cpuMsPerProposal),
        personCpuMs: medianOf("person", (w) => w.cpuMsPerProposal),
        keyStatements: medianOf("key", (w) => w.statementsPerProposal) ?? 0,
        personStatements: medianOf("person", (w) => w.statementsPerProposal) ?? 0,
        pgbenchStatements: medianOf("pgbench", (w) => w.statementsPerProposal) ?? 0,
        keyLatency: summarize(all("key").flatMap((w) => (w.latency === null ? [] : [w.latency.p50Ms]))),
        personToApplied: summarize(toApplied.get(clients) ?? [])
      })
    }
    const perProposal = (subject: "pgbench" | "key" | "keyRaise" | "person") => {
      const got = lastDeltas[subject]
      return got === undefined
        ? []
        : [
          // The most frequent, then whatever else took more than 5 % of the window's statement time.
          ...got.delta.top.slice(0, 15),
          ...got.delta.top.slice(15).filter((s) => s.calls * s.meanMs > 0.05 * got.delta.ms)
        ].map((s) => ({ query: s.query, perProposal: round3(s.calls / got.proposals), meanMs: s.meanMs }))
    }

    return {
      worker: pipeline.worker,
      rounds: options.rounds,
      seconds: options.seconds,
      windows,
      byClients,
      statements: { pgbench: perProposal("pgbench"), key: perProposal("key"), keyRaise: perProposal("keyRaise"), person: perProposal("person") },
      autoApply: summarize(toApplied.get(Math.min(...options.clientCounts)) ?? [])
    }
  } finally {
    for (const client of [...keyClients, ...personClients]) client.close()
    scripts.remove()
    await stats.end()
  }
}
