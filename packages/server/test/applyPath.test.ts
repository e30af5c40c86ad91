/**
 * The apply path's reuse and its lease (docs/decisions/pipeline.md): the worker keeps one upstream client per connection (one
 * token for many applies) and makes a new one once the connection is saved again; a long apply keeps its job,
 * since the heartbeat renews the lease while the upstream call runs.
 */
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"

let p: Pipeline
let campaigns: ReadonlyArray<UpstreamCampaign>

// Two workers on one instance with a short lease: the second would rescue a job whose lease ran out.
const LEASE_MS = 1_500

beforeAll(async () => {
  p = await startPipeline({
    seed: 61,
    env: { WORKER_CONCURRENCY: "2", WORKER_LEASE_MS: String(LEASE_MS), WORKER_POLL_MS: "100", UPSTREAM_TIMEOUT_MS: "60000" }
  })
  campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).filter((c) => c.dailyBudgetMicros !== null)
})

afterAll(async () => {
  p.simulator.control.clearFaults()
  await p?.close()
})

/** The current budget 10% lower, in whole cents. */
const cutOf = async (campaign: UpstreamCampaign) => {
  const now = await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaign.campaignId))
  return Math.round(now.dailyBudgetMicros! * 0.9 / 10_000) * 10_000
}

/** Proposes a 10% cut (or `budget`) as the signed-in person (auto-applied) and waits for it to settle. */
const applyCut = async (campaign: UpstreamCampaign, budget?: number) => {
  const answer = await p.propose("budget-change", {
    campaignId: campaign.campaignId,
    newDailyBudgetMicros: budget ?? await cutOf(campaign),
    reason: "trim"
  })
  expect(answer.status, answer.text).toBe(201)
  expect(answer.body).toMatchObject({ mode: "auto_applied" })
  const actionId = proposalOf(answer).actionId
  const settled = await p.settle(actionId, ["applied", "failed", "proposed"])
  expect(settled.status, JSON.stringify(settled.failure)).toBe("applied")
  return actionId
}

const tokenRequests = () => p.simulator.control.listCalls({ method: "POST", path: /token$/ }).length

describe("the upstream client of an apply", () => {
  it("is kept while the connection stays the same, and made again once the connection is saved", async () => {
    await applyCut(campaigns[0]!)
    const tokens = tokenRequests()
    await applyCut(campaigns[1]!)
    await applyCut(campaigns[0]!)
    expect(tokenRequests(), "later applies reuse the client and its token").toBe(tokens)

    // The admin moves the connection to v5: the next apply speaks v5 with a client of its own.
    const saved = await p.as("key", "PUT", "/connection", { provider: "simulator", apiVersion: "v5" })
    expect(saved.status, saved.text).toBe(200)
    const since = p.simulator.control.listCalls().at(-1)?.seq ?? 0
    const tokensBefore = tokenRequests()
    const campaign = campaigns[1]!
    await applyCut(campaign)
    expect(tokenRequests(), "the new client fetched its own token").toBeGreaterThan(tokensBefore)
    const writes = p.simulator.control.listCalls({ method: "PUT", path: /\/campaigns\/[^/]+$/, since })
    expect(writes.map((call) => call.path), "the apply wrote through v5").toEqual([expect.stringMatching(/^\/api\/v5\//)])
  })
})

describe("credentials refused to a kept client", () => {
  it("fail the apply, mark the connection broken and drop the client; the next apply heals it", async () => {
    const campaign = campaigns[0]!
    await applyCut(campaign)
    const budget = await cutOf(campaign)
    // The platform rejects the token the kept client holds, and then refuses the credentials a new one needs.
    p.simulator.control.addFaults([
      { kind: "status", status: 401, method: "GET", path: `/campaigns/${campaign.campaignId}$`, times: 1 },
      { kind: "tokenRefused", times: "always" }
    ])
    try {
      const answer = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: budget, reason: "trim" })
      expect(answer.status, answer.text).toBe(201)
      const failed = await p.settle(proposalOf(answer).actionId, ["applied", "failed", "proposed"])
      expect(failed.status).toBe("failed")
      expect(failed.failure?.message).toMatch(/credentials/)
      expect((await p.as("key", "GET", "/connection")).body).toMatchObject({ connected: false, status: "error" })
    } finally {
      p.simulator.control.clearFaults()
    }
    await applyCut(campaigns[1]!)
    expect((await p.as("key", "GET", "/connection")).body).toMatchObject({ connected: true, status: "ok" })
  })
})

describe("a long apply", () => {
  it("keeps its lease while the upstream answers slowly: no other worker takes the job, the upstream is written once", async () => {
    const campaign = campaigns[2]!
    const budget = await cutOf(campaign)
    const since = p.simulator.control.listCalls().at(-1)?.seq ?? 0
    // The apply's read waits more than twice the lease.
    p.simulator.control.addFault({ kind: "timeout", delayMs: 3 * LEASE_MS, method: "GET", path: `/campaigns/${campaign.campaignId}$`, times: 1 })
    const actionId = await applyCut(campaign, budget)
    const reads = p.simulator.control.listCalls({ method: "GET", path: new RegExp(`/campaigns/${campaign.campaignId}$`), since })
    const writes = p.simulator.control.listCalls({ method: "PUT", path: new RegExp(`/campaigns/${campaign.campaignId}$`), since })
    expect(reads.length, "only the worker holding the job read the campaign").toBe(1)
    expect(writes.map((call) => call.status)).toEqual([200])
    const steps = await p.sql<{ status: string }>("SELECT status FROM action_steps WHERE action_id = $1 AND phase = 'apply'", [actionId])
    expect(steps.map((row) => row.status)).toEqual(["succeeded"])
    expect(await p.sql("SELECT 1 FROM jobs WHERE action_id = $1", [actionId]), "the job ended with the apply").toEqual([])
    expect(p.server.logs()).not.toMatch(/lease lost/)
  })
})
