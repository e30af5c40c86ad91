/**
 * `pnpm bench`: acs measured against raw PostgreSQL and bare Node in one run (a script, not a test; speed
 * targets are never timed assertions in the tests). Everything runs on this machine: a throwaway PostgreSQL
 * cluster (pg_stat_statements loaded, scripts/bench/cluster.ts), the upstream simulator and acs as real
 * processes. Two worlds:
 *
 * - the warehouse (scripts/bench/warehouse.ts): an account of 100,000 keywords synced over 90 days. Sync rows
 *   per second; v1 against v5 (scripts/bench/versions.ts); the keyword read against the obvious SQL and
 *   against a bare `node:http` + `pg` server (scripts/bench/keywordReads.ts); the same read over REST, RPC and
 *   MCP (scripts/bench/surfaces.ts);
 * - the change pipeline (scripts/bench/pipeline.ts): ledgers of 1,000,000 and 10,000 rows. Ledger pages and
 *   the cheap authenticated read against the bare server (scripts/bench/ledger.ts); key and person proposals
 *   against pgbench running the proposal-shaped transaction, CPU and statements per proposal, and
 *   auto-applied → applied (scripts/bench/proposals.ts).
 *
 * Then the heap a sign-in flood leaves (scripts/bench/loginFlood.ts), and the memory and event reads of 200 idle
 * event streams (scripts/bench/streams.ts). The full run prints the table of targets and writes
 * bench/results.json; the process exits non-zero when a target is missed.
 *
 *   pnpm bench                      everything (about 15 minutes on two cores)
 *   pnpm bench --only proposals     pgbench, key and person proposals, apply latency
 *   pnpm bench --only events        key proposals with and without a webhook endpoint, commit → delivery (scripts/bench/events.ts)
 *   pnpm bench --only reads         keyword read, ledger pages, the cheap read, REST/RPC/MCP
 *   pnpm bench --only sync          the first sync, then v1 against v5
 *   pnpm bench --only surfaces      REST/RPC/MCP on the demo-size simulator
 *   pnpm bench --only login-flood   the sign-in flood alone
 *   pnpm bench --only streams       200 idle event streams: memory per stream, event reads per event (scripts/bench/streams.ts)
 *   pnpm bench --only changesets    a changeset of 1,000 keyword bids: add, submit, approve, apply, revert (scripts/bench/changesets.ts)
 *   pnpm bench --only harvest       a harvest of 500 search terms over 20 ad groups: upstream writes at the minimum (scripts/bench/harvest.ts)
 *   pnpm bench --only guard         the guard's review pass over 10,000 due watches (scripts/bench/guard.ts)
 *   pnpm bench --only cli           acs start-up: CPU of --help, --version and client commands (scripts/bench/cliStart.ts)
 *   pnpm bench --only scale         200 small accounts over 20 orgs synced from cold by the scheduler (scripts/bench/scale.ts), then
 *                                   the two below
 *   pnpm bench --only citus         key proposals on a Citus cluster beside PostgreSQL, the 24 h cap exact on both (scripts/bench/citusProposals.ts)
 *   pnpm bench --only retention     30 days of 10 M metric rows: the partition dropped against the rows deleted (scripts/bench/retention.ts)
 *
 * A partial run writes bench/results-<part>.json (not committed). Every part states the machine's load
 * average over the run, so a reader can judge the noise. Settings: BENCH_PROPOSAL_ROUNDS (5),
 * BENCH_PROPOSAL_SECONDS (3), BENCH_PROPOSAL_CLIENTS (1,8: a quick look at one count), BENCH_VERSION_ORDER, BENCH_STALL_SECONDS, BENCH_NO_WORKAROUND,
 * BENCH_WORKER, BENCH_WORKER_NODE_ARGS, BENCH_API_NODE_OPTIONS, BENCH_POOL (the warehouse acs's DATABASE_POOL_SIZE, 10), BENCH_CITUS_ROUNDS (3),
 * BENCH_CITUS_SECONDS (10) (see the files).
 */
