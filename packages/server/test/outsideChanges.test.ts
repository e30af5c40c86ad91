/**
 * Outside changes in the ledger (docs/contract.md 4.2): edits made "in the web UI" of the simulator show up as
 * `external_change` rows after a sync and on the change-history schedule, once each; acs's own writes do
 * not; an acs action overwritten from outside is `supersededBy` the outside change and its revert queues
 * naming it; `?origin=` filters; the apply worker's drift demotion names who changed the entity.
 */
import { AcsClient } from "@acs/domain/AcsClient"
import { type ActionRecord, isProposalResponse, ProposalResponse } from "@acs/domain/Actions"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
import { type Answer, BOOTSTRAP_KEY } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

/** An external_change row's payload (docs/contract.md 4.2); the contract types a payload as a JSON object. */
const ExternalPayload = Schema.Struct({
  entity: Schema.Struct({ type: Schema.String, id: Schema.String }),
  changes: Schema.Array(Schema.Struct({ field: Schema.String, oldValue: Schema.Unknown, newValue: Schema.Unknown })),
  upstream: Schema.Struct({ detailId: Schema.String, userType: Schema.String, modifiedBy: Schema.String })
})

/** The payload of an outside change, every field it has kept (the assertions see what the server sent). */
const payloadOf = (action: ActionRecord) => Schema.decodeUnknownSync(ExternalPayload, { onExcessProperty: "preserve" })(action.payload)

/** An event's data about an action: the action as GET …/actions/{actionId} shows it, every field kept. */
const ActionEventData = Schema.Struct({ action: Schema.Struct({ actionId: Schema.String }) })

let p: Pipeline
let campaigns: ReadonlyArray<UpstreamCampaign>
let next = 0

/** A campaign with a budget no other test in this file touches. */
const freshCampaign = () => {
  const campaign = campaigns[next++]
  if (campaign === undefined) throw new Error("the demo account has too few campaigns for this file")
  return campaign
}

const webUi = (campaignId: string, body: Record<string, unknown>, user: string) => {
  const answer = p.simulator.webUiWrite({
    adAccountId: Number(p.account.upstreamAccountId),
    method: "PUT",
    path: `/v1/campaigns/${campaignId}`,
    body,
    user
  })
  expect(answer.status, JSON.stringify(answer.body)).toBe(200)
}

const ledger = async (origin?: "acs" | "external") =>
  (await p.api("key", (client) =>
    client.actions.listActions({ path: { projectId: p.account.projectId }, urlParams: origin === undefined ? { limit: 500 } : { limit: 500, origin } })
  )).actions

const outsideChangesOf = async (campaignId: string) => (await ledger("external")).filter((a) => payloadOf(a).entity.id === campaignId)

/** A proposal's answer: 201, decoded by the contract's schema (the typed client's proposal methods are not typed). */
const proposed = async (answer: Answer) => {
  expect(answer.status, answer.text).toBe(201)
  return Schema.decodeUnknownSync(ProposalResponse)(answer.body)
}

const waitForOutsideChange = (campaignId: string, what: string) =>
  waitFor(what, () => outsideChangesOf(campaignId), (rows) => rows.length > 0, {
    intervalMs: 250,
    show: (rows) => `${rows.length} rows\n${p.server.logs().slice(-3000)}`
  }).then((rows) => rows[0]!)

/** When the account's change history was last read (ms), or 0. */
const polledAt = async () =>
  Number((await p.sql<{ ms: string | null }>(
    "SELECT (extract(epoch FROM polled_at) * 1000)::bigint AS ms FROM change_history_marks WHERE project_id = $1",
    [p.account.projectId]
  ))[0]?.ms ?? 0)

/** Runs a sync and waits until the change history was read after it. */
const syncNow = async () => {
  const before = Number((await p.sql<{ ms: string }>("SELECT (extract(epoch FROM now()) * 1000)::bigint AS ms"))[0]!.ms)
  const path = { projectId: p.account.projectId }
  // The typed client takes only a 202 as the started sync.
  const { syncId } = await p.api("key", (client) => client.warehouse.startSync({ path }))
  await waitFor(
    `sync ${syncId} to succeed`,
    async () => (await p.api("key", (client) => client.warehouse.getSync({ path: { ...path, syncId } }))).status,
    (status) => status === "succeeded",
    { intervalMs: 250 }
  )
  await waitFor("the change history read after the sync", polledAt, (ms) => ms > before, { intervalMs: 100 })
}

/** External rows naming acs's own API client: there must be none. */
const rowsForAcsWrites = async () =>
  Number((await p.sql<{ n: string }>(
    "SELECT count(*) AS n FROM actions WHERE kind = 'external_change' AND payload -> 'upstream' ->> 'modifiedBy' = $1",
    [p.simulator.credentials.clientId]
  ))[0]?.n)

const rowsForDetail = async (detailId: string) =>
  Number((await p.sql<{ n: string }>("SELECT count(*) AS n FROM actions WHERE upstream_ref = $1", [detailId]))[0]?.n)

