/**
 * `pnpm bench --only changesets`: one changeset of 1,000 keyword bid changes over 10 ad groups of one writable
 * account, through its whole life: members added in calls of 100 (a write key), submitted (the key), approved (the
 * signed-in admin, naming the planHash), applied (acs's worker, as its own process), then reverted (the admin: a
 * revert needs the canApprove grant, which a key never has) and the
 * compensating changeset applied. Each phase reports its wall time, the CPU of acs's processes (the API and the
 * worker), the statements acs sent (pg_stat_statements, role `postgres`) and the upstream calls the simulator
 * answered (its call log), with the bench process's CPU beside them: the simulator answers inside it, so that
 * CPU is the simulator's own time for the same calls (plus the bench's status poll, one prepared query every
 * 20 ms). The platform's minimum for the writes is one bulk call per ad group per 1,000 rows; after the run, the
 * same bid changes sent to the simulator in process as that minimum (10 bulk-updates of 100, no HTTP) give the
 * simulator's time for the minimum.
 *
 * Its own small world: a throwaway database, a simulator with one account of 10 ad groups × 100 keywords (2
 * campaigns × 5), acs's API with WORKER_CONCURRENCY=0 and `acs worker` beside it, as `pnpm bench` runs them.
 * BENCH_API_NODE_OPTIONS and BENCH_WORKER_NODE_ARGS add node options to the API and the worker, as for the
 * pipeline part (pipeline.ts).
 */
import { type Simulator, startSimulator } from "../../packages/upstream/src/simulator/Simulator.ts"
import { ACCOUNT_MANAGER } from "../../packages/upstream/src/simulator/SimulatorSize.ts"
import { type AcsInstance, BENCH_ADMIN, signIn, startAcs } from "./acs.ts"
import type { BenchCluster } from "./cluster.ts"
import { processCpuSeconds } from "./cpu.ts"
import { array, number, record, string } from "./json.ts"
import { type HttpClient, makeHttpClient, retrying } from "./measure.ts"
import { makePool, type Pool } from "./pg.ts"
import { startWorker } from "./pipeline.ts"
import { fmt, type TargetRow } from "./report.ts"
import { type StatementDelta, statementDelta, statementSnapshot } from "./statements.ts"

const DATABASE = "acs_bench_changesets"
const BOOTSTRAP_KEY = "acs_bench_changesets_key_0123456789abcdefghijklmn"
const SECRETS_KEY = Buffer.alloc(32, 17).toString("base64")
const AD_GROUPS = 10
const PER_AD_GROUP = 100
const MEMBERS = AD_GROUPS * PER_AD_GROUP
const PER_CALL = 100
/** The platform takes up to 1,000 rows in one bulk call, one ad group at a time. */
const PLATFORM_BULK_ROWS = 1000
const MINIMUM_WRITES = AD_GROUPS * Math.ceil(PER_AD_GROUP / PLATFORM_BULK_ROWS)
const WRITE_PATH = /^\/v1\/keywords\/bulk-update$/
/** The statements of the subsystems beside any apply (the event sequencer, the webhook deliveries' rescue), not the apply's own. */
const BESIDE = /acs_sequence_events|webhook_batches/

export const TARGET_ADD_MEMBERS_PER_SECOND = 2000
export const TARGET_SUBMIT_MS = 1000
export const TARGET_REVERT_MS = 1000
export const TARGET_APPLY_CPU_MS_PER_MEMBER = 0.3
export const TARGET_STATEMENTS_PER_BULK_CALL = 4

export type PhaseName = "add" | "submit" | "approve" | "apply" | "revert request" | "revert apply"

export interface Phase {
  readonly name: PhaseName
  readonly wallMs: number
  /** CPU of the API and the worker processes; null off Linux. */
  readonly acsCpuMs: number | null
  readonly apiCpuMs: number | null
  readonly workerCpuMs: number | null
  /** This process's CPU: the simulator answering, and the bench's calls and status poll. */
  readonly simulatorCpuMs: number
  readonly statements: number
  /** Of those, the statements of the subsystems that run beside any apply: the event sequencer and the webhook deliveries' rescue. */
  readonly besideStatements: number
  readonly topStatements: StatementDelta["top"]
  readonly upstreamCalls: number
  readonly upstreamWrites: number
  /** Upstream calls by method and path, ids replaced by `:id`. */
  readonly upstreamByPath: Record<string, number>
}