import { buildEntries } from "../packages/server/test/support/entries.ts"
import { benchCitusProposals, citusProposalDetails, citusProposalTargets } from "./bench/citusProposals.ts"
import { benchChangesets, changesetDetails, changesetTargets } from "./bench/changesets.ts"
import { benchHarvest, harvestDetails, harvestTargets } from "./bench/harvest.ts"
import { benchCliStart, cliStartMet, describeCliStart } from "./bench/cliStart.ts"
import { type BenchCluster, startBenchCluster } from "./bench/cluster.ts"
import { benchEvents, type CpuSplit, type EventsResults, TARGET_DELIVERY_P95_MS, TARGET_WEBHOOK_SHARE } from "./bench/events.ts"
import { benchGuard, guardDetails, guardTargets } from "./bench/guard.ts"
import { benchKeywordReads, type KeywordReads, keywordReadTargets } from "./bench/keywordReads.ts"
import { benchLedgerReads, type LedgerResults, TARGET_CHEAP_READ_RATIO, TARGET_LEDGER_PAGE_RATIO } from "./bench/ledger.ts"
import { benchLoginFlood, describeLoginFlood, type LoginFloodResult } from "./bench/loginFlood.ts"
import { type Pipeline, startPipeline } from "./bench/pipeline.ts"
import { startBareServer } from "./bench/processes.ts"
import {
  benchProposals,
  type ProposalResults,
  TARGET_APPLY_P95_MS,
  TARGET_CPU_MS_PER_PROPOSAL,
  TARGET_GUARDED_SHARE,
  TARGET_KEY_SHARE,
  TARGET_PERSON_SHARE
} from "./bench/proposals.ts"
import { describeMachine, fmt, loadSampler, machine, printTargets, table, type TargetRow, writeResults } from "./bench/report.ts"
import { benchRetention, retentionDetails, retentionTargets } from "./bench/retention.ts"
import { benchScale, scaleDetails, scaleTargets } from "./bench/scale.ts"
import { benchStreams, describeStreams, type StreamsResult } from "./bench/streams.ts"
import { benchSurfaces, SURFACE_RATIO_TARGET, type SurfacesResult } from "./bench/surfaces.ts"
import { benchSyncVersions, describeSyncVersions, type SyncVersions } from "./bench/versions.ts"
import { BOOTSTRAP_KEY, describeCpu, STALL_SECONDS, startWarehouse, SYNC_TIMEOUT_MS, syncTargets, type Warehouse } from "./bench/warehouse.ts"

const log = (message: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`)
const pct = (share: number) => `${fmt(share * 100, 1)} %`

// ---------------------------------------------------------------------------------------------------------
// Clean-up of everything started, in reverse order, once, on success, failure or Ctrl-C.

const cleanups: Array<{ readonly name: string; readonly run: () => Promise<void> | void }> = []
const cleanup = (name: string, run: () => Promise<void> | void) => {
  cleanups.push({ name, run })
}
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

const startClusterForRun = async (): Promise<BenchCluster> => {
  // acs runs as production runs it: node on the build (scripts/build.ts), not through tsx.
  log("building acs (scripts/build.ts) for its processes")
  cleanup("the build", await buildEntries())
  log("starting PostgreSQL (pg_stat_statements loaded)")
  const cluster = await startBenchCluster()
  cleanup("PostgreSQL", () => cluster.stop())
  return cluster
}

const envNumber = (name: string, fallback: number) => {
  const raw = process.env[name]
  const value = raw === undefined || raw === "" ? fallback : Number(raw)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, not ${raw}`)
  return value
}

// ---------------------------------------------------------------------------------------------------------
// Targets of each part.

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

const ledgerTargets = (ledger: LedgerResults): Array<TargetRow> => [
  {
    name: "cheap read: acs ledger page p50 / bare server p50",
    target: `<= ${TARGET_CHEAP_READ_RATIO}x`,
    measured: `${fmt(ledger.cheapRead.ratio)}x (${fmt(ledger.cheapRead.acs.p50Ms)} / ${fmt(ledger.cheapRead.bare.p50Ms)} ms; deep page ${
      fmt(ledger.cheapRead.ratioDeep)
    }x; ${ledger.cheapRead.identical ? "same rows" : "DIFFERENT rows"})`,
    value: ledger.cheapRead.ratio,
    pass: ledger.cheapRead.identical && ledger.cheapRead.ratio <= TARGET_CHEAP_READ_RATIO
  },
  {
    name: "ledger page p95: 1,000,000 rows / 10,000 rows",
    target: `<= ${TARGET_LEDGER_PAGE_RATIO}x`,
    measured: `${fmt(ledger.pages.ratioP95)}x (first page ${fmt(ledger.pages.large.first.p95Ms)} / ${fmt(ledger.pages.small.first.p95Ms)} ms, ` +
      `deep page ${fmt(ledger.pages.large.deep.p95Ms)} / ${fmt(ledger.pages.small.deep.p95Ms)} ms)`,
    value: ledger.pages.ratioP95,
    pass: ledger.pages.ratioP95 <= TARGET_LEDGER_PAGE_RATIO
  }
]

