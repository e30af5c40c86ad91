/**
 * The MCP tool server at /mcp against the started server, with the MCP SDK's own client: tools generated
 * from the HttpApi, a read and a proposal that answer what REST answers, every refusal with its SPEC error
 * code, revocation on the next request, and the account resources.
 *
 * Then changesets as an agent meets them there: the tools teach the sequence (open, members, submit, a person
 * approves, get until it ends), every proposal tool takes `changesetId` and `dependsOn` (the instructions say what
 * they mean); an agent's key opens a changeset, adds 30 keyword bid changes on the synced account's real keywords
 * (29 in one call, one through its proposal tool), submits it and reads why it queued; a person approves the plan
 * over REST. No worker runs, so the approved changeset stays as the approval left it (its apply is the apply
 * runner's to test).
 */
import { CreatedKey } from "@acs/domain/ApiKeys"
import { type OperationName, Operations } from "@acs/domain/Operations"
import { proposalKinds } from "@acs/domain/ProposalKinds"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { toolName } from "../src/mcp/McpTools.ts"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
import { portabilityFindings, undescribedFields } from "./support/schemaPortability.ts"
import { BOOTSTRAP_KEY, call } from "./support/server.ts"

let p: Pipeline
const clients: Array<Client> = []

beforeAll(async () => {
  // No worker: proposals and changesets stay as the policy or the approval left them.
  p = await startPipeline({ seed: 61, env: { WORKER_CONCURRENCY: "0" } })
})

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)))
  await p?.close()
})

