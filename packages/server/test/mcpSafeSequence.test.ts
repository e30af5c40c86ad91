/**
 * An agent connected over MCP with a write key follows the safe automation sequence (docs/contract.md 4) end to
 * end — freshness, policy, plan, a proposal with an idempotency key, mode and policyReasons,
 * a person's approval, polling the ledger to `applied`, warnings — and the upstream changed.
 */
import { CreatedKey } from "@acs/domain/ApiKeys"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
import { waitFor } from "./support/wait.ts"

let p: Pipeline
let agent: Client
let approver: Client

const connect = async (key: string) => {
  const client = new Client({ name: "acs-agent", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${p.server.baseUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } }
  }))
  return client
}

const tool = async (client: Client, name: string, args: Record<string, unknown>) => {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult
  expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false)
  return result.structuredContent as Record<string, unknown>
}

/** A key made by the bootstrap key (the agent's) or by the admin person (the approver's: four eyes apart). */
const newKey = async (body: Record<string, unknown>, by: "key" | "person" = "key") => {
  const answer = await p.as(by, "POST", "/keys", body)
  expect(answer.status).toBe(201)
  return Schema.decodeUnknownSync(CreatedKey)(answer.body).secret
}

beforeAll(async () => {
  p = await startPipeline({ seed: 71 })
  agent = await connect(await newKey({ name: "agent", scope: "write" }))
  approver = await connect(await newKey({ name: "approver", scope: "write", canApprove: true }, "person"))
})

afterAll(async () => {
  await Promise.all([agent?.close(), approver?.close()])
  await p?.close()
})

describe("the safe automation sequence over MCP", () => {
  it("runs end to end with a write key and a person's approval", async () => {
    const projectId = p.account.projectId
    // 1. Freshness.
    const syncs = await tool(agent, "platform_list_syncs", { projectId })
    expect((syncs["syncs"] as Array<{ status: string }>)[0]?.status).toBe("succeeded")
    expect(syncs["dataFreshness"]).toMatchObject({ lastSyncAt: expect.any(String) })
    // 2. The policy.
    const policy = await tool(agent, "platform_get_policy", { projectId })
    expect(policy).toMatchObject({ killSwitch: { enabled: true }, keyProposals: "always_review" })
    // 3. The plan (whatever it suggests, the agent may act on its own reading too).
    const plan = await tool(agent, "platform_get_plan", { projectId })
    expect(Array.isArray(plan["items"])).toBe(true)
    const campaigns = await tool(agent, "platform_list_campaigns", { projectId, limit: 5 })
    const campaign = (campaigns["campaigns"] as Array<{ campaignId: string; dailyBudgetMicros: number | null }>)
      .find((c) => c.dailyBudgetMicros !== null)!
    const target = Math.round((campaign.dailyBudgetMicros! * 0.9) / 10_000) * 10_000
    // 4. A proposal with an idempotency key; a retry of the same call is a replay, not a second action.
    const proposal = { projectId, campaignId: campaign.campaignId, newDailyBudgetMicros: target, reason: "agent: trim", idempotencyKey: "agent-1" }
    const proposed = await tool(agent, "platform_propose_budget_change", proposal)
    const replayed = await tool(agent, "platform_propose_budget_change", proposal)
    expect(replayed).toMatchObject({ actionId: proposed["actionId"], replayed: true })
    // 5. mode and policyReasons: a key's proposal queues; the reasons say why and which rule would clear it.
    expect(proposed).toMatchObject({ mode: "queued", status: "proposed", riskTier: "safe" })
    expect((proposed["policyReasons"] as Array<string>).join(" ")).toMatch(/API key.*would auto-apply: budget cut of 10\.0%/)
    const approvals = await tool(approver, "platform_list_approvals", { projectId })
    expect((approvals["approvals"] as Array<{ actionId: string }>).map((a) => a.actionId)).toContain(proposed["actionId"])
    await tool(approver, "platform_approve_action", { projectId, actionId: proposed["actionId"] })
    const record = await waitFor(
      `action ${String(proposed["actionId"])} to be applied or failed`,
      () => tool(agent, "platform_get_action", { projectId, actionId: proposed["actionId"] }),
      (action) => action["status"] === "applied" || action["status"] === "failed",
      { intervalMs: 50 }
    )
    // 6. Applied, without warnings; the upstream holds the new budget.
    expect(record).toMatchObject({ status: "applied", warnings: [] })
    expect((await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaign.campaignId))).dailyBudgetMicros).toBe(target)
    const ledger = await tool(agent, "platform_list_actions", { projectId, limit: 1 })
    expect((ledger["actions"] as Array<{ actionId: string }>)[0]?.actionId).toBe(proposed["actionId"])
  })
})