const proposalTargets = (p: ProposalResults): Array<TargetRow> => {
  const rows: Array<TargetRow> = []
  const most = p.byClients.reduce((a, b) => (b.clients > a.clients ? b : a))
  for (const c of [...p.byClients].sort((a, b) => b.clients - a.clients)) {
    const isTarget = c.clients === most.clients
    const rounds = (shares: ReadonlyArray<number>) => shares.map((s) => `${fmt(s * 100, 0)}`).join("/")
    rows.push({
      name: `key proposals / pgbench TPS, ${c.clients} client${c.clients === 1 ? "" : "s"}`,
      target: isTarget ? `>= ${pct(TARGET_KEY_SHARE)}` : "(reported)",
      measured: `${pct(c.keyShare)} (${fmt(c.keyTps, 0)} / ${fmt(c.pgbenchTps, 0)} per s; rounds ${rounds(c.keyShares)} %; ` +
        `${pct(c.keySharePrepared)} of pgbench -M prepared, ${fmt(c.pgbenchPreparedTps, 0)} per s)`,
      value: c.keyShare,
      pass: isTarget ? c.keyShare >= TARGET_KEY_SHARE : null
    })
    rows.push({
      name: `person proposals, auto-applied / pgbench TPS, ${c.clients} client${c.clients === 1 ? "" : "s"}`,
      // A retired target: its share is reported against the old goal and never gates the run.
      target: isTarget ? `(retired: was >= ${pct(TARGET_PERSON_SHARE)}; reported)` : "(reported)",
      measured: `${pct(c.personShare)} (${fmt(c.personTps, 1)} applied / ${fmt(c.pgbenchTps, 0)} per s; sent → applied p50 ${fmt(c.personToApplied.p50Ms, 0)} ms; ` +
        `rounds ${rounds(c.personShares)} %; ${pct(c.personSharePrepared)} of pgbench -M prepared)`,
      value: c.personShare,
      pass: null
    })
  }
  rows.push({
    name: `key raises, the guardrails checked / key cuts, ${most.clients} clients`,
    target: `>= ${pct(TARGET_GUARDED_SHARE)}`,
    measured: `${pct(most.keyRaiseShare)} (${fmt(most.keyRaiseTps, 0)} / ${fmt(most.keyTps, 0)} per s; rounds ${
      most.keyRaiseShares.map((s) => fmt(s * 100, 0)).join("/")
    } %; acs CPU ${fmt(most.keyRaiseCpuMs ?? Number.NaN)} / ${fmt(most.keyCpuMs ?? Number.NaN)} ms)`,
    value: most.keyRaiseShare,
    pass: most.keyRaiseShare >= TARGET_GUARDED_SHARE
  })
  rows.push({
    // The envelope rides in the locked statement: a raise sends what a cut sends (idle polling blurs the tenths).
    name: "statements per key raise / per key cut",
    target: "no more (± 0.2)",
    measured: `${fmt(most.keyRaiseStatements, 1)} / ${fmt(most.keyStatements, 1)}`,
    value: most.keyRaiseStatements,
    pass: most.keyRaiseStatements <= most.keyStatements + 0.2
  })
  rows.push({
    name: `acs CPU per key proposal, ${most.clients} clients (worker: ${p.worker})`,
    target: `<= ${TARGET_CPU_MS_PER_PROPOSAL} ms`,
    measured: most.keyCpuMs === null ? "n/a (no /proc)" : `${fmt(most.keyCpuMs)} ms (person proposal with its apply: ${fmt(most.personCpuMs ?? Number.NaN)} ms)`,
    value: most.keyCpuMs,
    pass: most.keyCpuMs === null ? null : most.keyCpuMs <= TARGET_CPU_MS_PER_PROPOSAL
  })
  rows.push({
    name: "statements per proposal (pg_stat_statements)",
    target: "(reported)",
    measured: `key ${fmt(most.keyStatements, 1)}, person with its apply ${fmt(most.personStatements, 1)}, pgbench ${fmt(most.pgbenchStatements, 1)}`,
    value: most.keyStatements,
    pass: null
  })
  rows.push({
    name: "auto-applied proposal sent → applied, p95",
    target: `< ${fmt(TARGET_APPLY_P95_MS, 0)} ms`,
    measured: `${fmt(p.autoApply.p95Ms)} ms (p50 ${fmt(p.autoApply.p50Ms)} ms, ${p.autoApply.samples} proposals one at a time; ` +
      `at ${most.clients} clients p95 ${fmt(most.personToApplied.p95Ms)} ms)`,
    value: p.autoApply.p95Ms,
    pass: p.autoApply.samples > 0 && p.autoApply.p95Ms < TARGET_APPLY_P95_MS
  })
  return rows
}

