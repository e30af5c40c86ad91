/**
 * `acs worker` from the built command: beside an API process started with WORKER_CONCURRENCY=0 (which only
 * enqueues), it applies the queued action, and SIGTERM stops it with exit code 0.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { nodeArgs, repoRoot } from "../../server/test/support/entries.ts"
import { type Pipeline, proposalOf, startPipeline } from "../../server/test/support/pipeline.ts"
import { stopProcess } from "../../server/test/support/server.ts"

let p: Pipeline
let worker: ChildProcess | undefined
let logs = ""

beforeAll(async () => {
  p = await startPipeline({ seed: 43, env: { WORKER_CONCURRENCY: "0" } })
})

afterAll(async () => {
  if (worker !== undefined) await stopProcess(worker)
  await p?.close()
})

describe("acs worker", () => {
  it("applies what the API process only enqueued, and stops on SIGTERM with exit code 0", async () => {
    const campaign = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId)))
      .find((c) => !c.deleted && c.dailyBudgetMicros !== null)!
    const target = Math.round(campaign.dailyBudgetMicros! * 0.9 / 10_000) * 10_000
    const answer = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: target, reason: "trim" })
    expect(answer.status, answer.text).toBe(201)
    const actionId = proposalOf(answer).actionId

    worker = spawn(process.execPath, [...nodeArgs("cli"), "worker"], {
      cwd: repoRoot,
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: process.env["HOME"] ?? "",
        ACS_SECRETS_KEY: Buffer.alloc(32, 7).toString("base64"),
        DATABASE_URL: p.database,
        SIMULATOR_URL: p.simulator.url,
        WORKER_POLL_MS: "200"
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    worker.stdout?.on("data", (chunk: Buffer) => (logs += chunk.toString()))
    worker.stderr?.on("data", (chunk: Buffer) => (logs += chunk.toString()))

    expect((await p.settle(actionId, ["applied", "failed"])).status, logs).toBe("applied")
    expect((await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaign.campaignId))).dailyBudgetMicros).toBe(target)
    expect(await stopProcess(worker), logs).toBe(0)
  })
})