export interface ChangesetResults {
  readonly members: number
  readonly adGroups: number
  readonly minimumWrites: number
  readonly phases: ReadonlyArray<Phase>
  readonly changesetStatus: string
  readonly revertStatus: string
  readonly memberCounts: unknown
  readonly revertCounts: unknown
  /** The same bid changes as the platform's minimum, sent to the simulator in process: its own time for them. */
  readonly minimumReplay: { readonly calls: number; readonly ms: number; readonly statuses: ReadonlyArray<number> }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const normalPath = (method: string, path: string) => `${method} ${path.replace(/\/\d+(?=\/|$)/g, "/:id")}`

export interface World {
  readonly simulator: Simulator
  readonly acs: AcsInstance
  readonly pool: Pool
  readonly projectId: string
  readonly orgId: number
  readonly writeKey: string
  readonly cookie: string
  readonly pids: { readonly api: number | undefined; readonly worker: number | undefined }
  readonly stop: () => Promise<void>
}

/** A world's database and its simulator account: `campaigns` × `adGroupsPerCampaign` ad groups of `keywordsPerAdGroup` keywords. */
export interface WorldShape {
  readonly part: string
  readonly database: string
  readonly bootstrapKey: string
  readonly campaigns: number
  readonly adGroupsPerCampaign: number
  readonly keywordsPerAdGroup: number
}

const CHANGESETS_WORLD: WorldShape = {
  part: "changesets",
  database: DATABASE,
  bootstrapKey: BOOTSTRAP_KEY,
  campaigns: 2,
  adGroupsPerCampaign: AD_GROUPS / 2,
  keywordsPerAdGroup: PER_AD_GROUP
}

/** A throwaway database, a simulator with one writable account, acs's API and `acs worker` beside it; synced, signed in. */
export const startWorld = async (cluster: BenchCluster, log: (message: string) => void, shape: WorldShape = CHANGESETS_WORLD): Promise<World> => {
  const { part } = shape
  await cluster.createDatabase(shape.database)
  const stops: Array<() => Promise<void> | void> = []
  const stop = async () => {
    for (const one of stops.reverse()) {
      try {
        await one()
      } catch (error) {
        log(`${part}: stopping failed: ${String(error)}`)
      }
    }
    stops.length = 0
  }
  try {
    log(`${part}: a simulator account of ${shape.campaigns * shape.adGroupsPerCampaign} ad groups × ${shape.keywordsPerAdGroup} keywords, acs and acs worker`)
    const simulator = await startSimulator({
      seed: 34,
      size: {
        accounts: [{
          name: "Changesets",
          currency: "USD",
          timeZone: "America/New_York",
          roleNames: [ACCOUNT_MANAGER],
          countriesOrRegions: ["US"],
          campaigns: shape.campaigns,
          adGroupsPerCampaign: shape.adGroupsPerCampaign,
          keywordsPerAdGroup: shape.keywordsPerAdGroup,
          keywordSpread: 0,
          maxConversionsShare: 0
        }]
      }
    })
    stops.push(() => simulator.close())
    const acs = await startAcs({
      WORKER_CONCURRENCY: "0",
      WEBHOOK_CONCURRENCY: "0",
      ACS_SECRETS_KEY: SECRETS_KEY,
      DATABASE_URL: cluster.url(shape.database),
      ADMIN_BOOTSTRAP_KEY: shape.bootstrapKey,
      ADMIN_EMAIL: BENCH_ADMIN.email,
      ADMIN_PASSWORD: BENCH_ADMIN.password,
      SIMULATOR_URL: simulator.url,
      ACS_DEMO: "true",
      SYNC_INTERVAL_MINUTES: "0",
      RATE_LIMIT_READ: "100000000",
      RATE_LIMIT_WRITE: "100000000",
      RATE_LIMIT_EXPENSIVE: "100000000",
      LOG_LEVEL: "warn",
      ...(process.env["BENCH_API_NODE_OPTIONS"] === undefined ? {} : { NODE_OPTIONS: process.env["BENCH_API_NODE_OPTIONS"] })
    }, shape.bootstrapKey)
    stops.push(() => acs.stop())
    const worker = startWorker({ DATABASE_URL: cluster.url(shape.database), ACS_SECRETS_KEY: SECRETS_KEY, SIMULATOR_URL: simulator.url, LOG_LEVEL: "warn" })
    stops.push(() => worker.stop())
    const pool = makePool({ connectionString: cluster.benchUrl(shape.database), max: 2 })
    stops.push(() => pool.end())

    let projectId: string | undefined
    for (let i = 0; projectId === undefined; i++) {
      const accounts = array(record(await retrying("GET accounts", () => acs.client.getJson(`${acs.api}/accounts`)), "accounts")["accounts"], "accounts")
      const first = accounts[0] === undefined ? undefined : string(record(accounts[0], "account"), "projectId")
      if (first !== undefined) {
        const syncs = array(record(await retrying("GET syncs", () => acs.client.getJson(`${acs.api}/accounts/${first}/syncs`)), "syncs")["syncs"], "syncs")
        const status = syncs[0] === undefined ? undefined : string(record(syncs[0], "sync"), "status")
        if (status === "failed") throw new Error(`${part}: the first sync failed\n${acs.logs()}`)
        if (status === "succeeded") projectId = first
      }
      if (i > 1200) throw new Error(`${part}: the account did not sync\n${acs.logs()}`)
      if (projectId === undefined) await sleep(250)
    }
    const orgId = simulator.accounts[0]?.orgId
    if (orgId === undefined) throw new Error(`${part}: the simulator has no account`)

    const created = record(await acs.client.sendJson("POST", `${acs.api}/keys`, { name: "bench writer", scope: "write" }), "key")
    const cookie = await signIn(acs.api, part)
    if (!worker.alive()) throw new Error(`${part}: the worker process ended:\n${worker.logs()}`)
    return { simulator, acs, pool, projectId, orgId, writeKey: string(created, "secret"), cookie, pids: { api: acs.pid, worker: worker.pid }, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

export const benchChangesets = async (cluster: BenchCluster, log: (message: string) => void): Promise<ChangesetResults> => {
  const world = await startWorld(cluster, log)
  const stats = makePool({ connectionString: cluster.benchUrl("postgres"), max: 1 })
  const key: HttpClient = makeHttpClient({ authorization: `Bearer ${world.writeKey}` })
  const person: HttpClient = makeHttpClient({ cookie: world.cookie })
  const base = `${world.acs.api}/accounts/${world.projectId}/changesets`
  try {
    const keywords = (await world.pool.query<{ keyword_id: string; ad_group_id: string; bid_micros: string | null }>(
      `SELECT keyword_id, ad_group_id, bid_micros::text FROM keywords
       WHERE project_id = $1 AND status <> 'DELETED' ORDER BY ad_group_id, keyword_id`,
      [world.projectId]
    )).rows
    const byAdGroup = new Map<string, Array<{ readonly keywordId: string; readonly bidMicros: number }>>()
    for (const k of keywords) {
      const list = byAdGroup.get(k.ad_group_id) ?? []
      if (list.length < PER_AD_GROUP) list.push({ keywordId: k.keyword_id, bidMicros: k.bid_micros === null ? 1_000_000 : Number(k.bid_micros) })
      byAdGroup.set(k.ad_group_id, list)
    }
    const adGroups = [...byAdGroup.entries()].filter(([, list]) => list.length === PER_AD_GROUP).slice(0, AD_GROUPS)
    if (adGroups.length < AD_GROUPS) throw new Error(`changesets: ${adGroups.length} ad groups with ${PER_AD_GROUP} keywords, not ${AD_GROUPS}`)
    // A bid 10 cents lower: a decrease, never under 0.10.
    const newBid = (bidMicros: number) => Math.max(100_000, bidMicros - 100_000)
    const proposals = adGroups.flatMap(([, list]) =>
      list.map((k) => ({ kind: "keyword_bid_change", body: { keywordIds: [k.keywordId], newBidMicros: newBid(k.bidMicros), reason: "bench: changeset of 1,000 bids" } }))
    )

    const cpuOf = (pid: number | undefined) => {
      const seconds = processCpuSeconds(pid)
      return seconds === null ? null : seconds * 1000
    }
    const phases: Array<Phase> = []
    const measure = async <A>(name: PhaseName, run: () => Promise<A>): Promise<A> => {
      const statementsBefore = await statementSnapshot(stats, DATABASE)
      const callsBefore = world.simulator.control.listCalls().at(-1)?.seq ?? 0
      const api = cpuOf(world.pids.api)
      const worker = cpuOf(world.pids.worker)
      const own = process.cpuUsage()
      const started = performance.now()
      const result = await run()
      const wallMs = performance.now() - started
      const ownUsed = process.cpuUsage(own)
      const apiAfter = cpuOf(world.pids.api)
      const workerAfter = cpuOf(world.pids.worker)
      const delta = statementDelta(statementsBefore, await statementSnapshot(stats, DATABASE))
      const calls = world.simulator.control.listCalls({ since: callsBefore })
      const byPath: Record<string, number> = {}
      for (const call of calls) {
        const path = normalPath(call.method, call.path)
        byPath[path] = (byPath[path] ?? 0) + 1
      }
      const apiCpuMs = api === null || apiAfter === null ? null : apiAfter - api
      const workerCpuMs = worker === null || workerAfter === null ? null : workerAfter - worker
      const phase: Phase = {
        name,
        wallMs,
        acsCpuMs: apiCpuMs === null || workerCpuMs === null ? null : apiCpuMs + workerCpuMs,
        apiCpuMs,
        workerCpuMs,
        simulatorCpuMs: (ownUsed.user + ownUsed.system) / 1000,
        statements: delta.calls,
        besideStatements: delta.top.filter((statement) => BESIDE.test(statement.query)).reduce((sum, statement) => sum + statement.calls, 0),
        topStatements: delta.top.slice(0, 12),
        upstreamCalls: calls.length,
        upstreamWrites: calls.filter((c) => c.method === "POST" && WRITE_PATH.test(c.path)).length,
        upstreamByPath: byPath
      }
      phases.push(phase)
      log(`changesets: ${name}: ${fmt(wallMs, 0)} ms, acs CPU ${fmt(phase.acsCpuMs ?? Number.NaN, 0)} ms, ${phase.statements} statements, ${phase.upstreamCalls} upstream calls`)
      return result
    }

    /** Polls the changeset's row (as `bench`: not counted) until it has left the statuses of an apply under way. */
    const ended = async (changesetId: string) => {
      const deadline = Date.now() + 600_000
      for (;;) {
        const row = (await world.pool.query<{ status: string }>({
          name: "bench_changeset_poll",
          text: "SELECT status FROM changesets WHERE changeset_id = $1",
          values: [changesetId]
        })).rows[0]
        if (row !== undefined && !["submitted", "queued", "approved", "applying"].includes(row.status)) return row.status
        if (Date.now() > deadline) throw new Error(`changesets: ${changesetId} still ${row?.status} after 10 minutes\n${world.acs.logs().slice(-3000)}`)
        await sleep(20)
      }
    }

    /** One changeset's life, each phase through `phase`: added, submitted, approved, applied, reverted. */
    const round = async (title: string, phase: <A>(name: PhaseName, run: () => Promise<A>) => Promise<A>) => {
      const opened = record(await key.sendJson("POST", base, { title, reason: "bench", onFailure: "continue" }), "changeset")
      const changesetId = string(opened, "changesetId")
      log(`changesets: ${changesetId} opened; adding ${MEMBERS} members in calls of ${PER_CALL}`)
      await phase("add", async () => {
        for (let at = 0; at < proposals.length; at += PER_CALL) {
          const answer = record(await key.sendJson("POST", `${base}/${changesetId}/members`, { proposals: proposals.slice(at, at + PER_CALL) }), "members")
          if (number(answer, "added") !== PER_CALL) throw new Error(`changesets: members refused: ${JSON.stringify(answer).slice(0, 1000)}`)
        }
      })
      const submitted = await phase("submit", async () => record(await key.postJson(`${base}/${changesetId}/submit`), "submit"))
      const planHash = string(submitted, "planHash")
      const approved = await phase("approve", async () => record(await person.sendJson("POST", `${base}/${changesetId}/approve`, { planHash }), "approve"))
      log(`changesets: approved (${string(approved, "status")}); waiting for the apply`)
      const changesetStatus = await phase("apply", () => ended(changesetId))
      const detail = record(await key.getJson(`${base}/${changesetId}`), "detail")
      const memberCounts = record(detail["changeset"], "changeset")["members"]
      const reverted = await phase("revert request", async () => record(await person.sendJson("POST", `${base}/${changesetId}/revert`, {}), "revert"))
      const revertId = string(record(reverted["changeset"], "changeset"), "changesetId")
      const revertStatus = await phase("revert apply", () => ended(revertId))
      const revertCounts = record(record(await key.getJson(`${base}/${revertId}`), "detail")["changeset"], "changeset")["members"]
      return { changesetStatus, memberCounts, revertStatus, revertCounts }
    }

    // A long-running acs has run its code before: one unmeasured round first (its revert puts every bid back), so the
    // measured one is not the processes' first run of each path.
    await round("Bench: warm-up", (_name, run) => run())
    const { changesetStatus, memberCounts, revertCounts, revertStatus } = await round("Bench: 1,000 keyword bids", measure)

    // The simulator's own time for the platform's minimum: the same bid changes as one bulk-update per ad group.
    const statuses: Array<number> = []
    const replayStarted = performance.now()
    for (const [adGroupId, list] of adGroups) {
      const answer = world.simulator.webUiWrite({
        adAccountId: world.orgId,
        method: "POST",
        path: "/v1/keywords/bulk-update",
        body: {
          allowPartialSuccess: true,
          items: list.map((k, i) => ({
            correlationId: i,
            data: { id: Number(k.keywordId), adGroupId: Number(adGroupId), bid: { amount: (newBid(k.bidMicros) / 1e6).toFixed(2), currency: "USD" } }
          }))
        }
      })
      statuses.push(answer.status)
    }
    const minimumReplay = { calls: adGroups.length, ms: performance.now() - replayStarted, statuses }

    return { members: MEMBERS, adGroups: AD_GROUPS, minimumWrites: MINIMUM_WRITES, phases, changesetStatus, revertStatus, memberCounts, revertCounts, minimumReplay }
  } finally {
    key.close()
    person.close()
    await stats.end()
    await world.stop()
  }
}

const phaseOf = (r: ChangesetResults, name: PhaseName): Phase => {
  const phase = r.phases.find((p) => p.name === name)
  if (phase === undefined) throw new Error(`changesets: no ${name} phase`)
  return phase
}

export const changesetTargets = (r: ChangesetResults): Array<TargetRow> => {
  const add = phaseOf(r, "add")
  const submit = phaseOf(r, "submit")
  const apply = phaseOf(r, "apply")
  const revertRequest = phaseOf(r, "revert request")
  const revertApply = phaseOf(r, "revert apply")
  const addRate = r.members / (add.wallMs / 1000)
  const applyCpu = apply.acsCpuMs === null ? null : apply.acsCpuMs / r.members
  const own = apply.statements - apply.besideStatements
  const perBulk = own / r.minimumWrites
  return [
    {
      name: `apply: upstream write calls (POST /v1/keywords/bulk-update), ${r.members} members`,
      target: `= ${r.minimumWrites} (one per ad group per ${fmt(PLATFORM_BULK_ROWS)} rows)`,
      measured: `${fmt(apply.upstreamWrites)} writes, ${fmt(apply.upstreamCalls)} upstream calls in all (${r.changesetStatus})`,
      value: apply.upstreamWrites,
      pass: apply.upstreamWrites === r.minimumWrites && r.changesetStatus === "applied"
    },
    {
      name: "apply: its statements per bulk call (at the minimum)",
      target: `<= ${TARGET_STATEMENTS_PER_BULK_CALL}`,
      measured: `${fmt(perBulk, 1)} (${fmt(own)} statements / ${r.minimumWrites}; ${fmt(own / r.members, 2)} per member; ` +
        `${fmt(apply.statements)} with the ${fmt(apply.besideStatements)} of the event sequencer and webhook rescue beside it)`,
      value: perBulk,
      pass: perBulk <= TARGET_STATEMENTS_PER_BULK_CALL
    },
    {
      name: "apply: acs CPU per member (API + worker)",
      target: `<= ${TARGET_APPLY_CPU_MS_PER_MEMBER} ms`,
      measured: applyCpu === null ? "n/a (no /proc)" : `${fmt(applyCpu, 3)} ms (${fmt(apply.acsCpuMs ?? Number.NaN, 0)} ms in ${fmt(apply.wallMs, 0)} ms; simulator ${fmt(apply.simulatorCpuMs, 0)} ms)`,
      value: applyCpu,
      pass: applyCpu === null ? null : applyCpu <= TARGET_APPLY_CPU_MS_PER_MEMBER
    },
    {
      name: `adding members, ${r.members / PER_CALL} calls of ${PER_CALL}`,
      target: `>= ${fmt(TARGET_ADD_MEMBERS_PER_SECOND)} members/s`,
      measured: `${fmt(addRate, 0)} members/s (${fmt(add.wallMs, 0)} ms; acs CPU ${fmt((add.acsCpuMs ?? Number.NaN) / r.members, 3)} ms and ${fmt(add.statements / r.members, 1)} statements per member)`,
      value: addRate,
      pass: addRate >= TARGET_ADD_MEMBERS_PER_SECOND
    },
    {
      name: `submit of ${r.members} members`,
      target: `< ${fmt(TARGET_SUBMIT_MS, 0)} ms`,
      measured: `${fmt(submit.wallMs, 0)} ms (acs CPU ${fmt(submit.acsCpuMs ?? Number.NaN, 0)} ms, ${fmt(submit.statements)} statements)`,
      value: submit.wallMs,
      pass: submit.wallMs < TARGET_SUBMIT_MS
    },
    {
      name: `revert of ${r.members} members: the request`,
      target: `< ${fmt(TARGET_REVERT_MS, 0)} ms`,
      measured: `${fmt(revertRequest.wallMs, 0)} ms (acs CPU ${fmt(revertRequest.acsCpuMs ?? Number.NaN, 0)} ms, ${fmt(revertRequest.statements)} statements, ${
        fmt(revertRequest.upstreamCalls)
      } upstream calls)`,
      value: revertRequest.wallMs,
      pass: revertRequest.wallMs < TARGET_REVERT_MS
    },
    {
      name: "revert: its apply's upstream write calls",
      target: `= ${r.minimumWrites}`,
      measured: `${fmt(revertApply.upstreamWrites)} writes, ${fmt(revertApply.upstreamCalls)} upstream calls in all, ${fmt(revertApply.wallMs, 0)} ms (${r.revertStatus}; ` +
        `acs CPU ${fmt((revertApply.acsCpuMs ?? Number.NaN) / r.members, 3)} ms and ${fmt(revertApply.statements / r.members, 1)} statements per member)`,
      value: revertApply.upstreamWrites,
      pass: revertApply.upstreamWrites === r.minimumWrites && r.revertStatus === "applied"
    }
  ]
}

export const changesetDetails = (r: ChangesetResults, table: (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) => string): Array<string> => [
  table(
    ["phase", "wall ms", "acs CPU ms (API + worker)", "statements", "upstream calls (writes)", "simulator + bench CPU ms"],
    r.phases.map((p) => [
      p.name,
      fmt(p.wallMs, 0),
      p.acsCpuMs === null ? "n/a" : `${fmt(p.acsCpuMs, 0)} (${fmt(p.apiCpuMs ?? Number.NaN, 0)} + ${fmt(p.workerCpuMs ?? Number.NaN, 0)})`,
      fmt(p.statements),
      `${fmt(p.upstreamCalls)} (${fmt(p.upstreamWrites)})`,
      fmt(p.simulatorCpuMs, 0)
    ])
  ),
  `members: ${JSON.stringify(r.memberCounts)}; revert: ${JSON.stringify(r.revertCounts)}`,
  `the platform's minimum (${r.minimumReplay.calls} bulk-updates of ${PER_AD_GROUP}) sent to the simulator in process: ${fmt(r.minimumReplay.ms, 1)} ms ` +
  `(statuses ${[...new Set(r.minimumReplay.statuses)].join(", ")})`,
  "",
  ...r.phases.flatMap((p) => [
    `${p.name}: upstream ${Object.entries(p.upstreamByPath).map(([path, n]) => `${path} ×${n}`).join(", ") || "none"}`,
    ...(p.name === "apply" || p.name === "revert apply" || p.name === "add"
      ? p.topStatements.map((s) => `  ${fmt(s.calls).padStart(6)}  ${fmt(s.meanMs, 3).padStart(7)} ms  ${s.query}`)
      : [])
  ]),
  ""
]