const eventsTargets = (e: EventsResults): Array<TargetRow> => [
  {
    name: `key proposals with a webhook on every event / without, ${e.clients} clients`,
    target: `>= ${pct(TARGET_WEBHOOK_SHARE)}`,
    measured: `${pct(e.share)} (${fmt(e.withTps, 0)} / ${fmt(e.withoutTps, 0)} per s; rounds ${e.shares.map((s) => fmt(s * 100, 0)).join("/")} %; ` +
      `acs CPU ${fmt(e.withCpuMs ?? Number.NaN)} / ${fmt(e.withoutCpuMs ?? Number.NaN)} ms per proposal)`,
    value: e.share,
    pass: e.share >= TARGET_WEBHOOK_SHARE
  },
  {
    name: `commit → webhook delivery p95 (local receiver, under ${e.clients} clients)`,
    target: `< ${fmt(TARGET_DELIVERY_P95_MS, 0)} ms`,
    measured: `${fmt(e.delivery.p95Ms, 0)} ms (p50 ${fmt(e.delivery.p50Ms, 0)} ms, ${e.delivery.samples} events; ` +
      `one at a time p95 ${fmt(e.deliveryOneAtATime.p95Ms, 0)} ms, p50 ${fmt(e.deliveryOneAtATime.p50Ms, 0)} ms)`,
    value: e.delivery.p95Ms,
    pass: e.delivery.samples > 0 && e.delivery.p95Ms < TARGET_DELIVERY_P95_MS
  }
]

const streamsTargets = (s: StreamsResult): Array<TargetRow> => [
  {
    name: `memory per idle event stream (${s.streams} streams, ${s.keys} keys)`,
    target: "(reported)",
    measured: `heap ${fmt(s.heapPerStreamBytes / 1024, 1)} KiB, RSS ${fmt(s.rssPerStreamBytes / 1024, 1)} KiB (after a full collection)`,
    value: s.heapPerStreamBytes,
    pass: null
  },
  {
    name: `event reads per event, ${s.streams} streams following`,
    target: "(reported)",
    measured: `${fmt(s.eventReadsPerEvent, 1)} (pg_stat_statements, ${s.events} events one at a time)`,
    value: s.eventReadsPerEvent,
    pass: null
  }
]

// ---------------------------------------------------------------------------------------------------------
// Details printed under the table.

/** An events window's CPU split: the API + the worker, then PostgreSQL and the bench process (its receiver included). */
const cpuSplitText = (split: CpuSplit) =>
  `${fmt(split.api)} + ${fmt(split.worker)}, PostgreSQL ${fmt(split.postgres)}, bench ${fmt(split.bench)}`

const eventsDetails = (e: EventsResults): Array<string> => [
  table(
    ["window", "round", "proposals /s", "CPU ms / proposal: API + worker, PostgreSQL, bench", "statements / proposal", "commit → delivery p50 / p95 ms", "drain ms", "load"],
    e.windows.map((w) => [
      `${w.subject} webhook`,
      String(w.round + 1),
      fmt(w.tps, 0),
      w.cpuSplit === null ? "" : cpuSplitText(w.cpuSplit),
      fmt(w.statementsPerProposal, 1),
      w.delivery === null ? "" : `${fmt(w.delivery.p50Ms, 0)} / ${fmt(w.delivery.p95Ms, 0)}`,
      w.drainMs === null ? "" : fmt(w.drainMs, 0),
      String(w.loadAverage)
    ])
  ),
  ...(["with", "without"] as const).map((subject) => {
    const split = e.cpuSplit[subject]
    return `CPU ms per proposal ${subject} the webhook (median of the windows): ${split === null ? "not measured" : cpuSplitText(split)}`
  }),
  `events delivered more than once: ${e.duplicates} (at least once; receivers dedupe on Acs-Event-Id)`,
  "",
  ...(["with", "without"] as const).flatMap((subject) => [
    `statements per key proposal ${subject} the webhook (the last such window and its drain; calls per proposal, mean ms):`,
    ...e.statements[subject].map((st) => `  ${fmt(st.perProposal, 2).padStart(6)}  ${fmt(st.meanMs, 3).padStart(7)} ms  ${st.query}`),
    ""
  ])
]

