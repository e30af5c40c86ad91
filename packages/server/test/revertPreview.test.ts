/**
 * A revert's preview (docs/contract.md 4.1): `POST …/actions/{id}/revert?preview=true` makes
 * the revert's checks and answers 200 with what the revert would write — `{kind, mode, riskTier,
 * policyReasons, summary, payload}` — and records nothing (no ledger row, no job, no event, the original not
 * linked); refusals answer as the revert would; it needs the revert's grant and counts as a read; over REST,
 * RPC, MCP and `acs revert --preview`.
 */
import { AcsClient } from "@acs/domain/AcsClient"
import { isProposalResponse } from "@acs/domain/Actions"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { jsonOf, runAcs } from "../../cli/test/support/runAcs.ts"
import { type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import { BOOTSTRAP_KEY, call, errorCode } from "./support/server.ts"

let p: Pipeline
/** An applied budget change (proposed by the key, approved by the second approver) and its budgets. */
let applied: { readonly actionId: string; readonly prior: number; readonly written: number }

/** The write bucket is small: previews, which count as reads, must never reach it. */
const WRITE_LIMIT = 6

/** Everything a revert could write, counted. */
const written = async () =>
  (await p.sql<{ actions: string; jobs: string; events: string; linked: string }>(
    `SELECT (SELECT count(*) FROM actions) AS actions, (SELECT count(*) FROM jobs) AS jobs,
       (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM actions WHERE reverted_by IS NOT NULL) AS linked`
  ))[0]

const previewPath = (actionId: string) => `/accounts/${p.account.projectId}/actions/${actionId}/revert?preview=true`

beforeAll(async () => {
  p = await startPipeline({ seed: 83, env: { RATE_LIMIT_WRITE: String(WRITE_LIMIT), CHANGE_HISTORY_POLL_SECONDS: "0" } })
  const campaign = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId)))
    .find((c) => !c.deleted && c.status === "ENABLED" && c.dailyBudgetMicros !== null && c.dailyBudgetMicros > 0)!
  const prior = campaign.dailyBudgetMicros!
  const next = Math.round((prior * 1.1) / 10_000) * 10_000
  const proposed = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: next, reason: "room to spend" }, { as: "key" })
  expect(proposed.status, proposed.text).toBe(201)
  const actionId = proposalOf(proposed).actionId
  const approved = await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)
  expect(approved.status, approved.text).toBe(200)
  expect((await p.settle(actionId)).status).toBe("applied")
  applied = { actionId, prior, written: next }
})

afterAll(async () => {
  await p?.close()
})

describe("a revert's preview", () => {
  it("answers what the revert will write, writes nothing, counts as a read; the revert then records exactly that", async () => {
    const before = await written()
    // More previews than the write limit: each is a read.
    let preview: unknown
    for (let i = 0; i < WRITE_LIMIT + 2; i++) {
      const answer = await p.as("person", "POST", previewPath(applied.actionId))
      expect(answer.status, answer.text).toBe(200)
      expect(answer.headers.get("location")).toBeNull()
      expect(answer.headers.get("ratelimit-policy")).toMatch(/name="read"/)
      if (preview !== undefined) expect(answer.body).toEqual(preview)
      preview = answer.body
    }
    expect(Object.keys(preview as object).sort()).toEqual(["kind", "mode", "payload", "policyReasons", "riskTier", "summary"])
    expect(preview).toMatchObject({
      kind: "budget_change",
      mode: "auto_applied",
      // Back to the budget before the action, from the budget it wrote.
      payload: { newDailyBudgetMicros: applied.prior, priorDailyBudgetMicros: applied.written }
    })
    expect(await written()).toEqual(before)
    expect((await p.action(applied.actionId)).revertedBy).toBeNull()

    const revert = await p.as("person", "POST", `/accounts/${p.account.projectId}/actions/${applied.actionId}/revert`)
    expect(revert.status, revert.text).toBe(201)
    expect(revert.headers.get("ratelimit-policy")).toMatch(/name="write"/)
    const recorded = await p.action(proposalOf(revert).actionId)
    expect(preview).toEqual({
      kind: recorded.kind,
      mode: recorded.mode,
      riskTier: recorded.riskTier,
      policyReasons: recorded.policyReasons,
      summary: recorded.summary,
      payload: recorded.payload
    })
    expect((await p.settle(recorded.actionId)).status).toBe("applied")
  })

  it("refuses as the revert would: an action already reverted, an unknown one, a read key", async () => {
    const before = await written()
    const again = await p.as("person", "POST", previewPath(applied.actionId))
    expect(again.status, again.text).toBe(422)
    expect(errorCode(again)).toBe("not_revertible")
    const unknown = await p.as("person", "POST", previewPath("act_unknown"))
    expect(unknown.status).toBe(404)

    const reader = (await p.api("person", (client) => client.keys.createKey({ payload: { name: "reader", scope: "read" } }))).secret
    const refused = await call(`${p.server.api}${previewPath(applied.actionId)}`, { method: "POST", key: reader })
    expect(refused.status).toBe(403)
    expect(errorCode(refused)).toBe("forbidden_scope")
    const afterKey = await written()
    expect({ ...afterKey, actions: before!.actions }).toEqual(before)
  })

  it("RPC, MCP and `acs revert --preview` answer the same preview and write nothing", async () => {
    // A second applied action to preview: a person's auto-applied budget change.
    const campaign = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId)))
      .filter((c) => !c.deleted && c.status === "ENABLED" && c.dailyBudgetMicros !== null && c.dailyBudgetMicros > 0)[1]!
    const next = Math.round((campaign.dailyBudgetMicros! * 1.05) / 10_000) * 10_000
    const proposed = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: next, reason: "a little more" }, { as: "key" })
    const actionId = proposalOf(proposed).actionId
    expect((await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)).status).toBe(200)
    expect((await p.settle(actionId)).status).toBe("applied")

    const before = await written()
    const rest = await p.as("key", "POST", previewPath(actionId))
    expect(rest.status, rest.text).toBe(200)

    const viaRpc = await Effect.runPromise(
      Effect.flatMap(AcsClient, (client) =>
        client.revertAction({ path: { projectId: p.account.projectId, actionId }, urlParams: { preview: true } })).pipe(
          Effect.provide(AcsClient.layer({ url: p.server.baseUrl, key: BOOTSTRAP_KEY })),
          Effect.scoped
        )
    )
    expect(isProposalResponse(viaRpc)).toBe(false)
    expect(viaRpc).toEqual(rest.body)

    const mcp = new Client({ name: "revert-preview-test", version: "1.0.0" })
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${p.server.baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` } }
    }))
    try {
      const result = (await mcp.callTool({
        name: "platform_revert_action",
        arguments: { projectId: p.account.projectId, actionId, preview: true }
      })) as CallToolResult
      expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false)
      expect(result.structuredContent).toEqual(rest.body)
    } finally {
      await mcp.close()
    }

    const env = { ACS_URL: p.server.baseUrl, ACS_KEY: BOOTSTRAP_KEY }
    const args = ["revert", p.account.projectId, actionId, "--preview"]
    expect(jsonOf(await runAcs([...args, "--json"], env))).toEqual(rest.body)
    const human = await runAcs(args, env)
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toMatch(/^preview: nothing was recorded/)
    expect(await written()).toEqual(before)
  })
})
