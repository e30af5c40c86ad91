/**
 * The apply queue is fenced by `locked_by`: a worker whose job was rescued by another can no longer renew,
 * complete or give back the job, and a worker paused past its lease (a GC pause, a frozen VM: here SIGSTOP)
 * stops before its next upstream write when it wakes, so each step is written upstream exactly once.
 */
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { databaseLayer } from "../src/db/Database.ts"
import { Jobs } from "../src/queue/Jobs.ts"
import { claimOrNextDue } from "../src/worker/ClaimStatement.ts"
import { type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import type { RunningServer } from "./support/server.ts"
import { WAIT_MS } from "./support/wait.ts"

let p: Pipeline
let jobsRuntime: ManagedRuntime.ManagedRuntime<Jobs | SqlClient.SqlClient, never>
let campaigns: ReadonlyArray<UpstreamCampaign>
const twins: Array<RunningServer> = []

const WORKER_ENV = { WORKER_CONCURRENCY: "1", WORKER_LEASE_MS: "1500", WORKER_POLL_MS: "100" }

/** Runs one call of the Jobs service against the pipeline's database. */
const jobs = <A>(f: (service: Jobs) => Effect.Effect<A>) => jobsRuntime.runPromise(Effect.flatMap(Jobs, f))
/** A worker's claim in the pipeline's account. */
const claim = async (workerId: string) =>
  (await jobsRuntime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => claimOrNextDue(sql, workerId, p.account.projectId, 60_000)))).job

/** Polls `condition` until it holds; fails after `timeoutMs` with `what`. */
const until = async (what: string, condition: () => boolean | Promise<boolean>, timeoutMs = WAIT_MS) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await condition()) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`timed out waiting until ${what}`)
}

const startWorker = async (env: Record<string, string> = {}) => {
  const worker = await p.startTwin({ ...WORKER_ENV, ...env })
  twins.push(worker)
  return worker
}

/** The budget 10% lower, in whole cents (the USD account refuses fractions of a cent). */
const tenPercentLess = (campaign: UpstreamCampaign) => Math.round(campaign.dailyBudgetMicros! * 0.9 / 10_000) * 10_000

/** Proposes a 10% cut (auto-eligible for a person); the action id. */
const proposeCut = async (campaign: UpstreamCampaign) => {
  const answer = await p.propose("budget-change", {
    campaignId: campaign.campaignId,
    newDailyBudgetMicros: tenPercentLess(campaign),
    reason: "trim"
  })
  expect(answer.status, answer.text).toBe(201)
  expect(answer.body).toMatchObject({ mode: "auto_applied", status: "approved" })
  return proposalOf(answer).actionId
}

const jobOf = async (actionId: string) =>
  (await p.sql<{ jobId: string; lockedBy: string | null; lastError: string | null }>(
    "SELECT job_id AS \"jobId\", locked_by AS \"lockedBy\", last_error AS \"lastError\" FROM jobs WHERE action_id = $1",
    [actionId]
  ))[0]

beforeAll(async () => {
  // The proposing instance applies nothing: each test decides which worker instances run.
  p = await startPipeline({ seed: 55, env: { WORKER_CONCURRENCY: "0" } })
  campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).filter((c) => c.dailyBudgetMicros !== null)
  jobsRuntime = ManagedRuntime.make(Jobs.Default.pipe(
    Layer.provideMerge(databaseLayer("queue fencing test")),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", p.database]])))),
    Layer.orDie
  ))
})

afterAll(async () => {
  for (const twin of twins) {
    // A test that failed mid-pause must not leave a stopped process that never hears SIGTERM.
    if (twin.process.pid !== undefined && twin.process.exitCode === null) twin.process.kill("SIGCONT")
    await twin.stop()
  }
  await jobsRuntime?.dispose()
  await p?.close()
})

