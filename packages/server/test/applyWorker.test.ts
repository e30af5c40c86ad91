/**
 * The apply worker under faults, demotion and a crash: the proposing instance runs no worker, so each test
 * controls when a second instance (the "worker") picks the action up. Upstream writes are counted in the
 * simulator's call log: an action is applied once, and the upstream changed once.
 */
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type Pipeline, proposalOf, startPipeline, tolerateUpstreamFaults } from "./support/pipeline.ts"
import type { RunningServer } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

let p: Pipeline
let worker: RunningServer | undefined
let campaigns: ReadonlyArray<UpstreamCampaign>
let next = 0

const WORKER_ENV = { WORKER_CONCURRENCY: "2", WORKER_LEASE_MS: "1500", APPLY_MAX_ATTEMPTS: "5" }

/** The next campaign, as the upstream holds it now (the account has fewer campaigns than this file has tests). */
const freshCampaign = async () => {
  const campaign = campaigns[next++ % campaigns.length]!
  return p.run(p.upstream.campaign(p.account.upstreamAccountId, campaign.campaignId))
}

const startWorker = async () => {
  worker ??= await p.startTwin(WORKER_ENV)
}

const stopWorker = async (signal?: NodeJS.Signals) => {
  await worker?.stop(signal)
  worker = undefined
}

/** Proposes a 10% cut (auto-eligible for a person); the action id. */
const proposeCut = async (campaign: UpstreamCampaign) => {
  const answer = await p.propose("budget-change", {
    campaignId: campaign.campaignId,
    newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.9),
    reason: "trim"
  })
  expect(answer.status, answer.text).toBe(201)
  expect(answer.body).toMatchObject({ mode: "auto_applied", status: "approved" })
  return proposalOf(answer).actionId
}

let since = 0
/** PUTs on the campaign since the current test began. */
const campaignWrites = (campaignId: string) =>
  p.simulator.control.listCalls({ method: "PUT", path: new RegExp(`/campaigns/${campaignId}$`), since })

const upstreamBudget = async (campaignId: string) =>
  (await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaignId))).dailyBudgetMicros

beforeAll(async () => {
  // The proposing instance applies nothing; a worker instance is started when a test wants the apply.
  p = await startPipeline({ seed: 33, env: { WORKER_CONCURRENCY: "0", WORKER_LEASE_MS: "1500" } })
  await tolerateUpstreamFaults(p)
  campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).filter((c) => !c.deleted && c.dailyBudgetMicros !== null)
})

beforeEach(() => {
  since = p.simulator.control.listCalls().at(-1)?.seq ?? 0
})

afterAll(async () => {
  await stopWorker()
  await p?.close()
})

describe("demotion at apply", () => {
  it("demotes an auto-applied action to proposed when the kill switch was turned off after the proposal", async () => {
    const campaign = await freshCampaign()
    const actionId = await proposeCut(campaign)
    expect((await p.as("key", "PUT", "/settings", { platformAutoApply: false })).status).toBe(200)
    await startWorker()
    const demoted = await p.settle(actionId)
    expect(demoted.status).toBe("proposed")
    expect(demoted.mode).toBe("auto_applied")
    expect(demoted.policyReasons.at(-1)).toMatch(/kill switch platformAutoApply was turned off/)
    expect(campaignWrites(campaign.campaignId)).toHaveLength(0)
    await p.as("key", "PUT", "/settings", { platformAutoApply: true })
    await stopWorker()
  })

  it("demotes, naming the drift, when the entity changed upstream between proposal and apply", async () => {
    const campaign = await freshCampaign()
    const actionId = await proposeCut(campaign)
    const outside = campaign.dailyBudgetMicros! + 1_230_000
    await p.run(p.upstream.updateCampaign(p.account.upstreamAccountId, campaign.campaignId, { dailyBudgetMicros: outside }))
    await startWorker()
    const demoted = await p.settle(actionId)
    expect(demoted.status).toBe("proposed")
    expect(demoted.policyReasons.at(-1)).toMatch(/^drift: the daily budget of campaign .* changed outside acs/)
    expect(await upstreamBudget(campaign.campaignId), "someone else's change is kept").toBe(outside)

    // A person who approves it after reading the drift chooses to write over the outside change: it applies,
    // with a warning saying what it overwrote.
    await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)
    const applied = await p.settle(actionId, ["applied", "failed"])
    expect(applied.status).toBe("applied")
    expect(applied.warnings.join(" ")).toMatch(/overwrote a change made outside acs/)
    expect(await upstreamBudget(campaign.campaignId)).toBe(Math.round(campaign.dailyBudgetMicros! * 0.9))
  })
})

