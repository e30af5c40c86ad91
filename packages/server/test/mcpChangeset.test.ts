/**
 * Changesets as an agent meets them at /mcp, with the MCP SDK's own client: the tools teach the sequence (open,
 * members, submit, a person approves, get until it ends), every proposal tool takes `changesetId` and `dependsOn`
 * (the instructions say what they mean); an agent's key opens a changeset, adds 30 keyword bid changes on the
 * synced account's real keywords (29 in one call, one through its proposal tool), submits it and reads why it
 * queued; a person approves the plan over REST.
 */
import { proposalKinds } from "@acs/domain/ProposalKinds"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { toolName } from "../src/mcp/McpTools.ts"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"

let p: Pipeline
let agent: Client
let tools: ReadonlyArray<Tool>

beforeAll(async () => {
  // No worker: the approved changeset stays as the approval left it; its apply is the apply runner's to test.
  p = await startPipeline({ seed: 67, env: { WORKER_CONCURRENCY: "0" } })
  const created = await p.api("key", (client) => client.keys.createKey({ payload: { name: "mcp agent", scope: "write" } }))
  agent = new Client({ name: "acs-mcp-changeset-test", version: "1.0.0" })
  await agent.connect(new StreamableHTTPClientTransport(new URL(`${p.server.baseUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${created.secret}` } }
  }))
  tools = (await agent.listTools()).tools
})

afterAll(async () => {
  await agent?.close().catch(() => undefined)
  await p?.close()
})