const connect = async (key: string): Promise<Client> => {
  const client = new Client({ name: "acs-mcp-test", version: "1.0.0" })
  const transport = new StreamableHTTPClientTransport(new URL(`${p.server.baseUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } }
  })
  await client.connect(transport)
  clients.push(client)
  return client
}

/** A key made over REST with the bootstrap key; org-wide, or bound to one account. */
const makeKey = async (body: Record<string, unknown>, projectId?: string): Promise<{ keyId: string; secret: string }> => {
  const answer = await call(`${p.server.api}${projectId === undefined ? "/keys" : `/accounts/${projectId}/keys`}`, {
    method: "POST",
    key: BOOTSTRAP_KEY,
    body
  })
  expect(answer.status).toBe(201)
  const created = Schema.decodeUnknownSync(CreatedKey)(answer.body)
  return { keyId: created.key.keyId, secret: created.secret }
}

/** The REST campaign page, read as raw rows: the tool's structuredContent must carry the same JSON. */
const CampaignPage = Schema.Struct({ campaigns: Schema.Array(Schema.Unknown), total: Schema.Int })

const callTool = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as CallToolResult

const structured = (result: CallToolResult) => result.structuredContent as Record<string, unknown>

const errorOf = (result: CallToolResult) => {
  expect(result.isError).toBe(true)
  const text = (result.content[0] as { type: "text"; text: string }).text
  const body = JSON.parse(text) as { error: Record<string, unknown> }
  // The envelope is text only: a client validates any structuredContent against the tool's outputSchema.
  expect(result.structuredContent).toBeUndefined()
  return body.error
}

const firstCampaign = async (client: Client) => {
  const result = await callTool(client, "platform_list_campaigns", { projectId: p.account.projectId })
  const campaigns = structured(result)["campaigns"] as Array<{ campaignId: string; dailyBudgetMicros: number | null }>
  return campaigns.find((c) => c.dailyBudgetMicros !== null)!
}

describe("tools generated from the HttpApi", () => {
  let tools: Array<Tool>
  let client: Client

  beforeAll(async () => {
    client = await connect(BOOTSTRAP_KEY)
    tools = (await client.listTools()).tools
  })

  it("names every tool platform_<operation>, one per proposal kind, with object schemas naming projectId", () => {
    const names = tools.map((t) => t.name)
    expect(names.every((n) => n.startsWith("platform_"))).toBe(true)
    expect(new Set(names).size).toBe(names.length)
    for (const kind of proposalKinds) expect(names).toContain(toolName(kind.operation))
    for (const expected of ["platform_list_campaigns", "platform_get_policy", "platform_list_syncs", "platform_list_actions",
      "platform_get_action", "platform_list_approvals", "platform_approve_action", "platform_reject_action",
      "platform_revert_action", "platform_propose_budget_change", "platform_get_targets", "platform_get_verdicts"]) {
      expect(names).toContain(expected)
    }
    // People's business: keys, credentials, the guardrails, sessions.
    for (const absent of ["platform_create_key", "platform_revoke_key", "platform_update_connection", "platform_update_settings",
      "platform_logout", "platform_login", "platform_healthz"]) {
      expect(names).not.toContain(absent)
    }
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe("object")
      expect(tool.inputSchema).not.toHaveProperty("$ref")
      const operation = (Object.keys(Operations) as Array<OperationName>).find((op) => toolName(op) === tool.name)
      expect(operation, tool.name).toBeDefined()
      if ("account" in Operations[operation!]) expect(tool.inputSchema.properties, tool.name).toHaveProperty("projectId")
      expect(tool.description, tool.name).toBeTruthy()
    }
  })

  it("says the shared guidance once, in the instructions; a proposal's description is about itself", () => {
    const budget = tools.find((t) => t.name === "platform_propose_budget_change")!
    expect(budget.inputSchema.required).toEqual(expect.arrayContaining(["projectId", "campaignId", "newDailyBudgetMicros", "reason"]))
    expect(budget.inputSchema.properties).toHaveProperty("idempotencyKey")
    const instructions = client.getInstructions() ?? ""
    for (const phrase of ["queued", "auto_applied", "policyReasons", "`current`", "platform_list_syncs", "platform_get_policy", "idempotencyKey", "warnings", "micros", "error.code"]) {
      expect(instructions).toContain(phrase)
    }
    for (const tool of tools) {
      expect(tool.description, tool.name).not.toMatch(/Safe automation sequence|error\.code|Needs scope|REST:/)
      // No refinement names as titles (`maxLength(64)`, `int`) anywhere in a schema (a property named `title` is no title).
      expect(JSON.stringify([tool.inputSchema, tool.outputSchema]), tool.name).not.toMatch(/"title":"/)
    }
    const days = (tools.find((t) => t.name === "platform_list_campaigns")!.inputSchema.properties as Record<string, { type: string }>)["days"]
    expect(days?.type).toBe("integer")
    expect(client.getInstructions()).toContain("Safe automation sequence")
  })
})

/** `tools/list` serialized, for the tools a write key lists (tools only: the JSON-RPC envelope is the same either way). */
const listSize = (tools: ReadonlyArray<Tool>) => JSON.stringify({ tools }).length

/** A schema without its fields' descriptions (a property named `description` is no description). */
const withoutDescriptions = (node: unknown): unknown =>
  Array.isArray(node)
    ? node.map(withoutDescriptions)
    : typeof node === "object" && node !== null
    ? Object.fromEntries(Object.entries(node).flatMap(([key, value]) =>
      key === "description" && typeof value === "string" ? [] : key === "properties" && typeof value === "object" && value !== null
        ? [[key, Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, withoutDescriptions(schema)]))]]
        : [[key, withoutDescriptions(value)]]
    ))
    : node

/** A tool as listed, less what its input fields' descriptions add (they have a budget of their own). */
const bare = (tool: Tool): Tool => ({ ...tool, inputSchema: withoutDescriptions(tool.inputSchema) as Tool["inputSchema"] })

/** The four hints as a client reads them: what is not sent is the MCP default. */
const hintsOf = (tool: Tool) => ({
  readOnlyHint: tool.annotations?.readOnlyHint ?? false,
  destructiveHint: tool.annotations?.readOnlyHint === true ? false : tool.annotations?.destructiveHint ?? true,
  idempotentHint: tool.annotations?.readOnlyHint === true ? true : tool.annotations?.idempotentHint ?? false,
  openWorldHint: tool.annotations?.openWorldHint ?? true
})

/**
 * The serialized `tools/list` before the tools were trimmed for models (docs/decisions/surfaces.md), measured from that code (all 53 tools to every key, the shared
 * boilerplate in every description, refinement titles, no outputSchema): 101,483 characters.
 */
const TOOL_LIST_BEFORE = 101_483

describe("the tool list depends on the key, and reads well", () => {
  const namesOf = async (key: string) => (await (await connect(key)).listTools()).tools

  it("lists a write key's tools in about a third of the former list, each with outputSchema and its hints", async () => {
    const tools = await namesOf((await makeKey({ name: "mcp size", scope: "write" })).secret)
    // Every input field is described (the test below checks it); those descriptions are measured on their own, the
    // rest of the list against the budgets it had before them (docs/decisions/surfaces.md).
    const descriptions = listSize(tools) - listSize(tools.map(bare))
    expect(descriptions).toBeLessThan(17_000)
    const listed = tools.map(bare)
    // The tools of then, less the two changeset arguments every proposal tool has had since, stay under a third
    // of the former list (33,280 characters, 32.8%, when this was written); each changeset tool has its own budget,
    // and so has the guard's track record (platform_get_verdicts, its summary only: 600 characters), each of Apple's
    // recommendations tools (the list and its two proposals) and the search-term harvest (1,500 characters).
    const isChangesetTool = (tool: Tool) => tool.name.includes("changeset")
    const isRecommendationTool = (tool: Tool) => tool.name.includes("recommendation")
    const isLaterTool = (tool: Tool) =>
      isChangesetTool(tool) || isRecommendationTool(tool) || tool.name === "platform_get_verdicts" ||
      tool.name === "platform_propose_harvest_search_terms"
    const changesetArguments = listed.reduce((sum, tool) => {
      const properties = (tool.inputSchema.properties ?? {}) as Record<string, unknown>
      return sum + ["changesetId", "dependsOn"].reduce((n, name) => n + (name in properties ? JSON.stringify({ [name]: properties[name] }).length : 0), 0)
    }, 0)
    expect(listSize(listed.filter((tool) => !isLaterTool(tool))) - changesetArguments).toBeLessThan(TOOL_LIST_BEFORE / 3)
    // A changeset's answer has 12 nullable fields, each an `anyOf` with null (the portable form) since.
    for (const tool of listed.filter(isChangesetTool)) expect(JSON.stringify(tool).length, tool.name).toBeLessThan(1_700)
    expect(JSON.stringify(listed.find((tool) => tool.name === "platform_get_verdicts")).length).toBeLessThan(600)
    const recommendationTools = listed.filter(isRecommendationTool)
    expect(recommendationTools.map((tool) => tool.name).sort()).toEqual([
      "platform_list_recommendations",
      "platform_propose_apply_recommendation",
      "platform_propose_dismiss_recommendation"
    ])
    for (const tool of recommendationTools) expect(JSON.stringify(tool).length, tool.name).toBeLessThan(1_100)
    expect(JSON.stringify(listed.find((tool) => tool.name === "platform_propose_harvest_search_terms")).length).toBeLessThan(1_500)
    for (const tool of tools) {
      expect(tool.outputSchema?.type, tool.name).toBe("object")
      // The hints the MCP defaults would get wrong are always sent: openWorldHint, and destructiveHint on a tool that writes.
      expect(typeof tool.annotations?.openWorldHint, tool.name).toBe("boolean")
      if (tool.annotations?.readOnlyHint !== true) expect(typeof tool.annotations?.destructiveHint, tool.name).toBe("boolean")
    }
    const byName = new Map(tools.map((t) => [t.name, t]))
    expect(byName.get("platform_list_campaigns")?.annotations).toEqual({ readOnlyHint: true, openWorldHint: false })
    expect(hintsOf(byName.get("platform_list_campaigns")!)).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false })
    expect(hintsOf(byName.get("platform_propose_remove_keywords")!).destructiveHint).toBe(true)
    expect(hintsOf(byName.get("platform_propose_budget_change")!)).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: false })
    expect(hintsOf(byName.get("platform_search_apps")!).openWorldHint).toBe(true)
  })

  it("shows a read key no proposal or decision tools, and an account-bound key no org-level ones", async () => {
    const read = (await namesOf((await makeKey({ name: "mcp list read", scope: "read" })).secret)).map((t) => t.name)
    expect(read).toContain("platform_list_campaigns")
    expect(read.filter((name) => /^platform_(propose|approve|reject|revert|run_audit|start_sync)/.test(name))).toEqual([])
    const bound = (await namesOf((await makeKey({ name: "mcp list bound", scope: "admin", canApprove: true }, p.account.projectId)).secret))
      .map((t) => t.name)
    expect(bound).toContain("platform_approve_action")
    const orgLevel = (Object.keys(Operations) as Array<OperationName>).filter((op) => "orgLevel" in Operations[op]).map(toolName)
    expect(bound.filter((name) => orgLevel.includes(name))).toEqual([])
  })

  it("describes every input field and lists no schema MCP Inspector flags, for every scope", async () => {
    const keys = {
      read: await makeKey({ name: "mcp schemas read", scope: "read" }),
      write: await makeKey({ name: "mcp schemas write", scope: "write" }),
      admin: await makeKey({ name: "mcp schemas admin", scope: "admin", canApprove: true }),
      bound: await makeKey({ name: "mcp schemas bound", scope: "admin", canApprove: true }, p.account.projectId)
    }
    const listed = new Set<string>()
    for (const [scope, key] of Object.entries(keys)) {
      const tools = await namesOf(key.secret)
      expect(tools.length, scope).toBeGreaterThan(0)
      const undescribed = tools.flatMap((tool) => undescribedFields(tool.inputSchema).map((field) => `${tool.name}${field}`))
      expect(undescribed, scope).toEqual([])
      const findings = tools.flatMap((tool) => portabilityFindings(tool).map((f) => `${tool.name} ${f.rule} ${f.path}`))
      expect(findings, scope).toEqual([])
      tools.forEach((tool) => listed.add(tool.name))
    }
    // Every tool of the server was checked: the admin keys list them all.
    const all = (Object.keys(Operations) as Array<OperationName>).filter((op) => Operations[op].mcp.tool).map(toolName)
    expect([...listed].sort()).toEqual(all.sort())
    // What the descriptions teach, where a model reads the field.
    const write = new Map((await namesOf(keys.write.secret)).map((tool) => [tool.name, tool]))
    const field = (tool: string, name: string) =>
      ((write.get(tool)?.inputSchema.properties ?? {}) as Record<string, { description?: string }>)[name]?.description ?? ""
    expect(field("platform_propose_budget_change", "newDailyBudgetMicros")).toMatch(/micros: 1,000,000 = 1 unit of the account's currency/)
    expect(field("platform_propose_budget_change", "campaignId")).toBe("Apple Ads campaign id")
    expect(field("platform_list_campaigns", "days")).toMatch(/time zone/)
    expect(field("platform_list_campaigns", "projectId")).toMatch(/`current`/)
    // A nullable field in the portable form, its description on the field.
    const bid = (write.get("platform_propose_add_keywords")?.inputSchema.properties as Record<string, { items: { properties: Record<string, unknown> } }>)["keywords"]!
    expect(bid.items.properties["bidMicros"]).toMatchObject({ anyOf: [{ type: "integer" }, { type: "null" }], description: expect.stringMatching(/micros/) })
  })

  it("takes a numeric id where the schema wants a string, and answers structuredContent matching outputSchema", async () => {
    const client = await connect(BOOTSTRAP_KEY)
    await client.listTools()
    const campaign = await firstCampaign(client)
    expect(campaign.campaignId).toMatch(/^\d+$/)
    const asText = await callTool(client, "platform_list_ad_groups", { projectId: p.account.projectId, campaignId: campaign.campaignId })
    const asNumber = await callTool(client, "platform_list_ad_groups", { projectId: p.account.projectId, campaignId: Number(campaign.campaignId) })
    expect(asNumber.isError).toBeFalsy()
    expect(structured(asNumber)["adGroups"]).toEqual(structured(asText)["adGroups"])
  })
})

describe("tool calls run the REST endpoint", () => {
  let client: Client

  beforeAll(async () => {
    client = await connect(BOOTSTRAP_KEY)
  })

  it("answers a read with the same rows as REST", async () => {
    const result = await callTool(client, "platform_list_campaigns", { projectId: p.account.projectId, days: 30, limit: 5 })
    expect(result.isError).toBeFalsy()
    const rest = await p.as("key", "GET", `/accounts/${p.account.projectId}/campaigns?days=30&limit=5`)
    const body = Schema.decodeUnknownSync(CampaignPage)(rest.body)
    expect(structured(result)["campaigns"]).toEqual(body.campaigns)
    expect(structured(result)["total"]).toBe(body.total)
    expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual(structured(result))
  })

  it("queues a key's proposal, naming the key rule, and replays it under the same idempotencyKey", async () => {
    const campaign = await firstCampaign(client)
    const args = {
      projectId: p.account.projectId,
      campaignId: campaign.campaignId,
      // A small cut: a person's would auto-apply; a key's queues.
      newDailyBudgetMicros: campaign.dailyBudgetMicros! - 10_000,
      reason: "mcp test",
      idempotencyKey: "mcp-budget-1"
    }
    const first = await callTool(client, "platform_propose_budget_change", args)
    expect(first.isError).toBeFalsy()
    const proposal = structured(first) as { actionId: string; mode: string; kind: string; policyReasons: Array<string> }
    expect(proposal).toMatchObject({ kind: "budget_change", mode: "queued" })
    expect(proposal.policyReasons.join(" ")).toContain("API key")

    const replay = await callTool(client, "platform_propose_budget_change", args)
    expect(structured(replay)).toMatchObject({ actionId: proposal.actionId, replayed: true })

    const approvals = await callTool(client, "platform_list_approvals", { projectId: p.account.projectId })
    expect((structured(approvals)["approvals"] as Array<{ actionId: string }>).map((a) => a.actionId)).toContain(proposal.actionId)

    const decision = { projectId: p.account.projectId, actionId: proposal.actionId }
    // Four eyes: the proposing key cannot approve its own change; a key of another person can.
    const own = errorOf(await callTool(client, "platform_approve_action", decision))
    expect(own).toMatchObject({ code: "forbidden_scope", required_grant: "second_approver" })
    const approver = await connect(await p.approverKey())
    const approved = await callTool(approver, "platform_approve_action", decision)
    expect(structured(approved)).toMatchObject({ actionId: proposal.actionId, status: "approved" })
    const again = errorOf(await callTool(approver, "platform_approve_action", decision))
    expect(again["code"]).toBe("conflict")
  })

  it("refuses a malformed call with invalid_request naming the field, as REST does", async () => {
    const tooMany = errorOf(await callTool(client, "platform_list_campaigns", { projectId: p.account.projectId, days: 91 }))
    expect(tooMany["code"]).toBe("invalid_request")
    expect(String(tooMany["message"])).toContain("days")
    const missing = errorOf(await callTool(client, "platform_propose_budget_change", { projectId: p.account.projectId, reason: "x" }))
    expect(missing["code"]).toBe("invalid_request")
    const noProject = errorOf(await callTool(client, "platform_list_campaigns", {}))
    expect(noProject).toMatchObject({ code: "invalid_request" })
    expect(String(noProject["message"])).toContain("projectId")
    expect(errorOf(await callTool(client, "platform_create_key", { name: "x", scope: "admin" }))["code"]).toBe("not_found")
  })
})

describe("refusals carry the SPEC error code", () => {
  it("answers HTTP 401 with the envelope for a missing or bad key, and ignores session cookies", async () => {
    await expect(connect("acs_not_a_real_key_000000000000000000000000000")).rejects.toSatisfy(
      (error: unknown) => error instanceof StreamableHTTPError && error.code === 401
    )
    const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }
    const headers = { accept: "application/json, text/event-stream" }
    const bare = await call(`${p.server.baseUrl}/mcp`, { method: "POST", body: initialize, headers })
    expect(bare.status).toBe(401)
    expect(bare.body).toMatchObject({ error: { code: "unauthorized" } })
    const login = await call(`${p.server.api}/auth/login`, {
      method: "POST",
      body: { email: "admin@pipeline.example", password: "pipeline-password-0123456789" }
    })
    const cookie = login.headers.getSetCookie().find((line) => line.startsWith("acs_session="))!.split(";")[0]!
    const withCookie = await call(`${p.server.baseUrl}/mcp`, { method: "POST", body: initialize, headers: { ...headers, cookie } })
    expect(withCookie.status).toBe(401)
  })

  it("refuses a read key's proposal with forbidden_scope and required_scope", async () => {
    const { secret } = await makeKey({ name: "mcp reader", scope: "read" })
    const client = await connect(secret)
    const campaign = await firstCampaign(client)
    const error = errorOf(await callTool(client, "platform_propose_budget_change", {
      projectId: p.account.projectId,
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: campaign.dailyBudgetMicros! - 10_000,
      reason: "not allowed"
    }))
    expect(error).toMatchObject({ code: "forbidden_scope", required_scope: "write", key_scope: "read" })
  })

  it("refuses another account with account_mismatch, and resolves `current` for a key bound to one", async () => {
    const { secret } = await makeKey({ name: "mcp bound", scope: "read" }, p.account.projectId)
    const client = await connect(secret)
    const other = errorOf(await callTool(client, "platform_list_campaigns", { projectId: p.readOnlyAccount.projectId }))
    expect(other["code"]).toBe("account_mismatch")
    const current = await callTool(client, "platform_list_campaigns", { projectId: "current" })
    expect(current.isError).toBeFalsy()
    const orgLevel = errorOf(await callTool(client, "platform_list_accounts", {}))
    expect(orgLevel["code"]).toBe("forbidden_scope")
  })

  it("refuses approval without canApprove with required_grant", async () => {
    const bootstrap = await connect(BOOTSTRAP_KEY)
    const campaign = await firstCampaign(bootstrap)
    const proposed = await callTool(bootstrap, "platform_propose_budget_change", {
      projectId: p.account.projectId,
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: campaign.dailyBudgetMicros! - 20_000,
      reason: "to be approved by someone else"
    })
    const actionId = (structured(proposed) as { actionId: string }).actionId
    const { secret } = await makeKey({ name: "mcp writer", scope: "write" })
    const writer = await connect(secret)
    const error = errorOf(await callTool(writer, "platform_approve_action", { projectId: p.account.projectId, actionId }))
    expect(error).toMatchObject({ code: "forbidden_scope", required_grant: "approve" })
    expect(error).not.toHaveProperty("required_scope")
  })

  it("stops a revoked key on its next request with 401", async () => {
    const { keyId, secret } = await makeKey({ name: "mcp revoked", scope: "read" })
    const client = await connect(secret)
    expect((await callTool(client, "platform_get_policy", { projectId: p.account.projectId })).isError).toBeFalsy()
    const revoked = await call(`${p.server.api}/keys/${keyId}`, { method: "DELETE", key: BOOTSTRAP_KEY })
    expect(revoked.status).toBe(204)
    await expect(callTool(client, "platform_get_policy", { projectId: p.account.projectId })).rejects.toSatisfy(
      (error: unknown) => error instanceof StreamableHTTPError && error.code === 401
    )
  })
})

describe("resources", () => {
  it("offers the policy per account and reads it as REST serves it", async () => {
    const client = await connect(BOOTSTRAP_KEY)
    const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)
    expect(templates).toContain("acs://accounts/{projectId}/policy")
    const uri = `acs://accounts/${p.account.projectId}/policy`
    expect((await client.listResources()).resources.map((r) => r.uri)).toContain(uri)
    const read = await client.readResource({ uri })
    const policy = JSON.parse((read.contents[0] as { text: string }).text) as Record<string, unknown>
    expect(policy).toMatchObject({ killSwitch: { setting: "platformAutoApply" }, keyProposals: "always_review" })

    const bound = await connect((await makeKey({ name: "mcp resources", scope: "read" }, p.account.projectId)).secret)
    expect((await bound.listResources()).resources.map((r) => r.uri)).toContain("acs://accounts/current/policy")
    await expect(bound.readResource({ uri: `acs://accounts/${p.readOnlyAccount.projectId}/policy` })).rejects.toThrow(/account_mismatch/)
  })

  it("offers the brief, read as REST serves it", async () => {
    const client = await connect(BOOTSTRAP_KEY)
    const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)
    expect(templates).toContain("acs://accounts/{projectId}/brief")
    const read = await client.readResource({ uri: `acs://accounts/${p.account.projectId}/brief` })
    const rest = await p.as("key", "GET", `/accounts/${p.account.projectId}/brief`)
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual(rest.body)
  })
})

