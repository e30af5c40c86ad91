/**
 * Preview (docs/contract.md 4.1): `?preview=true` on a proposal endpoint answers 200 with what
 * the proposal would record — mode, risk tier, reasons, summary, payload — and writes nothing (no ledger row,
 * job, idempotency row or auto-apply); 422 without `action_id`; the proposal's scope; the read bucket; over
 * REST, RPC, MCP and `acs propose --preview`.
 */
import { AcsClient } from "@acs/domain/AcsClient"
import { isProposalResponse, ProposalPreview } from "@acs/domain/Actions"
import { ErrorBodies } from "@acs/domain/Errors"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Either, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { jsonOf, runAcs } from "../../cli/test/support/runAcs.ts"
import { type Caller, type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import { type Answer, BOOTSTRAP_KEY, call, errorCode } from "./support/server.ts"

let p: Pipeline
let campaigns: Array<UpstreamCampaign>
const clients: Array<Client> = []

/** The write bucket is small: previews, which count as reads, must never reach it. */
const WRITE_LIMIT = 12

beforeAll(async () => {
  // No worker: an auto-applied proposal stays as the policy left it.
  p = await startPipeline({ seed: 33, env: { WORKER_CONCURRENCY: "0", RATE_LIMIT_WRITE: String(WRITE_LIMIT) } })
  campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).filter((c) => !c.deleted && c.dailyBudgetMicros !== null)
})

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)))
  await p?.close()
})

/** A budget change local validation refuses: an amount finer than a cent, and far outside the docs/contract.md 3.1 bounds. */
const invalidBody = () => ({ campaignId: campaigns[0]!.campaignId, newDailyBudgetMicros: 1_000_001, reason: "x" })

/** Everything a proposal could write, counted. */
const written = async () => {
  const [row] = await p.sql<{ actions: string; jobs: string; keys: string; cap: string }>(
    `SELECT (SELECT count(*) FROM actions) AS actions, (SELECT count(*) FROM jobs) AS jobs,
       (SELECT count(*) FROM idempotency_keys) AS keys,
       (SELECT count(*) FROM actions WHERE counts_toward_cap) AS cap`
  )
  return row
}

const previewOf = (
  kindPath: string,
  body: Record<string, unknown>,
  options: { readonly as?: Caller; readonly idempotencyKey?: string } = {}
): Promise<Answer> =>
  p.as(
    options.as ?? "person",
    "POST",
    `/accounts/${p.account.projectId}/actions/${kindPath}?preview=true`,
    body,
    options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey }
  )

/** The preview, then the real proposal: the preview equals what the proposal recorded. */
const previewThenPropose = async (kindPath: string, body: Record<string, unknown>, as: Caller) => {
  const before = await written()
  const preview = await previewOf(kindPath, body, { as })
  expect(preview.status, preview.text).toBe(200)
  expect(preview.headers.get("location")).toBeNull()
  expect(preview.headers.get("ratelimit-policy")).toMatch(/name="read"/)
  expect(await written()).toEqual(before)
  // A key the contract does not name fails the decoding, as the exact key list below asserts.
  const previewed = Schema.decodeUnknownSync(ProposalPreview, { onExcessProperty: "error" })(preview.body)
  expect(Object.keys(previewed).sort()).toEqual(["kind", "mode", "payload", "policyReasons", "riskTier", "summary"])

  const proposed = await p.propose(kindPath, body, { as })
  expect(proposed.status, proposed.text).toBe(201)
  expect(proposed.headers.get("ratelimit-policy")).toMatch(/name="write"/)
  const actionId = proposalOf(proposed).actionId
  const recorded = await p.action(actionId)
  expect(previewed).toEqual({
    kind: recorded.kind,
    mode: recorded.mode,
    riskTier: recorded.riskTier,
    policyReasons: recorded.policyReasons,
    summary: recorded.summary,
    payload: recorded.payload
  })
  return { previewed, actionId }
}