const callTool = async (name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> => {
  const result = (await agent.callTool({ name, arguments: args })) as CallToolResult
  const text = result.content[0]?.type === "text" ? result.content[0].text : ""
  expect(result.isError ?? false, `${name}: ${text}`).toBe(false)
  return result.structuredContent ?? {}
}

const toolOf = (name: string): Tool => {
  const tool = tools.find((t) => t.name === name)
  if (tool === undefined) throw new Error(`no tool ${name} among ${tools.map((t) => t.name).join(", ")}`)
  return tool
}

type Property = { readonly description?: string; readonly type?: string }
const propertiesOf = (tool: Tool) => (tool.inputSchema.properties ?? {}) as Record<string, Property>

describe("changesets over MCP", () => {
  it("teaches the sequence in the tools, and gives every proposal tool changesetId and dependsOn", () => {
    const open = toolOf("platform_open_changeset")
    expect(open.inputSchema.required).toEqual(expect.arrayContaining(["projectId", "title"]))
    expect(propertiesOf(open)["title"]?.description).toMatch(/reviewers/)
    expect(open.description).toMatch(/changesetId.*platform_add_changeset_members.*platform_submit_changeset.*a person approves/s)
    const add = toolOf("platform_add_changeset_members")
    expect(add.description).toMatch(/platform_propose_<kind>.*platform_submit_changeset/s)
    expect(toolOf("platform_submit_changeset").description).toMatch(/queued.*planHash.*platform_get_changeset/s)
    // Polling needs to know where a changeset ends: the answer's outline carries no enums.
    expect(toolOf("platform_get_changeset").description).toMatch(/poll.*applied, partially_applied or failed.*rejected or expired/s)
    // Shared by every proposal tool, so said once, in the instructions, as `projectId` and `reason` are.
    for (const kind of proposalKinds) {
      const properties = propertiesOf(toolOf(toolName(kind.operation)))
      expect(properties["changesetId"], kind.kind).toMatchObject({ type: "string" })
      expect(properties["dependsOn"], kind.kind).toMatchObject({ type: "array" })
    }
    expect(agent.getInstructions()).toMatch(/propose with its `changesetId`/)
    expect(agent.getInstructions()).toMatch(/`dependsOn` names members of it that must apply first/)
    // An agent's write key is no approver: the decision is a person's (or an approver key's).
    expect(tools.map((t) => t.name)).not.toContain("platform_approve_changeset")
    expect(tools.map((t) => t.name)).toContain("platform_reject_changeset")
    expect(agent.getInstructions()).toMatch(/one changeset: platform_open_changeset.*platform_submit_changeset.*platform_get_changeset/s)
  })

  it("opens, adds 30 members, submits to a queue with reasons, and a person approves the plan over REST", async () => {
    const projectId = p.account.projectId
    const listed = await callTool("platform_list_keywords", { projectId, limit: 200 })
    const keywords = (listed["keywords"] as Array<{ keywordId: string; bidMicros: number | null; status: string }>)
      .filter((k) => k.bidMicros !== null)
      .slice(0, 30)
    expect(keywords).toHaveLength(30)
    const raise = (k: { keywordId: string; bidMicros: number | null }) => ({
      keywordIds: [k.keywordId],
      newBidMicros: k.bidMicros! + 50_000,
      reason: "bid up converting keywords"
    })

    const opened = await callTool("platform_open_changeset", { projectId, title: "Bid up 30 keywords", reason: "weekly pass" })
    expect(opened).toMatchObject({ status: "open", title: "Bid up 30 keywords" })
    const changesetId = opened["changesetId"] as string

    const [first, ...rest] = keywords
    const member = await callTool("platform_propose_keyword_bid_change", { projectId, ...raise(first!), changesetId })
    expect(member).toMatchObject({ kind: "keyword_bid_change", status: "proposed" })
    const added = await callTool("platform_add_changeset_members", {
      projectId,
      changesetId,
      proposals: rest.map((k, i) => ({
        kind: "keyword_bid_change",
        // The last one waits for the first: dependsOn names a member already in.
        body: i === rest.length - 1 ? { ...raise(k), dependsOn: [member["actionId"]] } : raise(k)
      }))
    })
    expect(added).toMatchObject({ changesetId, added: 29, refused: 0 })
    const results = added["results"] as Array<{ index: number; status: number; actionId: string }>
    expect(results.map((r) => [r.index, r.status])).toEqual(rest.map((_, i) => [i, 201]))

    const submitted = await callTool("platform_submit_changeset", { projectId, changesetId })
    expect(submitted).toMatchObject({
      status: "queued",
      members: { total: 30, pending: 30 },
      impact: { dailyBudgetDeltaMicros: 0, byKind: { keyword_bid_change: 30 } },
      decision: { mode: "queued" }
    })
    const decision = submitted["decision"] as { policyReasons: ReadonlyArray<string> }
    expect(decision.policyReasons.join("\n")).toMatch(/API key/)
    const plan = submitted["plan"] as { order: ReadonlyArray<string> }
    const last = results.at(-1)!.actionId
    expect(plan.order).toHaveLength(30)
    expect(plan.order.indexOf(member["actionId"] as string)).toBeLessThan(plan.order.indexOf(last))

    // The person reads what the agent submitted, and approves that plan.
    const reviewed = await p.api("person", (client) => client.changesets.getChangeset({ path: { projectId, changesetId } }))
    expect(reviewed.changeset.planHash).toBe(submitted["planHash"])
    const approved = await p.api("person", (client) =>
      client.changesets.approveChangeset({ path: { projectId, changesetId }, payload: { planHash: reviewed.changeset.planHash! } }))
    expect(approved).toMatchObject({ status: "approved", decidedBy: { kind: "person" } })

    const read = await callTool("platform_get_changeset", { projectId, changesetId })
    const members = read["memberActions"] as Array<{ actionId: string; status: string; changesetId: string }>
    expect(members.map((m) => m.actionId)).toEqual(plan.order)
    expect(new Set(members.map((m) => m.status))).toEqual(new Set(["approved"]))
    const jobs = await p.sql<{ n: number }>("SELECT count(*)::int AS n FROM jobs WHERE changeset_id = $1", [changesetId])
    expect(jobs).toEqual([{ n: 1 }])
  })
})