describe("changesets over MCP", () => {
  let agent: Client
  let tools: ReadonlyArray<Tool>

  beforeAll(async () => {
    const created = await p.api("key", (client) => client.keys.createKey({ payload: { name: "mcp agent", scope: "write" } }))
    agent = await connect(created.secret)
    tools = (await agent.listTools()).tools
  })

  const agentTool = async (name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> => {
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
    const listed = await agentTool("platform_list_keywords", { projectId, limit: 200 })
    const keywords = (listed["keywords"] as Array<{ keywordId: string; bidMicros: number | null; status: string }>)
      .filter((k) => k.bidMicros !== null)
      .slice(0, 30)
    expect(keywords).toHaveLength(30)
    const raise = (k: { keywordId: string; bidMicros: number | null }) => ({
      keywordIds: [k.keywordId],
      newBidMicros: k.bidMicros! + 50_000,
      reason: "bid up converting keywords"
    })

    const opened = await agentTool("platform_open_changeset", { projectId, title: "Bid up 30 keywords", reason: "weekly pass" })
    expect(opened).toMatchObject({ status: "open", title: "Bid up 30 keywords" })
    const changesetId = opened["changesetId"] as string

    const [first, ...rest] = keywords
    const member = await agentTool("platform_propose_keyword_bid_change", { projectId, ...raise(first!), changesetId })
    expect(member).toMatchObject({ kind: "keyword_bid_change", status: "proposed" })
    const added = await agentTool("platform_add_changeset_members", {
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

    const submitted = await agentTool("platform_submit_changeset", { projectId, changesetId })
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

    const read = await agentTool("platform_get_changeset", { projectId, changesetId })
    const members = read["memberActions"] as Array<{ actionId: string; status: string; changesetId: string }>
    expect(members.map((m) => m.actionId)).toEqual(plan.order)
    expect(new Set(members.map((m) => m.status))).toEqual(new Set(["approved"]))
    const jobs = await p.sql<{ n: number }>("SELECT count(*)::int AS n FROM jobs WHERE changeset_id = $1", [changesetId])
    expect(jobs).toEqual([{ n: 1 }])
  })
})
