/**
 * The guard's verdicts summary (docs/contract.md 3.4, `GET …/verdicts`) on the started server: zeros before any
 * change, `days` refused outside 1–90 in the SPEC envelope, then a key's budget cut and a changeset opened by another
 * key, applied and synced: each watch pending, the changeset counted once (kind `changeset`, under its opener) while
 * the ledger's `?verdict=pending` lists its members; the same answer over RPC, MCP and `acs verdicts`. The verdicts
 * themselves are the guard test's (guard.test.ts, with the simulator's clock a week on).
 */
import { AcsClient } from "@acs/domain/AcsClient"
import { ActionList } from "@acs/domain/Actions"
import { ErrorBodies } from "@acs/domain/Errors"
import { VerdictSummary } from "@acs/domain/Guard"
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

let p: Pipeline
let campaigns: Array<UpstreamCampaign>
let projectId: string

const zero = { passed: 0, failed: 0, inconclusive: 0, pending: 0 }

/** GET …/verdicts as the bootstrap key, decoded strictly: a field the contract does not name fails. */
const verdicts = async (query = "") => {
  const answer = await p.as("key", "GET", `/accounts/${projectId}/verdicts${query}`)
  expect(answer.status, answer.text).toBe(200)
  return Schema.decodeUnknownSync(VerdictSummary, { onExcessProperty: "error" })(answer.body)
}

/** Today in the account's time zone, as the server reads it. */
const today = (timeZone: string) => new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" }).format(new Date())
const daysBefore = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10)

/** A tenth off the next campaign's daily budget, in whole cents. */
const cut = (reason: string, changesetId?: string) => {
  const campaign = campaigns.shift()!
  return {
    campaignId: campaign.campaignId,
    newDailyBudgetMicros: Math.round((campaign.dailyBudgetMicros! * 0.9) / 10_000) * 10_000,
    reason,
    ...(changesetId === undefined ? {} : { changesetId })
  }
}

const whoIs = async (caller: Caller) => (await p.api(caller, (client) => client.auth.getMe())).principal

beforeAll(async () => {
  p = await startPipeline({ seed: 93 })
  projectId = p.account.projectId
  campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId)))
    .filter((c) => !c.deleted && c.status === "ENABLED" && c.dailyBudgetMicros !== null && c.dailyBudgetMicros > 10_000_000)
  expect(campaigns.length).toBeGreaterThanOrEqual(3)
})

afterAll(async () => {
  await p?.close()
})

