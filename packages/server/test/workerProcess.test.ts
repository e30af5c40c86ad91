/**
 * The background work in a process of its own (WorkerMain.ts, `acs worker`): the API process runs with
 * WORKER_CONCURRENCY=0 and WEBHOOK_CONCURRENCY=0 and only enqueues; a separate worker process, with no HTTP
 * server, applies and delivers webhooks.
 */
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { type ChildProcess, spawn } from "node:child_process"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import { type Receiver, startReceiver } from "./support/receiver.ts"
import { repoRoot, stopProcess } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

let p: Pipeline
let worker: ChildProcess | undefined
let workerLogs = ""
let receiver: Receiver

const BACKGROUND_OFF = { WORKER_CONCURRENCY: "0", WEBHOOK_CONCURRENCY: "0" }

/** The same environment as the API processes of the pipeline (test/support/server.ts), for the worker. */
const workerEnv = () => ({
  PATH: process.env["PATH"] ?? "",
  HOME: process.env["HOME"] ?? "",
  LOG_LEVEL: "info",
  ACS_SECRETS_KEY: Buffer.alloc(32, 7).toString("base64"),
  DATABASE_URL: p.database,
  SIMULATOR_URL: p.simulator.url,
  WORKER_POLL_MS: "200",
  EVENTS_POLL_MS: "200",
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true"
})

const startWorker = () => {
  const child = spawn(process.execPath, ["--import", "tsx", Path.join(repoRoot, "packages/server/src/bin/worker.ts")], {
    cwd: repoRoot,
    env: workerEnv(),
    stdio: ["ignore", "pipe", "pipe"]
  })
  child.stdout?.on("data", (chunk: Buffer) => (workerLogs += chunk.toString()))
  child.stderr?.on("data", (chunk: Buffer) => (workerLogs += chunk.toString()))
  return child
}

beforeAll(async () => {
  receiver = await startReceiver()
  p = await startPipeline({ seed: 41, env: { ...BACKGROUND_OFF, WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" } })
})

afterAll(async () => {
  if (worker !== undefined) await stopProcess(worker)
  await p?.close()
  await receiver?.close()
})

describe("a worker process beside an API process with WORKER_CONCURRENCY=0 and WEBHOOK_CONCURRENCY=0", () => {
  it("leaves the API's auto-applied proposal and its webhook delivery waiting until the worker process does both", async () => {
    const webhook = await p.as("key", "POST", "/webhooks", { url: receiver.url, events: ["action.applied"] })
    expect(webhook.status, webhook.text).toBe(201)

    const campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId)))
      .filter((c: UpstreamCampaign) => !c.deleted && c.dailyBudgetMicros !== null)
    const campaign = campaigns[0]!
    const target = Math.round(campaign.dailyBudgetMicros! * 0.95 / 10_000) * 10_000
    const answer = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: target, reason: "trim" })
    expect(answer.status, answer.text).toBe(201)
    expect(answer.body).toMatchObject({ mode: "auto_applied", status: "approved" })
    const actionId = proposalOf(answer).actionId

    // Enqueued by the API, claimed by nobody: the API process runs no apply worker.
    const [job] = await p.sql<{ attempts: number; locked_by: string | null }>(
      "SELECT attempts, locked_by FROM jobs WHERE action_id = $1",
      [actionId]
    )
    expect(job).toEqual({ attempts: 0, locked_by: null })

    worker = startWorker()
    const applied = await p.settle(actionId, ["applied", "failed"])
    expect(applied.status, workerLogs).toBe("applied")
    expect((await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaign.campaignId))).dailyBudgetMicros).toBe(target)
    expect(workerLogs).toContain("apply workers started")

    // The applied event is delivered by the worker process: the API process delivers none.
    const deliveries = await waitFor(
      "the action.applied event at the receiver",
      () => Promise.resolve(receiver.received.filter((r) => (r.body["data"] as { action?: { actionId?: string } }).action?.actionId === actionId)),
      (got) => got.length > 0,
      { show: () => workerLogs.slice(-2000) }
    )
    expect(deliveries[0]!.body["type"]).toBe("action.applied")

    // The lookup caches' listening connection is the API's alone: the worker looks nothing up, and a listener
    // of its own would be woken by every NOTIFY in the database.
    const listeners = () =>
      p.sql<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'acs invalidation'")
        .then((rows) => rows[0]!.n)
    expect(await waitFor("one lookup-cache listener (the API's)", listeners, (n) => n === 1)).toBe(1)

    // SIGTERM: the worker process ends cleanly.
    expect(await stopProcess(worker)).toBe(0)
    worker = undefined
  })

  it("refuses to start without PostgreSQL, saying why", async () => {
    const { DATABASE_URL: _, ...withoutDatabase } = workerEnv()
    let output = ""
    const child = spawn(process.execPath, ["--import", "tsx", Path.join(repoRoot, "packages/server/src/bin/worker.ts")], {
      cwd: repoRoot,
      env: withoutDatabase,
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()))
    const code = await waitFor("the worker to exit", async () => child.exitCode, (exit) => exit !== null)
    expect(code).not.toBe(0)
    expect(output).toContain("acs worker needs DATABASE_URL")
  })
})