const proposalDetails = (p: ProposalResults): Array<string> => [
  table(
    ["clients", "pgbench /s (simple / prepared)", "key /s", "person applied /s", "key share", "person share", "acs CPU ms key / person", "statements key / person / pgbench", "key p50 ms", "person sent → applied p50 ms"],
    p.byClients.map((c) => [
      String(c.clients),
      `${fmt(c.pgbenchTps, 0)} / ${fmt(c.pgbenchPreparedTps, 0)}`,
      fmt(c.keyTps, 0),
      fmt(c.personTps, 1),
      pct(c.keyShare),
      pct(c.personShare),
      `${fmt(c.keyCpuMs ?? Number.NaN)} / ${fmt(c.personCpuMs ?? Number.NaN)}`,
      `${fmt(c.keyStatements, 1)} / ${fmt(c.personStatements, 1)} / ${fmt(c.pgbenchStatements, 1)}`,
      fmt(c.keyLatency.p50Ms),
      fmt(c.personToApplied.p50Ms)
    ])
  ),
  "",
  ...(["key", "keyRaise", "person"] as const).flatMap((subject) => [
    `statements per ${subject} proposal (one window at the most clients; pg_stat_statements, calls per proposal, mean ms):`,
    ...p.statements[subject].map((s) => `  ${fmt(s.perProposal, 2).padStart(6)}  ${fmt(s.meanMs, 3).padStart(7)} ms  ${s.query}`),
    ""
  ])
]

const latencyTable = (reads: KeywordReads) =>
  table(
    ["latency", "samples", "p50 ms", "p95 ms", "min ms", "max ms"],
    Object.values(reads.latency).map((l) => [l.description, String(l.samples), fmt(l.p50Ms), fmt(l.p95Ms), fmt(l.minMs), fmt(l.maxMs)])
  )

const plansTable = (reads: KeywordReads) =>
  table(
    ["plan (EXPLAIN ANALYZE)", "execution ms", "top node"],
    reads.plans.map((p) => [p.name, p.executionMs === null ? "?" : fmt(p.executionMs, 3), (p.text[0] ?? "").trim().slice(0, 100)])
  )

const syncDetails = (warehouse: Warehouse): Array<string> => {
  const { shipped, stall, workaround } = warehouse
  return [
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
      ? [`sync with the workaround: ${fmt(workaround.seconds)} s observed, rowsWritten ${fmt(workaround.rowsWritten)}`, `  ${describeCpu(workaround.cpu)}`]
      : [])
  ]
}

/** Prints the table and details, writes the results file, sets the exit code. */
const finish = (name: string, title: string, targets: ReadonlyArray<TargetRow>, details: ReadonlyArray<string>, results: Record<string, unknown>, load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  load.stop()
  const loadSummary = load.summary()
  const allPass = targets.every((t) => t.pass !== false)
  const file = writeResults(name, {
    timestamp: new Date().toISOString(),
    startedAt: startedAt.toISOString(),
    durationSeconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
    machine: machine(loadSummary),
    ...results,
    targets: targets.map(({ name: n, target, measured, value, pass }) => ({ name: n, target, measured, value, pass })),
    allPass
  })
  process.stdout.write([
    "",
    title,
    describeMachine(loadSummary),
    "",
    printTargets(targets),
    "",
    ...details,
    `wrote ${file} after ${Math.round((Date.now() - startedAt.getTime()) / 1000)} s; ${allPass ? "all targets met" : "SOME TARGETS MISSED"}`,
    ""
  ].join("\n"))
  if (!allPass) process.exitCode = 1
}

// ---------------------------------------------------------------------------------------------------------
// Parts.

const proposalOptions = () => ({
  rounds: envNumber("BENCH_PROPOSAL_ROUNDS", 5),
  seconds: envNumber("BENCH_PROPOSAL_SECONDS", 3),
  clientCounts: (process.env["BENCH_PROPOSAL_CLIENTS"] ?? "1,8").split(",").map(Number)
})