beforeAll(async () => {
  // The schedule stays off until its own test, so the first tests see what a sync records.
  p = await startPipeline({ seed: 44, env: { CHANGE_HISTORY_POLL_SECONDS: "0" } })
  campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId)))
    .filter((c) => !c.deleted && c.dailyBudgetMicros !== null && c.status === "ENABLED")
})

afterAll(async () => {
  await p?.close()
})

describe("outside changes in the ledger", () => {
  it("records a web-UI edit after a sync, once, supersedes the acs action it overwrote, and queues that action's revert", async () => {
    const campaign = freshCampaign()
    const prior = campaign.dailyBudgetMicros!
    const cut = Math.round(prior * 0.8)
    const { actionId } = await proposed(
      await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: cut, reason: "trim" })
    )
    expect((await p.settle(actionId)).status).toBe("applied")

    // acs's own write is in the platform's change history, but it is not an outside change.
    await syncNow()
    expect(await outsideChangesOf(campaign.campaignId)).toEqual([])
    expect(await rowsForAcsWrites()).toBe(0)

    webUi(campaign.campaignId, { dailyBudget: { value: { amount: "123.45", currency: "USD" } } }, "web-ui-user@example.com")
    await syncNow()
    const external = await waitForOutsideChange(campaign.campaignId, "the web-UI edit recorded after a sync")
    expect(external).toMatchObject({
      kind: "external_change",
      status: "applied",
      mode: null,
      proposedBy: { kind: "external", id: "web-ui-user@example.com" },
      revertOf: null,
      supersededBy: null
    })
    const payload = payloadOf(external)
    expect(payload.entity).toMatchObject({ type: "campaign", id: campaign.campaignId })
    expect(payload.changes).toContainEqual({ field: "dailyBudgetMicros", oldValue: cut, newValue: 123_450_000 })
    expect(payload.upstream).toMatchObject({ userType: "CUSTOMER", modifiedBy: "web-ui-user@example.com" })
    expect(external.appliedAt).not.toBeNull()
    // It is announced like any change (docs/contract.md 6): an action.external event carrying the ledger row.
    const announced = await waitFor("the action.external event", async () =>
      (await p.api("key", (client) => client.events.listEvents({ urlParams: { type: "action.external", limit: 50 } }))).events
        .map((e) => Schema.decodeUnknownSync(ActionEventData, { onExcessProperty: "preserve" })(e.data))
        .filter((data) => data.action.actionId === external.actionId), (events) => events.length > 0)
    expect(announced).toHaveLength(1)
    expect(announced[0]!.action).toMatchObject({ actionId: external.actionId, kind: "external_change", status: "applied" })

    // Nothing acs wrote through its own API client is an outside change.
    const everyOutside = await ledger("external")
    expect(everyOutside.map((a) => a.proposedBy.id)).not.toContain(p.simulator.credentials.clientId)
    expect(everyOutside.every((a) => a.kind === "external_change" && a.proposedBy.kind === "external")).toBe(true)

    // A second sync reads the same history again: still one row.
    await syncNow()
    expect(await rowsForDetail(payload.upstream.detailId)).toBe(1)
    expect(await outsideChangesOf(campaign.campaignId)).toHaveLength(1)

    const overwritten = await p.api("key", (client) => client.actions.getAction({ path: { projectId: p.account.projectId, actionId } }))
    expect(overwritten).toMatchObject({ status: "applied", supersededBy: external.actionId })

    // Its revert must not overwrite the outside change: it queues, naming it.
    // The typed client decodes a 201 as the revert (a 200 would be its preview).
    const compensation = await p.api("person", (client) =>
      client.actions.revertAction({ path: { projectId: p.account.projectId, actionId }, urlParams: {} }))
    if (!isProposalResponse(compensation)) throw new Error(`a preview where the revert was expected: ${JSON.stringify(compensation)}`)
    expect(compensation).toMatchObject({ mode: "queued", status: "proposed" })
    const reasons = compensation.policyReasons.join(" | ")
    expect(reasons).toMatch(/superseded: changed outside acs by web-ui-user@example\.com \(web UI\) at /)
    expect(reasons).toContain(external.actionId)
    expect((await p.action(compensation.actionId)).status).toBe("proposed")
    expect((await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaign.campaignId))).dailyBudgetMicros).toBe(123_450_000)

    // NotRevertible is the 422 `not_revertible` envelope.
    const refused = await p.api("person", (client) =>
      Effect.flip(client.actions.revertAction({ path: { projectId: p.account.projectId, actionId: external.actionId }, urlParams: {} })))
    expect(refused).toMatchObject({ _tag: "NotRevertible" })
  })

  it("filters the ledger by origin", async () => {
    const external = await ledger("external")
    const acs = await ledger("acs")
    const all = await ledger()
    expect(external.length).toBeGreaterThan(0)
    expect(acs.length).toBeGreaterThan(0)
    expect(external.every((a) => a.kind === "external_change")).toBe(true)
    expect(acs.some((a) => a.kind === "external_change")).toBe(false)
    expect(new Set([...external, ...acs].map((a) => a.actionId))).toEqual(new Set(all.map((a) => a.actionId)))
    const invalid = await p.as("key", "GET", `/accounts/${p.account.projectId}/actions?origin=elsewhere`)
    expect(invalid.status).toBe(400)

    // RPC and MCP list the ledger through the same operation: they take `origin` too.
    const viaRpc = await Effect.runPromise(
      Effect.flatMap(AcsClient, (client) =>
        client.listActions({ path: { projectId: p.account.projectId }, urlParams: { limit: 500, origin: "external" } })).pipe(
          Effect.provide(AcsClient.layer({ url: p.server.baseUrl, key: BOOTSTRAP_KEY })),
          Effect.scoped
        )
    )
    expect(viaRpc.actions.map((a) => a.actionId)).toEqual(external.map((a) => a.actionId))
    const mcp = new Client({ name: "outside-changes-test", version: "1.0.0" })
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${p.server.baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` } }
    }))
    try {
      const result = (await mcp.callTool({
        name: "platform_list_actions",
        arguments: { projectId: p.account.projectId, limit: 500, origin: "acs" }
      })) as CallToolResult
      expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false)
      const viaMcp = (result.structuredContent as { actions: Array<{ actionId: string }> }).actions
      expect(viaMcp.map((a) => a.actionId)).toEqual(acs.map((a) => a.actionId))
    } finally {
      await mcp.close()
    }
  })

  it("demotes an approved action whose entity was changed in the web UI after the proposal, naming who and when", async () => {
    const campaign = freshCampaign()
    const { actionId } = await proposed(await p.propose("budget-change", {
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.9),
      reason: "trim"
    }, { as: "key" }))
    expect((await p.action(actionId)).status).toBe("proposed")

    webUi(campaign.campaignId, { dailyBudget: { value: { amount: "77.00", currency: "USD" } } }, "drift-person@example.com")
    // The typed client takes only a 200 as the approval.
    const approved = await p.api("approver", (client) => client.actions.approveAction({ path: { projectId: p.account.projectId, actionId } }))
    expect(approved.actionId).toBe(actionId)
    const demoted = await waitFor(
      `action ${actionId} demoted for drift`,
      () => p.action(actionId),
      (a) => a.status === "proposed" && a.policyReasons.some((r) => r.startsWith("drift:")),
      { intervalMs: 100, show: (a) => `${a.status} ${a.policyReasons.join(" | ")}\n${p.server.logs().slice(-3000)}` }
    )
    expect(demoted.policyReasons.at(-1)).toMatch(
      /^drift: the daily budget of campaign .*; changed outside acs by drift-person@example\.com \(web UI\) at \d{4}-\d\d-\d\dT/
    )
    expect((await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaign.campaignId))).dailyBudgetMicros).toBe(77_000_000)
  })

  it("records outside changes on its own schedule without a sync, once across two instances", async () => {
    await p.restart({ CHANGE_HISTORY_POLL_SECONDS: "1" })
    const twin = await p.startTwin({ CHANGE_HISTORY_POLL_SECONDS: "1", WORKER_CONCURRENCY: "0" })
    try {
      const syncsBefore = await p.sql<{ n: string }>("SELECT count(*) AS n FROM syncs WHERE project_id = $1", [p.account.projectId])
      const campaign = freshCampaign()
      webUi(campaign.campaignId, { name: "renamed in the web UI", status: "PAUSED" }, "scheduled@example.com")
      const external = await waitForOutsideChange(campaign.campaignId, "the web-UI edit recorded by the schedule")
      expect(external).toMatchObject({ kind: "external_change", proposedBy: { kind: "external", id: "scheduled@example.com" } })
      const payload = payloadOf(external)
      expect(payload.changes).toEqual(expect.arrayContaining([
        { field: "name", oldValue: campaign.name, newValue: "renamed in the web UI" },
        { field: "status", oldValue: "ENABLED", newValue: "PAUSED" }
      ]))
      const syncsAfter = await p.sql<{ n: string }>("SELECT count(*) AS n FROM syncs WHERE project_id = $1", [p.account.projectId])
      expect(syncsAfter[0]?.n, "no sync was needed").toBe(syncsBefore[0]?.n)

      // Both instances keep polling the same history: let several passes go by, then it is still one row.
      const recordedAt = Date.parse(external.created_at)
      await waitFor("three more seconds of polls after the row", polledAt, (ms) => ms > recordedAt + 3_000, { intervalMs: 250 })
      expect(await rowsForDetail(payload.upstream.detailId)).toBe(1)
      expect(await outsideChangesOf(campaign.campaignId)).toHaveLength(1)
    } finally {
      await twin.stop()
    }
  })
})