describe("upstream faults during apply", () => {
  it("retries a 429 and a 503 and then applies once", async () => {
    await startWorker()
    for (const status of [429, 503]) {
      const campaign = await freshCampaign()
      p.simulator.control.addFault({
        kind: "status",
        status,
        retryAfterSeconds: 0,
        method: "PUT",
        path: `/campaigns/${campaign.campaignId}$`,
        times: 2
      })
      const actionId = await proposeCut(campaign)
      const applied = await p.settle(actionId, ["applied", "failed"])
      expect(applied.status, `${status}: ${JSON.stringify(applied.failure)}`).toBe("applied")
      const writes = campaignWrites(campaign.campaignId)
      expect(writes.filter((call) => call.status === status)).toHaveLength(2)
      expect(writes.filter((call) => call.status === 200), "the upstream changed once").toHaveLength(1)
      expect(await upstreamBudget(campaign.campaignId)).toBe(Math.round(campaign.dailyBudgetMicros! * 0.9))
    }
  })

  it("fails on a 500 with the upstream's request id, and never retries it", async () => {
    await startWorker()
    const campaign = await freshCampaign()
    p.simulator.control.addFault({ kind: "status", status: 500, method: "PUT", path: `/campaigns/${campaign.campaignId}$` })
    const actionId = await proposeCut(campaign)
    const failed = await p.settle(actionId, ["applied", "failed"])
    expect(failed.status).toBe("failed")
    const writes = campaignWrites(campaign.campaignId)
    expect(writes).toHaveLength(1)
    expect(failed.failure).toMatchObject({ upstreamRequestId: writes[0]!.requestId })
    expect(failed.failure!.message).toMatch(/upstream/i)
    expect(await upstreamBudget(campaign.campaignId)).toBe(campaign.dailyBudgetMicros)
  })

  it("refuses a budget above three times the warehouse value at apply (docs/contract.md 8: the hard cap)", async () => {
    // Over the cap at proposal is refused there (422); here the warehouse value drops after the approval (as
    // a sync that saw the budget lowered would), so only the apply's re-check can catch it.
    await stopWorker()
    const campaign = await freshCampaign()
    const answer = await p.propose("budget-change", {
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: campaign.dailyBudgetMicros! * 3, // exactly the cap
      reason: "big raise"
    })
    expect(answer.body).toMatchObject({ mode: "queued" })
    const actionId = proposalOf(answer).actionId
    // A raise past 25 % needs two people (docs/contract.md 3.3): the second approver's key, then the bootstrap key.
    for (const approver of ["approver", "key"] as const) {
      expect((await p.as(approver, "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)).status).toBe(200)
    }
    expect((await p.action(actionId)).status).toBe("approved")
    const lowered = "UPDATE campaigns SET daily_budget_micros = $3 WHERE project_id = $1 AND campaign_id = $2"
    await p.sql(lowered, [p.account.projectId, campaign.campaignId, campaign.dailyBudgetMicros! - 10_000])
    await startWorker()
    const failed = await p.settle(actionId, ["applied", "failed"])
    await p.sql(lowered, [p.account.projectId, campaign.campaignId, campaign.dailyBudgetMicros])
    expect(failed.status).toBe("failed")
    expect(failed.failure!.message).toMatch(/hard cap/)
    expect(campaignWrites(campaign.campaignId)).toHaveLength(0)
  })
})

describe("a crash mid-apply", () => {
  for (const processed of [true, false]) {
    it(`reconciles by reading the upstream after SIGKILL (the write ${processed ? "went" : "did not go"} through)`, async () => {
      await stopWorker()
      const campaign = await freshCampaign()
      const target = Math.round(campaign.dailyBudgetMicros! * 0.9)
      // The upstream holds its answer long enough for the worker to be killed while waiting for it.
      p.simulator.control.addFault({
        kind: "timeout",
        delayMs: 4_000,
        process: processed,
        method: "PUT",
        path: `/campaigns/${campaign.campaignId}$`
      })
      const actionId = await proposeCut(campaign)
      await startWorker()
      await waitFor(
        "the apply step to start",
        () => p.sql("SELECT 1 FROM action_steps WHERE action_id = $1 AND status = 'started'", [actionId]),
        (rows) => rows.length > 0,
        { intervalMs: 25 }
      )
      await new Promise((resolve) => setTimeout(resolve, 300))
      await stopWorker("SIGKILL")
      const killed = await p.action(actionId)
      expect(killed.status, JSON.stringify(killed.policyReasons)).toBe("applying")

      await startWorker()
      const applied = await p.settle(actionId, ["applied", "failed"])
      expect(applied.status).toBe("applied")
      expect(await upstreamBudget(campaign.campaignId)).toBe(target)
      const writes = campaignWrites(campaign.campaignId)
      expect(writes.filter((call) => call.status === 200), "the upstream changed once").toHaveLength(1)
      const budgets = await p.sql<{ status: string }>(
        "SELECT status FROM action_steps WHERE action_id = $1 AND phase = 'apply'",
        [actionId]
      )
      expect(budgets.map((row) => row.status)).toEqual(["succeeded"])
    })
  }
})