const pipelineWorld = async (cluster: BenchCluster): Promise<Pipeline> => {
  const pipeline = await startPipeline(cluster, log)
  cleanup("the pipeline", () => pipeline.stop())
  return pipeline
}

const ledgerReads = async (pipeline: Pipeline): Promise<LedgerResults> => {
  log("starting the bare node:http + pg server on the pipeline's database")
  const bare = await startBareServer(pipeline.cluster.url(pipeline.database))
  try {
    return await benchLedgerReads(pipeline, bare, log)
  } finally {
    await bare.stop()
  }
}

const surfacesOn = (warehouse: Warehouse) =>
  benchSurfaces({ baseUrl: warehouse.acs().api.replace(/\/api\/v1$/, ""), key: BOOTSTRAP_KEY, projectId: warehouse.projectId, log })

const noSyncToRead = (warehouse: Warehouse, name: string, load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  finish(name, "the first sync stalled (BENCH_NO_WORKAROUND=1): nothing else was measured", syncTargets(warehouse), syncDetails(warehouse), {
    stall: warehouse.stall ?? null
  }, load, startedAt)
}

const full = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  const cluster = await startClusterForRun()
  const warehouse = await startWarehouse({ cluster, log, cleanup })
  if (warehouse.shipped === undefined && warehouse.workaround === undefined) return noSyncToRead(warehouse, "results", load, startedAt)
  const versions: SyncVersions = await benchSyncVersions({
    acs: warehouse.acs(),
    pool: warehouse.pool,
    projectId: warehouse.projectId,
    stallSeconds: STALL_SECONDS,
    timeoutMs: SYNC_TIMEOUT_MS,
    log
  })
  const reads = await benchKeywordReads({ warehouse, log, cleanup })
  const surfaces = await surfacesOn(warehouse)
  await warehouse.acs().stop()
  const pipeline = await pipelineWorld(cluster)
  const ledger = await ledgerReads(pipeline)
  const proposals = await benchProposals(pipeline, log, proposalOptions())
  const events = await benchEvents(pipeline, log, eventsOptions())
  await pipeline.stop()
  const loginFlood: LoginFloodResult = await benchLoginFlood(log)
  const streams = await benchStreams(cluster, log)
  const targets = [
    ...proposalTargets(proposals),
    ...eventsTargets(events),
    ...streamsTargets(streams),
    ...ledgerTargets(ledger),
    ...surfaceTargets(surfaces),
    ...keywordReadTargets(reads),
    ...syncTargets(warehouse),
    describeSyncVersions(versions)
  ]
  finish(
    "results",
    `acs benchmark: ${warehouse.accountName}, ${fmt(reads.sizes.keywords)} keywords, ${reads.sizes.syncedDays} days, ${fmt(reads.sizes.metricRows)} daily metric rows; ledgers of 1,000,000 and 10,000 rows`,
    targets,
    [
      ...proposalDetails(proposals),
      ...eventsDetails(events),
      latencyTable(reads),
      "",
      ...syncDetails(warehouse),
      ...describeLoginFlood(loginFlood).map((line) => `login flood, ${line}`),
      describeStreams(streams),
      "",
      plansTable(reads),
      ""
    ],
    { sync: { shipped: warehouse.shipped ?? null, stall: warehouse.stall ?? null, workaround: warehouse.workaround ?? null, metricRows: warehouse.metricRows, versions }, reads, surfaces, ledger, proposals, events, loginFlood, streams },
    load,
    startedAt
  )
}

const proposalsOnly = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  const cluster = await startClusterForRun()
  const pipeline = await pipelineWorld(cluster)
  const proposals = await benchProposals(pipeline, log, proposalOptions())
  finish("results-proposals", "acs proposals against pgbench, ledger of 1,000,000 rows", proposalTargets(proposals), proposalDetails(proposals), { only: "proposals", proposals }, load, startedAt)
}

const eventsOptions = () => ({
  // Short windows, many rounds: the ratio's median holds up against bursts of load from elsewhere.
  rounds: envNumber("BENCH_EVENTS_ROUNDS", 12),
  seconds: envNumber("BENCH_EVENTS_SECONDS", 4),
  clients: 8
})

const eventsOnly = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  const cluster = await startClusterForRun()
  const pipeline = await pipelineWorld(cluster)
  const events = await benchEvents(pipeline, log, eventsOptions())
  finish(
    "results-events",
    "acs events: key proposals with and without a webhook endpoint, ledger of 1,000,000 rows",
    eventsTargets(events),
    eventsDetails(events),
    { only: "events", events },
    load,
    startedAt
  )
}