describe("Jobs: complete and retryLater are fenced by locked_by", () => {
  it("ignores a worker whose job was rescued by another: no renewal, no completion, no give-back", async () => {
    const actionId = await proposeCut(campaigns[0]!)
    const first = await claim("worker-1")
    expect(first?.actionId).toBe(actionId)
    const job = first!
    const jobId = job.jobId

    // worker-1 stalls past its lease and worker-2 rescues the job.
    await p.sql("UPDATE jobs SET lease_until = clock_timestamp() - interval '1 second' WHERE job_id = $1", [jobId])
    const second = await claim("worker-2")
    expect(second?.jobId).toBe(jobId)

    expect(await jobs((j) => j.heartbeat(job, "worker-1", 60_000))).toBe(false)
    expect(await jobs((j) => j.complete(job, "worker-1"))).toBe(false)
    expect(await jobOf(actionId), "the job is still worker-2's").toMatchObject({ jobId, lockedBy: "worker-2" })
    expect(await jobs((j) => j.retryLater(job, "worker-1", 0, "stale worker"))).toBe(false)
    expect(await jobOf(actionId), "worker-1 could not give it back").toMatchObject({ lockedBy: "worker-2", lastError: null })

    // The holder can: it gives the job back, after which it no longer holds it either.
    expect(await jobs((j) => j.retryLater(job, "worker-2", 0, "try again"))).toBe(true)
    expect(await jobOf(actionId)).toMatchObject({ lockedBy: null, lastError: "try again" })
    expect(await jobs((j) => j.complete(job, "worker-2"))).toBe(false)

    const third = await claim("worker-3")
    expect(third?.jobId).toBe(jobId)
    expect(await jobs((j) => j.complete(job, "worker-3"))).toBe(true)
    expect(await jobOf(actionId)).toBeUndefined()
  })
})

describe("a worker paused past its lease", () => {
  it("stops before its upstream write when it wakes; the rescuer writes once and the worker lives on", async () => {
    const campaign = campaigns[1]!
    const target = tenPercentLess(campaign)
    const since = p.simulator.control.listCalls().at(-1)?.seq ?? 0
    // The upstream holds worker A's drift read (answered with the state before any write): A has read, not written.
    const hold = p.simulator.control.addFault({ kind: "timeout", delayMs: 5_000, method: "GET", path: `/campaigns/${campaign.campaignId}$` })
    // A's own client must not give up on the held read while A is stopped: the pause is what this test is about.
    const a = await startWorker({ UPSTREAM_TIMEOUT_MS: "600000" })
    const actionId = await proposeCut(campaign)
    await until("worker A is waiting on its read", () => p.simulator.control.listFaults().find((f) => f.id === hold)?.fired === 1)
    const pid = a.process.pid!
    process.kill(pid, "SIGSTOP")
    try {
      await until("A's lease ran out", async () =>
        (await p.sql("SELECT 1 FROM jobs WHERE action_id = $1 AND lease_until < clock_timestamp()", [actionId])).length > 0)
      const b = await startWorker()
      const applied = await p.settle(actionId, ["applied", "failed"])
      expect(applied.status, JSON.stringify(applied.failure)).toBe("applied")
      await until("B completed the job", async () => (await jobOf(actionId)) === undefined)
      await b.stop()
    } finally {
      process.kill(pid, "SIGCONT")
    }

    // A wakes with its stale read in hand; its write must not happen.
    await until("A noticed the lost lease", () => /lease lost/.test(a.logs()))
    const writes = p.simulator.control.listCalls({ method: "PUT", path: new RegExp(`/campaigns/${campaign.campaignId}$`), since })
    expect(writes.map((call) => call.status), "the upstream was written once").toEqual([200])
    expect((await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaign.campaignId))).dailyBudgetMicros).toBe(target)
    const settled = await p.action(actionId)
    expect(settled.status).toBe("applied")
    const steps = await p.sql<{ status: string }>("SELECT status FROM action_steps WHERE action_id = $1 AND phase = 'apply'", [actionId])
    expect(steps.map((row) => row.status), "A left B's record alone").toEqual(["succeeded"])
    expect(await jobOf(actionId)).toBeUndefined()

    // A's worker carries on with the next job.
    const next = campaigns[2]!
    const nextId = await proposeCut(next)
    expect((await p.settle(nextId, ["applied", "failed"])).status).toBe("applied")
  })
})
