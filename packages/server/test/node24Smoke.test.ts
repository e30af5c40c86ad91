/**
 * The built server on Node 24, the current LTS the container runs (these machines run Node 20): the run's
 * build (entries.ts: the same scripts/build.ts as `pnpm start`) started by a Node 24 binary from the npm
 * registry (support/node24.ts), then the flow a user starts with: sign in, propose, apply, revert.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { node24, NODE_MAJOR, versionOf } from "./support/node24.ts"
import { type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"

let p: Pipeline
let node: string

beforeAll(async () => {
  node = node24()
  p = await startPipeline({ seed: 24, node })
})

afterAll(async () => {
  await p?.close()
})

describe(`the built server on Node ${NODE_MAJOR}`, () => {
  it("runs on a Node 24 binary", () => {
    expect(versionOf(node)).toMatch(new RegExp(`^v${NODE_MAJOR}\\.`))
    expect(p.server.process.spawnfile).toBe(node)
  })

  it("signs a person in, applies their proposal, and reverts it", async () => {
    const me = await p.as("person", "GET", "/auth/me")
    expect(me.status, me.text).toBe(200)

    const campaigns = await p.run(p.upstream.campaigns(p.account.upstreamAccountId))
    const campaign = campaigns.find((c) => !c.deleted && c.dailyBudgetMicros !== null)
    if (campaign === undefined) throw new Error("the demo account has no campaign with a daily budget")
    const before = campaign.dailyBudgetMicros!
    const cut = Math.round(before * 0.9 / 10_000) * 10_000

    const proposed = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: cut, reason: "Node 24 smoke" })
    expect(proposed.status, proposed.text).toBe(201)
    const actionId = proposalOf(proposed).actionId
    expect((await p.settle(actionId, ["applied", "failed"])).status).toBe("applied")
    expect((await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaign.campaignId))).dailyBudgetMicros).toBe(cut)

    const reverted = await p.as("person", "POST", `/accounts/${p.account.projectId}/actions/${actionId}/revert`)
    expect(reverted.status, reverted.text).toBe(201)
    const revertId = proposalOf(reverted).actionId
    expect((await p.settle(revertId, ["applied", "failed"])).status).toBe("applied")
    expect((await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaign.campaignId))).dailyBudgetMicros).toBe(before)
    expect((await p.action(actionId)).status).toBe("reverted")
  })
})