describe("preview over REST", () => {
  it("previews an auto-applying person proposal exactly as it is then recorded, prior state included", async () => {
    const campaign = campaigns[0]!
    const body = { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.9), reason: "trim" }
    const { previewed } = await previewThenPropose("budget-change", body, "person")
    expect(previewed).toMatchObject({ kind: "budget_change", mode: "auto_applied", riskTier: "safe" })
    expect(previewed.payload).toMatchObject({ priorDailyBudgetMicros: campaign.dailyBudgetMicros })
  })

  it("previews a key's proposal as queued, as it is then recorded", async () => {
    const campaign = campaigns[1]!
    const body = { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.9), reason: "trim" }
    const { previewed } = await previewThenPropose("budget-change", body, "key")
    expect(previewed.mode).toBe("queued")
    expect(previewed.policyReasons.join("\n")).toMatch(/API key/)
  })

  it("previews a composite (create_campaign) as it is then recorded", async () => {
    const source = campaigns[2]!
    const body = {
      name: "Preview launch",
      adamId: source.adamId,
      countriesOrRegions: ["US"],
      dailyBudgetMicros: 50_000_000,
      bidStrategy: "MANUAL_CPT",
      adGroups: [{
        name: "Brand - Exact",
        defaultBidMicros: 1_500_000,
        searchMatch: false,
        keywords: [{ text: "acme tasks", matchType: "EXACT", bidMicros: 2_000_000 }],
        negativeKeywords: [{ text: "free", matchType: "BROAD" }]
      }],
      reason: "launch"
    }
    const { previewed } = await previewThenPropose("create-campaign", body, "person")
    expect(previewed).toMatchObject({ kind: "create_campaign", mode: "queued", riskTier: "high" })
  })

  it("stores nothing for an Idempotency-Key sent with a preview, and the key stays free for the proposal", async () => {
    const campaign = campaigns[3]!
    const body = { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.95), reason: "idem" }
    const before = await written()
    for (let i = 0; i < 2; i++) {
      const preview = await previewOf("budget-change", body, { as: "key", idempotencyKey: "preview-key-1" })
      expect(preview.status, preview.text).toBe(200)
      expect(preview.headers.get("idempotency-replay")).toBeNull()
    }
    expect(await written()).toEqual(before)
    const proposed = await p.propose("budget-change", body, { as: "key", idempotencyKey: "preview-key-1" })
    expect(proposed.status, proposed.text).toBe(201)
    expect(proposalOf(proposed).replayed).toBeUndefined()
  })

  it("answers a validation failure 422 with every reason and no action_id, recording nothing", async () => {
    const before = await written()
    const preview = await previewOf("budget-change", invalidBody())
    expect(preview.status, preview.text).toBe(422)
    expect(errorCode(preview)).toBe("validation_failed")
    const error = Schema.decodeUnknownSync(ErrorBodies.ValidationFailed)(preview.body)
    expect(error.validation_errors).toEqual(expect.arrayContaining([expect.any(String)]))
    expect(error).not.toHaveProperty("action_id")
    expect(await written()).toEqual(before)
    // A bad flag is the usual 400, naming it.
    const bad = await p.as("person", "POST", `/accounts/${p.account.projectId}/actions/budget-change?preview=yes`, {
      campaignId: campaigns[0]!.campaignId,
      newDailyBudgetMicros: 1_000_000,
      reason: "x"
    })
    expect(bad.status).toBe(400)
    expect(bad.text).toMatch(/preview/)
  })

  it("needs the proposal's scope: a read key gets 403, and a read-only account 422 as for the proposal", async () => {
    const { secret } = await p.api("key", (client) => client.keys.createKey({ payload: { name: "preview reader", scope: "read" } }))
    const campaign = campaigns[0]!
    const answer = await call(`${p.server.api}/accounts/${p.account.projectId}/actions/budget-change?preview=true`, {
      method: "POST",
      key: secret,
      body: { campaignId: campaign.campaignId, newDailyBudgetMicros: 1_000_000, reason: "x" }
    })
    expect(answer.status).toBe(403)
    expect(errorCode(answer)).toBe("forbidden_scope")
    const readOnly = await p.as("person", "POST", `/accounts/${p.readOnlyAccount.projectId}/actions/budget-change?preview=true`, {
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: 1_000_000,
      reason: "x"
    })
    expect(errorCode(readOnly)).toBe("read_only_account")
  })

  it("counts previews in the read bucket: more previews than the write limit all answer", async () => {
    const campaign = campaigns[0]!
    const body = { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.8), reason: "many" }
    for (let i = 0; i < WRITE_LIMIT + 3; i++) {
      const preview = await previewOf("budget-change", body, { as: "approver" })
      expect(preview.status, preview.text).toBe(200)
    }
  })
})

