/**
 * `pnpm bench --only harvest`: one search-term harvest of 500 terms over 20 ad groups (each term from one ad group
 * into the next), proposed by a write key, approved by the signed-in admin, applied by `acs worker`, then reverted
 * by the admin. Counted at the simulator (its call log): the apply's upstream writes against the platform's minimum —
 * one bulk create per kind per 1,000 rows, v1's bulk create spanning ad groups (2 for 500 terms) — and the revert's,
 * where v1 has no bulk delete and forces one DELETE per keyword and per negative (1,000). Each phase's wall time and
 * acs's CPU (API + worker) are reported beside.
 *
 * Its own small world (changesets.ts `startWorld`): a throwaway database, a simulator account of 4 campaigns × 5 ad
 * groups × 20 keywords, acs's API with WORKER_CONCURRENCY=0 and `acs worker` beside it.
 */
import { startWorld, type WorldShape } from "./changesets.ts"
import type { BenchCluster } from "./cluster.ts"
import { processCpuSeconds } from "./cpu.ts"
import { record, string } from "./json.ts"
import { type HttpClient, makeHttpClient } from "./measure.ts"
import { fmt, type TargetRow } from "./report.ts"

const SHAPE: WorldShape = {
  part: "harvest",
  database: "acs_bench_harvest",
  bootstrapKey: "acs_bench_harvest_key_0123456789abcdefghijklmnopq",
  campaigns: 4,
  adGroupsPerCampaign: 5,
  keywordsPerAdGroup: 20
}
const AD_GROUPS = SHAPE.campaigns * SHAPE.adGroupsPerCampaign
const TERMS = 500
/** The platform's most rows in one bulk create (v1's spans ad groups). */
const PLATFORM_BULK_ROWS = 1000
/** Keywords, then negatives: one spanning bulk create each per 1,000 rows. */
const MINIMUM_APPLY_WRITES = 2 * Math.ceil(TERMS / PLATFORM_BULK_ROWS)
/** v1 has no bulk delete: one DELETE per keyword and per negative. */
const MINIMUM_REVERT_WRITES = 2 * TERMS

type PhaseName = "propose" | "approve" | "apply" | "revert request" | "revert apply"

interface Phase {
  readonly name: PhaseName
  readonly wallMs: number
  readonly acsCpuMs: number | null
  readonly upstreamCalls: number
  readonly upstreamWrites: number
  readonly upstreamByPath: Record<string, number>
}