describe("the verdicts summary", () => {
  it("answers zeros before any change, and refuses a days outside 1–90 naming it", async () => {
    const before = today(p.account.timeZone)
    const empty = await verdicts()
    expect([daysBefore(before, 29), daysBefore(today(p.account.timeZone), 29)]).toContain(empty.since)
    expect(empty).toEqual({ days: 30, since: empty.since, total: zero, byKind: [], byProposer: [] })
    const week = await verdicts("?days=7")
    expect(week.days).toBe(7)
    expect([daysBefore(before, 6), daysBefore(today(p.account.timeZone), 6)]).toContain(week.since)
    for (const days of ["0", "91", "-3", "abc", "2.5", ""]) {
      const refused = await p.as("key", "GET", `/accounts/${projectId}/verdicts?days=${days}`)
      expect(refused.status, days).toBe(400)
      expect(errorCode(refused)).toBe("invalid_request")
      expect(Schema.decodeUnknownSync(ErrorBodies.InvalidRequest)(refused.body).message).toContain("days")
    }
  })

  it("counts each watch once after the sync that opens it: a changeset as one, under its opener", async () => {
    const lone = proposalOf(await p.propose("budget-change", cut("trim one"), { as: "key" })).actionId
    await p.api("person", (client) => client.actions.approveAction({ path: { projectId, actionId: lone } }))
    expect((await p.settle(lone)).status).toBe("applied")

    const opened = await p.api("approver", (client) => client.changesets.openChangeset({ path: { projectId }, payload: { title: "trim two" } }))
    for (const reason of ["trim two: a", "trim two: b"]) {
      const member = await p.propose("budget-change", cut(reason, opened.changesetId), { as: "approver" })
      expect(member.status, member.text).toBe(201)
    }
    const path = { projectId, changesetId: opened.changesetId }
    const submitted = await p.api("approver", (client) => client.changesets.submitChangeset({ path, urlParams: {} }))
    await p.api("person", (client) => client.changesets.approveChangeset({ path, payload: { planHash: submitted.planHash! } }))
    await waitFor("the changeset applied", () => p.api("key", (client) => client.changesets.getChangeset({ path })), (got) =>
      ["applied", "partially_applied", "failed"].includes(got.changeset.status), { intervalMs: 100 })
    expect((await p.api("key", (client) => client.changesets.getChangeset({ path }))).changeset.status).toBe("applied")

    // Applied, not yet watched: the watches open at the next sync.
    expect((await verdicts()).total).toEqual(zero)
    expect((await p.as("key", "POST", `/accounts/${projectId}/syncs`)).status).toBe(202)
    const summary = await waitFor("the watches opened", () => verdicts(), (got) => got.total.pending === 2, { intervalMs: 250 })

    const [key, approver] = [await whoIs("key"), await whoIs("approver")]
    const one = { ...zero, pending: 1 }
    expect(summary.total).toEqual({ ...zero, pending: 2 })
    expect(summary.byKind).toEqual([{ kind: "budget_change", ...one }, { kind: "changeset", ...one }])
    expect([...summary.byProposer].sort((a, b) => a.proposedBy.id.localeCompare(b.proposedBy.id))).toEqual(
      [key, approver].map((principal) => ({ proposedBy: { kind: "key", id: principal.id, name: principal.name }, ...one }))
        .sort((a, b) => a.proposedBy.id.localeCompare(b.proposedBy.id))
    )
    // The ledger lists each member of the pending changeset: three actions, two watches.
    const pending = await p.as("key", "GET", `/accounts/${projectId}/actions?verdict=pending&limit=100`)
    expect(Schema.decodeUnknownSync(ActionList)(pending.body).actions).toHaveLength(3)
  })

  it("answers the same over RPC, MCP and `acs verdicts`", async () => {
    const rest = await verdicts("?days=7")
    expect(rest.total.pending).toBe(2)
    const viaRpc = await Effect.runPromise(
      Effect.flatMap(AcsClient, (client) => client.getVerdicts({ path: { projectId }, urlParams: { days: 7 } })).pipe(
        Effect.provide(AcsClient.layer({ url: p.server.baseUrl, key: BOOTSTRAP_KEY })),
        Effect.scoped
      )
    )
    expect(viaRpc).toEqual(rest)

    const mcp = new Client({ name: "verdicts-test", version: "1.0.0" })
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${p.server.baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` } }
    }))
    try {
      const tool = (await mcp.listTools()).tools.find((t) => t.name === "platform_get_verdicts")
      expect(tool?.annotations).toEqual({ readOnlyHint: true, openWorldHint: false })
      const result = (await mcp.callTool({ name: "platform_get_verdicts", arguments: { projectId, days: 7 } })) as CallToolResult
      expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false)
      expect(result.structuredContent).toEqual(rest)
    } finally {
      await mcp.close()
    }

    const env = { ACS_URL: p.server.baseUrl, ACS_KEY: BOOTSTRAP_KEY }
    expect(jsonOf(await runAcs(["verdicts", projectId, "--days", "7", "--json"], env))).toEqual(rest)
    const human = await runAcs(["verdicts", projectId, "--days", "7"], env)
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toMatch(new RegExp(`^changes applied since ${rest.since} \\(7 days\\): 0 passed, 0 failed, 0 inconclusive, 2 pending$`, "m"))
    expect(human.stdout).toMatch(/^KIND\s+PASSED\s+FAILED\s+INCONCLUSIVE\s+PENDING\nbudget_change\s+0\s+0\s+0\s+1\nchangeset\s+0\s+0\s+0\s+1$/m)
    expect(human.stdout).toMatch(/^PROPOSER\s+NAME\s+PASSED/m)
    const refused = await runAcs(["verdicts", projectId, "--days", "0", "--json"], env)
    expect({ code: refused.code, stderr: refused.stderr }).toEqual({ code: 2, stderr: expect.stringMatching(/^acs: invalid_request: .*days/) })
  })
})