describe("preview over RPC, MCP and the CLI", () => {
  const budgetBody = () => {
    const campaign = campaigns[4]!
    return { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.9), reason: "surfaces" }
  }

  it("RPC: `urlParams.preview` answers the preview and writes nothing, past the write limit", async () => {
    const approver = await p.approverKey()
    const before = await written()
    const rest = await previewOf("budget-change", budgetBody(), { as: "approver" })
    const run = <A, E>(use: (client: AcsClient["Type"]) => Effect.Effect<A, E>) =>
      Effect.runPromise(Effect.flatMap(AcsClient, use).pipe(Effect.provide(AcsClient.layer({ url: p.server.baseUrl, key: approver })), Effect.scoped))
    for (let i = 0; i < WRITE_LIMIT + 1; i++) {
      const answer = await run((client) =>
        client.proposeBudgetChange({ path: { projectId: p.account.projectId }, urlParams: { preview: true }, payload: budgetBody() })
      )
      expect(isProposalResponse(answer)).toBe(false)
      expect(answer).toEqual(rest.body)
    }
    const invalid = await run((client) =>
      Effect.either(client.proposeBudgetChange({
        path: { projectId: p.account.projectId },
        urlParams: { preview: true },
        payload: invalidBody()
      }))
    )
    expect(Either.isLeft(invalid) && invalid.left).toMatchObject({ _tag: "ValidationFailed" })
    expect(Either.isLeft(invalid) && "action_id" in invalid.left ? invalid.left.action_id : undefined).toBeUndefined()
    expect(await written()).toEqual(before)
  })

  it("MCP: a `preview` argument on the proposal tool answers the preview and writes nothing, past the write limit", async () => {
    const client = new Client({ name: "acs-preview-test", version: "1.0.0" })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${p.server.baseUrl}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` } }
      })
    )
    clients.push(client)
    const { tools } = await client.listTools()
    const tool = tools.find((t) => t.name === "platform_propose_budget_change")
    expect(tool?.inputSchema.properties?.["preview"]).toMatchObject({ type: "boolean" })
    const before = await written()
    const rest = await previewOf("budget-change", budgetBody(), { as: "key" })
    // More previews than the write limit: they count as reads.
    for (let i = 0; i < WRITE_LIMIT + 1; i++) {
      const result = (await client.callTool({
        name: "platform_propose_budget_change",
        arguments: { projectId: p.account.projectId, ...budgetBody(), preview: true, idempotencyKey: "mcp-preview" }
      })) as CallToolResult
      expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false)
      expect(result.structuredContent).toEqual(rest.body)
    }
    const invalid = (await client.callTool({
      name: "platform_propose_budget_change",
      arguments: { projectId: p.account.projectId, ...invalidBody(), preview: true }
    })) as CallToolResult
    expect(invalid.isError).toBe(true)
    const error = (JSON.parse((invalid.content[0] as { text: string }).text) as { error: Record<string, unknown> }).error
    expect(error["code"]).toBe("validation_failed")
    expect(error).not.toHaveProperty("action_id")
    expect(await written()).toEqual(before)
  })

  it("CLI: `acs propose <kind> --preview` prints the preview and records nothing", async () => {
    const env = { ACS_URL: p.server.baseUrl, ACS_KEY: BOOTSTRAP_KEY }
    const body = JSON.stringify(budgetBody())
    const before = await written()
    const rest = await previewOf("budget-change", budgetBody(), { as: "key" })
    const args = ["propose", "budget_change", p.account.projectId, "--body", body, "--preview"]
    expect(jsonOf(await runAcs([...args, "--json"], env))).toEqual(rest.body)
    const human = await runAcs(args, env)
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toMatch(/^preview: nothing was recorded/)
    expect(human.stdout).toMatch(/mode: +queued/)
    expect(human.stdout).toMatch(/"priorDailyBudgetMicros"/)
    expect(await written()).toEqual(before)
  })
})