export interface HarvestResults {
  readonly terms: number
  readonly adGroups: number
  readonly minimumApplyWrites: number
  readonly minimumRevertWrites: number
  readonly phases: ReadonlyArray<Phase>
  readonly status: string
  readonly revertStatus: string
  readonly warnings: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const normalPath = (method: string, path: string) => `${method} ${path.replace(/\/\d+(?=\/|$)/g, "/:id")}`

/** A platform write: not a read (v1 reads with POST …/find and …/query), not the token endpoint. */
const isWrite = (call: { readonly method: string; readonly path: string }) =>
  call.path.startsWith("/v1/") && call.method !== "GET" && !/\/(find|query)$/.test(call.path)

export const benchHarvest = async (cluster: BenchCluster, log: (message: string) => void): Promise<HarvestResults> => {
  const world = await startWorld(cluster, log, SHAPE)
  const key: HttpClient = makeHttpClient({ authorization: `Bearer ${world.writeKey}` })
  const person: HttpClient = makeHttpClient({ cookie: world.cookie })
  const actions = `${world.acs.api}/accounts/${world.projectId}/actions`
  try {
    const adGroups = (await world.pool.query<{ ad_group_id: string }>(
      "SELECT ad_group_id FROM ad_groups WHERE project_id = $1 ORDER BY ad_group_id LIMIT $2",
      [world.projectId, AD_GROUPS]
    )).rows.map((row) => row.ad_group_id)
    if (adGroups.length < AD_GROUPS) throw new Error(`harvest: ${adGroups.length} ad groups, not ${AD_GROUPS}`)
    // Each term from one ad group into the next: 25 terms leave and 25 arrive in each of the 20.
    const terms = Array.from({ length: TERMS }, (_, i) => ({
      text: `bench harvest term ${i}`,
      sourceAdGroupId: adGroups[i % AD_GROUPS]!,
      targetAdGroupId: adGroups[(i + 1) % AD_GROUPS]!
    }))

    const cpuOf = (pid: number | undefined) => {
      const seconds = processCpuSeconds(pid)
      return seconds === null ? null : seconds * 1000
    }
    const phases: Array<Phase> = []
    const measure = async <A>(name: PhaseName, run: () => Promise<A>): Promise<A> => {
      const callsBefore = world.simulator.control.listCalls().at(-1)?.seq ?? 0
      const api = cpuOf(world.pids.api)
      const worker = cpuOf(world.pids.worker)
      const started = performance.now()
      const result = await run()
      const wallMs = performance.now() - started
      const apiAfter = cpuOf(world.pids.api)
      const workerAfter = cpuOf(world.pids.worker)
      const calls = world.simulator.control.listCalls({ since: callsBefore })
      const byPath: Record<string, number> = {}
      for (const call of calls) byPath[normalPath(call.method, call.path)] = (byPath[normalPath(call.method, call.path)] ?? 0) + 1
      const phase: Phase = {
        name,
        wallMs,
        acsCpuMs: api === null || worker === null || apiAfter === null || workerAfter === null ? null : apiAfter - api + workerAfter - worker,
        upstreamCalls: calls.length,
        upstreamWrites: calls.filter(isWrite).length,
        upstreamByPath: byPath
      }
      phases.push(phase)
      log(`harvest: ${name}: ${fmt(wallMs, 0)} ms, ${phase.upstreamWrites} upstream writes of ${phase.upstreamCalls} calls`)
      return result
    }

    /** Polls the action's row (as `bench`) until the worker has ended its apply. */
    const settled = async (actionId: string) => {
      const deadline = Date.now() + 600_000
      for (;;) {
        const row = (await world.pool.query<{ status: string; warnings: number }>({
          name: "bench_harvest_poll",
          text: "SELECT status, coalesce(jsonb_array_length(warnings), 0)::int AS warnings FROM actions WHERE action_id = $1",
          values: [actionId]
        })).rows[0]
        if (row !== undefined && !["proposed", "approved", "applying"].includes(row.status)) return row
        if (Date.now() > deadline) throw new Error(`harvest: ${actionId} still ${row?.status} after 10 minutes\n${world.acs.logs().slice(-3000)}`)
        await sleep(20)
      }
    }

    const proposed = await measure("propose", async () =>
      record(await key.sendJson("POST", `${actions}/harvest-search-terms`, { terms, negateAtSource: true, reason: "bench: harvest 500 terms" }), "proposal"))
    const actionId = string(proposed, "actionId")
    await measure("approve", async () => record(await person.sendJson("POST", `${world.acs.api}/accounts/${world.projectId}/approvals/${actionId}/approve`, {}), "approve"))
    const applied = await measure("apply", () => settled(actionId))
    const reverted = await measure("revert request", async () => record(await person.sendJson("POST", `${actions}/${actionId}/revert`, {}), "revert"))
    const revertApplied = await measure("revert apply", () => settled(string(reverted, "actionId")))
    return {
      terms: TERMS,
      adGroups: AD_GROUPS,
      minimumApplyWrites: MINIMUM_APPLY_WRITES,
      minimumRevertWrites: MINIMUM_REVERT_WRITES,
      phases,
      status: applied.status,
      revertStatus: revertApplied.status,
      warnings: applied.warnings
    }
  } finally {
    key.close()
    person.close()
    await world.stop()
  }
}

const phaseOf = (r: HarvestResults, name: PhaseName): Phase => {
  const phase = r.phases.find((p) => p.name === name)
  if (phase === undefined) throw new Error(`harvest: no ${name} phase`)
  return phase
}

/** The phase's writes by method and path. */
const paths = (phase: Phase) =>
  Object.entries(phase.upstreamByPath)
    .filter(([methodPath]) => {
      const [method = "", path = ""] = methodPath.split(" ")
      return isWrite({ method, path })
    })
    .map(([path, n]) => `${path} ×${n}`).join(", ")

export const harvestTargets = (r: HarvestResults): Array<TargetRow> => {
  const apply = phaseOf(r, "apply")
  const revert = phaseOf(r, "revert apply")
  return [
    {
      name: `apply: upstream write calls, ${r.terms} terms over ${r.adGroups} ad groups`,
      target: `= ${r.minimumApplyWrites} (one spanning bulk create per kind per ${fmt(PLATFORM_BULK_ROWS)} rows)`,
      measured: `${fmt(apply.upstreamWrites)} (${paths(apply)}; ${r.status}, ${r.warnings} warnings; ${fmt(apply.wallMs, 0)} ms, acs CPU ${
        fmt(apply.acsCpuMs ?? Number.NaN, 0)
      } ms)`,
      value: apply.upstreamWrites,
      pass: apply.upstreamWrites === r.minimumApplyWrites && r.status === "applied" && r.warnings === 0
    },
    {
      name: "revert: upstream write calls (v1 has no bulk delete)",
      target: `= ${r.minimumRevertWrites} (one DELETE per keyword and per negative)`,
      measured: `${fmt(revert.upstreamWrites)} (${paths(revert)}; ${r.revertStatus}; ${fmt(revert.wallMs, 0)} ms, acs CPU ${fmt(revert.acsCpuMs ?? Number.NaN, 0)} ms)`,
      value: revert.upstreamWrites,
      pass: revert.upstreamWrites === r.minimumRevertWrites && r.revertStatus === "applied"
    }
  ]
}

export const harvestDetails = (r: HarvestResults, table: (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) => string): Array<string> => [
  table(
    ["phase", "wall ms", "acs CPU ms (API + worker)", "upstream calls (writes)"],
    r.phases.map((p) => [p.name, fmt(p.wallMs, 0), p.acsCpuMs === null ? "n/a" : fmt(p.acsCpuMs, 0), `${fmt(p.upstreamCalls)} (${fmt(p.upstreamWrites)})`])
  ),
  ...r.phases.map((p) => `${p.name}: upstream ${Object.entries(p.upstreamByPath).map(([path, n]) => `${path} ×${n}`).join(", ") || "none"}`),
  ""
]