const readsOnly = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  const cluster = await startClusterForRun()
  const warehouse = await startWarehouse({ cluster, log, cleanup })
  if (warehouse.shipped === undefined && warehouse.workaround === undefined) return noSyncToRead(warehouse, "results-reads", load, startedAt)
  const reads = await benchKeywordReads({ warehouse, log, cleanup })
  const surfaces = await surfacesOn(warehouse)
  await warehouse.acs().stop()
  const pipeline = await pipelineWorld(cluster)
  const ledger = await ledgerReads(pipeline)
  finish(
    "results-reads",
    `acs reads: ${fmt(reads.sizes.keywords)} keywords over ${reads.sizes.syncedDays} days; ledgers of 1,000,000 and 10,000 rows`,
    [...ledgerTargets(ledger), ...surfaceTargets(surfaces), ...keywordReadTargets(reads)],
    [latencyTable(reads), "", plansTable(reads), ""],
    { only: "reads", reads, surfaces, ledger },
    load,
    startedAt
  )
}

/** The first sync and v1 against v5 (v5,v1,v1,v5 unless BENCH_VERSION_ORDER says otherwise: under five minutes). */
const syncOnly = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  process.env["BENCH_VERSION_ORDER"] ??= "v5,v1,v1,v5"
  const cluster = await startClusterForRun()
  const warehouse = await startWarehouse({ cluster, log, cleanup })
  if (warehouse.shipped === undefined && warehouse.workaround === undefined) return noSyncToRead(warehouse, "results-sync", load, startedAt)
  const versions = await benchSyncVersions({ acs: warehouse.acs(), pool: warehouse.pool, projectId: warehouse.projectId, stallSeconds: STALL_SECONDS, timeoutMs: SYNC_TIMEOUT_MS, log })
  finish(
    "results-sync",
    `acs sync: ${warehouse.accountName}, ${fmt(warehouse.metricRows)} daily metric rows`,
    [...syncTargets(warehouse), describeSyncVersions(versions)],
    [...syncDetails(warehouse), ""],
    { only: "sync", sync: { shipped: warehouse.shipped ?? null, stall: warehouse.stall ?? null, workaround: warehouse.workaround ?? null, metricRows: warehouse.metricRows, versions } },
    load,
    startedAt
  )
}

/** The same read over REST, RPC and MCP on the demo-size simulator. */
const surfacesOnly = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  const cluster = await startClusterForRun()
  const warehouse = await startWarehouse({ cluster, log, cleanup, size: "demo" })
  const surfaces = await surfacesOn(warehouse)
  finish("results-surfaces", "the same read over REST, RPC and MCP", surfaceTargets(surfaces), [], { only: "surfaces", surfaces }, load, startedAt)
}

const streamsOnly = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  const cluster = await startClusterForRun()
  const streams = await benchStreams(cluster, log)
  finish("results-streams", "acs idle event streams: memory per stream and event reads per event", streamsTargets(streams), [describeStreams(streams), ""], {
    only: "streams",
    streams
  }, load, startedAt)
}

/** One changeset of 1,000 keyword bid changes through its life, on a world of its own. */
const changesetsOnly = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  const cluster = await startClusterForRun()
  const changesets = await benchChangesets(cluster, log)
  finish(
    "results-changesets",
    `acs changesets: ${changesets.members.toLocaleString("en-US")} keyword bid changes over ${changesets.adGroups} ad groups (add, submit, approve, apply, revert)`,
    changesetTargets(changesets),
    changesetDetails(changesets, table),
    { only: "changesets", changesets },
    load,
    startedAt
  )
}

/** A search-term harvest of 500 terms over 20 ad groups, applied and reverted, on a world of its own. */
const harvestOnly = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  const cluster = await startClusterForRun()
  const harvest = await benchHarvest(cluster, log)
  finish(
    "results-harvest",
    `acs harvest: ${harvest.terms} search terms over ${harvest.adGroups} ad groups (propose, approve, apply, revert)`,
    harvestTargets(harvest),
    harvestDetails(harvest, table),
    { only: "harvest", harvest },
    load,
    startedAt
  )
}

