/**
 * The ledger filtered by who proposed (docs/contract.md 4.2): `GET …/actions?proposedBy=<id>` answers only the actions
 * whose `proposedBy.id` is that key, person or outside change's modifier, pages with the `before` cursor
 * like any other filter, combines with the others, and is taken by RPC, MCP and `acs ledger --proposed-by`.
 */
import { AcsClient } from "@acs/domain/AcsClient"
import { ActionList } from "@acs/domain/Actions"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { jsonOf, runAcs } from "../../cli/test/support/runAcs.ts"
import { type Caller, type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import { BOOTSTRAP_KEY, errorCode } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

interface Row {
  readonly actionId: string
  readonly kind: string
  readonly proposedBy: { readonly kind: string; readonly id: string; readonly name: string }
}

let p: Pipeline
let campaigns: Array<UpstreamCampaign>
const OUTSIDE_USER = "someone-in-the-web-ui@example.com"

const page = async (query: string) => {
  const answer = await p.as("key", "GET", `/accounts/${p.account.projectId}/actions?${query}`)
  expect(answer.status, answer.text).toBe(200)
  // A field the contract does not name fails the decoding: the exact comparisons below stay exact.
  return Schema.decodeUnknownSync(ActionList, { onExcessProperty: "error" })(answer.body)
}

const idOf = async (caller: Caller) => (await p.api(caller, (client) => client.auth.getMe())).principal.id

const propose = async (as: Caller) => {
  const campaign = campaigns.shift()!
  const answer = await p.propose("budget-change", {
    campaignId: campaign.campaignId,
    newDailyBudgetMicros: Math.round((campaign.dailyBudgetMicros! * 1.1) / 10_000) * 10_000,
    reason: `proposed as ${as}`
  }, { as })
  expect(answer.status, answer.text).toBe(201)
  return proposalOf(answer).actionId
}

beforeAll(async () => {
  // No worker: the proposals stay as recorded; the outside change comes with a sync.
  p = await startPipeline({ seed: 92, env: { WORKER_CONCURRENCY: "0", CHANGE_HISTORY_POLL_SECONDS: "0" } })
  campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId)))
    .filter((c) => !c.deleted && c.status === "ENABLED" && c.dailyBudgetMicros !== null && c.dailyBudgetMicros > 0)
})

afterAll(async () => {
  await p?.close()
})

describe("the ledger by proposer", () => {
  it("answers only the named key's, person's or outside modifier's actions, paged with the cursor", async () => {
    const keyActions = [await propose("key"), await propose("key")]
    const personActions = [await propose("person")]
    const outside = campaigns.shift()!
    const edit = p.simulator.webUiWrite({
      adAccountId: Number(p.account.upstreamAccountId),
      method: "PUT",
      path: `/v1/campaigns/${outside.campaignId}`,
      body: { dailyBudget: { value: { amount: "66.60", currency: "USD" } } },
      user: OUTSIDE_USER
    })
    expect(edit.status).toBe(200)
    expect((await p.as("key", "POST", `/accounts/${p.account.projectId}/syncs`)).status).toBe(202)
    await waitFor("the outside change recorded", () => page("origin=external&limit=100"), (rows) =>
      rows.actions.some((a) => a.proposedBy.id === OUTSIDE_USER), { intervalMs: 250 })

    const keyId = await idOf("key")
    const personId = await idOf("person")
    const byKey = await page(`proposedBy=${keyId}&limit=100`)
    expect(byKey.actions.map((a) => a.actionId)).toEqual([...keyActions].reverse())
    expect(byKey.nextBefore).toBeNull()
    const byPerson = await page(`proposedBy=${personId}&limit=100`)
    expect(byPerson.actions.map((a) => a.actionId)).toEqual([...personActions].reverse())
    const byOutside = await page(`proposedBy=${encodeURIComponent(OUTSIDE_USER)}&limit=100`)
    expect(byOutside.actions.length).toBeGreaterThan(0)
    expect(byOutside.actions.every((a) => a.kind === "external_change" && a.proposedBy.id === OUTSIDE_USER)).toBe(true)

    // Paging: one row a page, the cursor walks the key's actions only, newest first.
    const seen: Array<string> = []
    let before: string | null | undefined
    do {
      const one = await page(`proposedBy=${keyId}&limit=1${before === undefined || before === null ? "" : `&before=${encodeURIComponent(before)}`}`)
      seen.push(...one.actions.map((a) => a.actionId))
      before = one.nextBefore
    } while (before !== null && seen.length < 10)
    expect(seen).toEqual([...keyActions].reverse())

    // With the other filters, and for nobody.
    expect((await page(`proposedBy=${encodeURIComponent(OUTSIDE_USER)}&origin=acs`)).actions).toEqual([])
    expect((await page(`proposedBy=${keyId}&status=proposed&limit=100`)).actions.length).toBe(2)
    expect(await page("proposedBy=key_nobody")).toEqual({ actions: [], nextBefore: null })
    const empty = await p.as("key", "GET", `/accounts/${p.account.projectId}/actions?proposedBy=`)
    expect(empty.status).toBe(400)
    expect(errorCode(empty)).toBe("invalid_request")
  })

  it("RPC, MCP and `acs ledger --proposed-by` take the filter too", async () => {
    const keyId = await idOf("key")
    const rest = await page(`proposedBy=${keyId}&limit=100`)
    expect(rest.actions.length).toBeGreaterThan(0)
    const viaRpc = await Effect.runPromise(
      Effect.flatMap(AcsClient, (client) =>
        client.listActions({ path: { projectId: p.account.projectId }, urlParams: { limit: 100, proposedBy: keyId } })).pipe(
          Effect.provide(AcsClient.layer({ url: p.server.baseUrl, key: BOOTSTRAP_KEY })),
          Effect.scoped
        )
    )
    expect(viaRpc.actions.map((a) => a.actionId)).toEqual(rest.actions.map((a) => a.actionId))

    const mcp = new Client({ name: "ledger-proposed-by-test", version: "1.0.0" })
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${p.server.baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` } }
    }))
    try {
      const result = (await mcp.callTool({
        name: "platform_list_actions",
        arguments: { projectId: p.account.projectId, limit: 100, proposedBy: keyId }
      })) as CallToolResult
      expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false)
      expect((result.structuredContent as { actions: Array<Row> }).actions.map((a) => a.actionId)).toEqual(rest.actions.map((a) => a.actionId))
    } finally {
      await mcp.close()
    }

    const cli = jsonOf<{ actions: Array<Row> }>(
      await runAcs(["ledger", p.account.projectId, "--proposed-by", keyId, "--limit", "100", "--json"], { ACS_URL: p.server.baseUrl, ACS_KEY: BOOTSTRAP_KEY })
    )
    expect(cli.actions.map((a) => a.actionId)).toEqual(rest.actions.map((a) => a.actionId))
  })
})