/** The guard's review pass over 10,000 due watches on the warehouse's account (scripts/bench/guard.ts). */
const guardOnly = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  const cluster = await startClusterForRun()
  const warehouse = await startWarehouse({ cluster, log, cleanup })
  if (warehouse.shipped === undefined && warehouse.workaround === undefined) return noSyncToRead(warehouse, "results-guard", load, startedAt)
  const guard = await benchGuard(cluster, warehouse, log)
  finish(
    "results-guard",
    `acs guard: a review pass over ${fmt(guard.watches)} due watches, ${warehouse.accountName}`,
    guardTargets(guard),
    guardDetails(guard),
    { only: "guard", guard },
    load,
    startedAt
  )
}

const citusOptions = () => ({ rounds: envNumber("BENCH_CITUS_ROUNDS", 3), seconds: envNumber("BENCH_CITUS_SECONDS", 10) })

/**
 * Past one machine (scripts/bench/scale.ts, citusProposals.ts, retention.ts): 200 small accounts over 20 orgs synced
 * from cold by the scheduler; key proposals on a Citus cluster beside plain PostgreSQL with the 24 h cap checked on
 * both; 30 days of 10 M metric rows dropped as a partition against deleted.
 */
const scaleOnly = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  const cluster = await startClusterForRun()
  const scale = await benchScale(cluster, log)
  const citus = await benchCitusProposals(cluster, log, citusOptions())
  const retention = await benchRetention(cluster, log)
  finish(
    "results-scale",
    `acs past one machine: ${scale.accounts} accounts over ${scale.orgs} orgs (one holding ${scale.bigOrgAccounts}) synced from cold; ` +
      `key proposals on Citus beside PostgreSQL; retention of ${fmt(retention.agedRows)} metric rows`,
    [...scaleTargets(scale), ...citusProposalTargets(citus), ...retentionTargets(retention)],
    [...scaleDetails(scale), ...citusProposalDetails(citus), ...retentionDetails(retention)],
    { only: "scale", scale, citus, retention },
    load,
    startedAt
  )
}

/** Key proposals on a Citus cluster beside plain PostgreSQL, the 24 h cap checked on both (scripts/bench/citusProposals.ts). */
const citusOnly = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  const cluster = await startClusterForRun()
  const citus = await benchCitusProposals(cluster, log, citusOptions())
  finish("results-citus", "acs key proposals on Citus (a coordinator and two workers) beside PostgreSQL", citusProposalTargets(citus), citusProposalDetails(citus), {
    only: "citus",
    citus
  }, load, startedAt)
}

/** 30 days of 10 M metric rows: a partition dropped against rows deleted (scripts/bench/retention.ts). */
const retentionOnly = async (load: ReturnType<typeof loadSampler>, startedAt: Date) => {
  const cluster = await startClusterForRun()
  const retention = await benchRetention(cluster, log)
  finish("results-retention", `acs retention: ${fmt(retention.agedRows)} metric rows, a partition dropped against rows deleted`, retentionTargets(retention), retentionDetails(retention), {
    only: "retention",
    retention
  }, load, startedAt)
}

const parts: Record<string, (load: ReturnType<typeof loadSampler>, startedAt: Date) => Promise<void>> = {
  proposals: proposalsOnly,
  events: eventsOnly,
  reads: readsOnly,
  sync: syncOnly,
  surfaces: surfacesOnly,
  streams: streamsOnly,
  changesets: changesetsOnly,
  harvest: harvestOnly,
  guard: guardOnly,
  scale: scaleOnly,
  citus: citusOnly,
  retention: retentionOnly,
  cli: async () => {
    const result = await benchCliStart(log)
    process.stdout.write(`${describeCliStart(result).join("\n")}\n`)
    if (!cliStartMet(result)) process.exitCode = 1
  },
  "login-flood": async () => {
    process.stdout.write(`${describeLoginFlood(await benchLoginFlood(log)).join("\n")}\n`)
  }
}

const onlyAt = process.argv.indexOf("--only")
const only = process.argv.find((arg) => arg.startsWith("--only="))?.slice("--only=".length) ?? (onlyAt >= 0 ? process.argv[onlyAt + 1] : undefined)
const load = loadSampler()
try {
  const part = only === undefined ? full : parts[only]
  if (part === undefined) throw new Error(`--only takes ${Object.keys(parts).join(", ")}, not ${only}`)
  await part(load, new Date())
} catch (error) {
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
  process.exitCode = 1
} finally {
  load.stop()
  await cleanUp()
}
