/**
 * One agent session with a changeset, end to end (docs/contract.md 4.3, docs/decisions/changesets.md): an agent
 * with its own write key, through the MCP SDK's client at /mcp, reads the account, opens a changeset and proposes
 * 30 changes into it with `changesetId` (keyword bids and pauses on several campaigns and ad groups, and two
 * campaign budgets), submits it and learns it is queued for a person; the person, signed in to the console in
 * headless Chromium, sees it as one card with its aggregate impact and approves it once; the worker applies it and
 * the simulator holds the new values; the person reverts it from the ledger's revert confirmation and the
 * simulator holds the prior values again; the agent's platform_get_changeset shows both changesets' final states.
 * No serious or critical axe-core violation on the pages visited.
 */
import { ProposalResponse } from "@acs/domain/Actions"
import { Changeset, ChangesetDetail } from "@acs/domain/Changesets"
import { CampaignRow, KeywordRow } from "@acs/domain/Warehouse"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { Schema } from "effect"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { seriousViolations } from "./support/browser.ts"
import { startConsoleWorld } from "./support/consoleChangesetWorld.ts"
import type { Pipeline } from "./support/pipeline.ts"
import { waitFor, WAIT_MS } from "./support/wait.ts"

let p: Pipeline
let browser: Browser
let page: Page
let agent: Client

beforeAll(async () => {
  ;({ browser, p, page } = await startConsoleWorld(68))
  // The agent's own key, as an operator gives one to an agent: write, no approval grant.
  const created = await p.api("key", (client) => client.keys.createKey({ payload: { name: "campaign agent", scope: "write" } }))
  agent = new Client({ name: "acs-agent-session-test", version: "1.0.0" })
  await agent.connect(new StreamableHTTPClientTransport(new URL(`${p.server.baseUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${created.secret}` } }
  }))
})

afterAll(async () => {
  await agent?.close().catch(() => undefined)
  await browser?.close()
  await p?.close()
})

/** A tool call that must succeed, its structured answer decoded with the contract's schema. */
const callTool = async <A, I>(schema: Schema.Schema<A, I>, name: string, args: Record<string, unknown>): Promise<A> => {
  // Parsed: the SDK's type also admits the protocol's older `toolResult` answer, which this server never sends.
  const result = CallToolResultSchema.parse(await agent.callTool({ name, arguments: args }))
  const text = result.content[0]?.type === "text" ? result.content[0].text : ""
  expect(result.isError ?? false, `${name}: ${text}`).toBe(false)
  return Schema.decodeUnknownSync(schema)(result.structuredContent)
}

/** Where a changeset's polling ends, as platform_get_changeset's description says. */
const ENDED: ReadonlySet<string> = new Set(["applied", "partially_applied", "failed", "rejected", "expired", "reverted"])

const Campaigns = Schema.Struct({ campaigns: Schema.Array(CampaignRow) })
const Keywords = Schema.Struct({ keywords: Schema.Array(KeywordRow) })

const usd = (micros: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" }).format(micros / 1_000_000)
const cents = (micros: number) => Math.round(micros / 10_000) * 10_000

/** What the session changes, entity by entity: the value before and the value the agent proposes. */
interface Change {
  readonly entity: string
  readonly before: string | number | null
  readonly after: string | number
}

/** The touched entities' values as Apple has them now (the real client, over HTTP to the simulator). */
const upstreamValues = async (changes: ReadonlyArray<Change>, campaignIds: ReadonlySet<string>): Promise<Map<string, string | number | null>> => {
  const accountId = p.account.upstreamAccountId
  const values = new Map<string, string | number | null>()
  for (const c of await p.run(p.upstream.campaigns(accountId))) values.set(`budget ${c.campaignId}`, c.dailyBudgetMicros)
  for (const campaignId of campaignIds) {
    for (const k of await p.run(p.upstream.campaignKeywords(accountId, campaignId))) {
      values.set(`bid ${k.keywordId}`, k.bidMicros)
      values.set(`status ${k.keywordId}`, k.status)
    }
  }
  return new Map(changes.map((c) => [c.entity, values.get(c.entity) ?? null]))
}

const expectAccessible = async (what: string) => {
  const violations = await seriousViolations(page)
  expect(violations, `${what}: serious or critical axe-core violations`).toEqual([])
}

describe("an agent's changeset session", () => {
  it("the agent opens a changeset, proposes 30 changes into it and submits; a person approves it once in the console; it applies; the person reverts it", async () => {
    const projectId = p.account.projectId
    const title = "Weekly bid pass"

    // An agent's write key approves and reverts nothing (docs/decisions/changesets.md): those are the person's.
    const toolNames = (await agent.listTools()).tools.map((t) => t.name)
    expect(toolNames).toEqual(expect.arrayContaining(["platform_open_changeset", "platform_submit_changeset", "platform_get_changeset"]))
    expect(toolNames).not.toContain("platform_approve_changeset")
    expect(toolNames).not.toContain("platform_revert_changeset")

    // The agent reads the account, then picks what to change.
    const { campaigns } = await callTool(Campaigns, "platform_list_campaigns", { projectId, limit: 1000 })
    const manual = campaigns.filter((c) =>
      c.status === "ENABLED" && c.bidStrategy === "MANUAL_CPT" && c.dailyBudgetMicros !== null && c.dailyBudgetMicros > 0
    )
    const { keywords } = await callTool(Keywords, "platform_list_keywords", { projectId, limit: 1000 })
    const manualIds = new Set(manual.map((c) => c.campaignId))
    const eligible = keywords.filter((k) => manualIds.has(k.campaignId) && k.status === "ACTIVE" && k.bidMicros !== null)
    // Round-robin over the campaigns, so the changes spread over several campaigns and ad groups.
    const byCampaign = [...manualIds].map((id) => eligible.filter((k) => k.campaignId === id))
    const picked: Array<(typeof eligible)[number]> = []
    for (let i = 0; picked.length < 28 && byCampaign.some((list) => i < list.length); i++) {
      for (const list of byCampaign) if (i < list.length && picked.length < 28) picked.push(list[i]!)
    }
    expect(picked).toHaveLength(28)
    const [raised, trimmed] = manual
    expect(trimmed).toBeDefined()

    const opened = await callTool(Changeset, "platform_open_changeset", { projectId, title, reason: "bids toward the CPA target; two budgets follow the spend" })
    expect(opened).toMatchObject({ status: "open", title })
    const { changesetId } = opened

    const changes: Array<Change> = []
    const members: Array<ProposalResponse> = []
    const propose = async (tool: string, args: Record<string, unknown>, change: Change) => {
      const member = await callTool(ProposalResponse, tool, { projectId, changesetId, ...args })
      expect(member.status, member.summary).toBe("proposed")
      members.push(member)
      changes.push(change)
    }
    for (const [i, k] of picked.entries()) {
      if (i % 7 === 6) {
        await propose("platform_propose_keyword_status", { keywordIds: [k.keywordId], status: "PAUSED", reason: "no installs in 30 days" }, {
          entity: `status ${k.keywordId}`,
          before: "ACTIVE",
          after: "PAUSED"
        })
      } else {
        const newBidMicros = cents(k.bidMicros! * (i % 2 === 0 ? 1.15 : 0.9))
        await propose("platform_propose_keyword_bid_change", { keywordIds: [k.keywordId], newBidMicros, reason: "bid toward the CPA target" }, {
          entity: `bid ${k.keywordId}`,
          before: k.bidMicros,
          after: newBidMicros
        })
      }
    }
    for (const [campaign, factor] of [[raised!, 1.2], [trimmed!, 0.9]] as const) {
      const newDailyBudgetMicros = cents(campaign.dailyBudgetMicros! * factor)
      await propose("platform_propose_budget_change", { campaignId: campaign.campaignId, newDailyBudgetMicros, reason: "follow the spend" }, {
        entity: `budget ${campaign.campaignId}`,
        before: campaign.dailyBudgetMicros,
        after: newDailyBudgetMicros
      })
    }
    expect(members).toHaveLength(30)
    const touchedCampaigns = new Set(picked.map((k) => k.campaignId))
    expect(touchedCampaigns.size).toBeGreaterThanOrEqual(3)
    expect(new Set(picked.map((k) => k.adGroupId)).size).toBeGreaterThanOrEqual(3)
    const before = new Map(changes.map((c) => [c.entity, c.before]))
    const after = new Map(changes.map((c) => [c.entity, c.after]))
    // What the agent read from the warehouse is what Apple has.
    expect(await upstreamValues(changes, touchedCampaigns)).toEqual(before)

    const submitted = await callTool(Changeset, "platform_submit_changeset", { projectId, changesetId })
    const budgetDelta = changes.filter((c) => c.entity.startsWith("budget ")).reduce((sum, c) => sum + Number(c.after) - Number(c.before), 0)
    expect(submitted).toMatchObject({
      status: "queued",
      members: { total: 30, pending: 30 },
      impact: { dailyBudgetDeltaMicros: budgetDelta, byKind: { keyword_bid_change: 24, keyword_status: 4, budget_change: 2 } },
      decision: { mode: "queued" }
    })
    expect(submitted.decision!.policyReasons.join("\n")).toMatch(/API key/)
    expect(budgetDelta).not.toBe(0)

    // The person: one card in Approvals (the page was open before the submit), with the whole's impact.
    const card = page.locator(`article[data-changeset-id="${changesetId}"]`)
    await card.waitFor({ timeout: WAIT_MS })
    await expect(page.locator("article[data-changeset-id]").count()).resolves.toBe(1)
    for (const member of members) await expect(page.locator(`article[data-action-id="${member.actionId}"]`).count()).resolves.toBe(0)
    await card.getByRole("heading", { level: 2, name: title }).waitFor({ timeout: WAIT_MS })
    await card.getByText("changeset of 30").waitFor({ timeout: WAIT_MS })
    await expect(card.locator(".budget-delta").innerText()).resolves.toBe(`${budgetDelta > 0 ? "+" : "−"}${usd(Math.abs(budgetDelta))}`)
    for (const line of ["24 × Keyword bid change", "4 × Keyword status", "2 × Budget change"]) {
      await card.locator(".by-kind").getByText(line, { exact: true }).waitFor({ timeout: WAIT_MS })
    }
    const impactByCampaign = card.getByRole("region", { name: `Impact of ${title} by campaign` })
    await expect(impactByCampaign.getByRole("row").count()).resolves.toBe(1 + submitted.impact!.byCampaign.length)
    for (const campaign of [raised!, trimmed!]) {
      const delta = Number(after.get(`budget ${campaign.campaignId}`)) - campaign.dailyBudgetMicros!
      const row = impactByCampaign.getByRole("row").filter({ has: page.getByRole("rowheader", { name: campaign.name, exact: true }) })
      await row.getByRole("cell", { name: `${delta > 0 ? "+" : "−"}${usd(Math.abs(delta))}`, exact: true }).waitFor({ timeout: WAIT_MS })
    }
    await card.getByText("Members (30)").waitFor({ timeout: WAIT_MS })
    const shown = await card.locator(".members li[data-action-id]").evaluateAll((items) => items.map((li) => li.getAttribute("data-action-id")))
    expect(new Set(shown)).toEqual(new Set(members.map((m) => m.actionId)))
    await expectAccessible("approvals with the agent's changeset")

    await card.getByRole("button", { name: "Approve changeset" }).click()
    await card.waitFor({ state: "detached", timeout: WAIT_MS })
    await page.getByRole("status").filter({ hasText: `Approved the changeset “${title}”.` }).waitFor({ timeout: WAIT_MS })

    // The agent polls its changeset, as platform_submit_changeset's description says, until the apply ends.
    const getChangeset = (id: string) => callTool(ChangesetDetail, "platform_get_changeset", { projectId, changesetId: id })
    const applied = await waitFor("the agent's changeset applied", () => getChangeset(changesetId),
      (d) => ENDED.has(d.changeset.status), { intervalMs: 250, show: (d) => JSON.stringify(d.changeset) })
    expect(applied.changeset).toMatchObject({ status: "applied", decidedBy: { kind: "person" }, members: { total: 30, applied: 30 } })
    expect(await upstreamValues(changes, touchedCampaigns)).toEqual(after)

    // The person reverts it from the ledger, after reading the revert plan.
    const recent = page.locator(`.recent li[data-changeset-id="${changesetId}"]`)
    await recent.getByRole("link", { name: "ledger" }).click()
    await page.getByRole("heading", { level: 1, name: "Ledger" }).waitFor({ timeout: WAIT_MS })
    const group = page.locator(`li.changeset-group[data-changeset-id="${changesetId}"]`)
    await group.locator(".badge").first().getByText("applied", { exact: true }).waitFor({ timeout: WAIT_MS })
    await group.getByRole("button", { name: "Revert changeset…" }).click()
    const dialog = page.getByRole("dialog", { name: "Revert this changeset?" })
    await dialog.getByText("The revert undoes every applied member.").waitFor({ timeout: WAIT_MS })
    await expect(dialog.locator("tr[data-verdict=revertible]").count()).resolves.toBe(30)
    await expectAccessible("the revert confirmation of the agent's changeset")
    await dialog.getByRole("button", { name: "Revert", exact: true }).click()
    await page.getByRole("status").filter({ hasText: `Reverting “${title}”: 30 members undone by changeset “Revert of ${title}”` })
      .waitFor({ timeout: WAIT_MS })

    // The agent reads the end of it: its changeset reverted by the compensating one, which applied.
    const reverted = await waitFor("the agent's changeset reverted", () => getChangeset(changesetId),
      (d) => d.changeset.status === "reverted", { intervalMs: 250, show: (d) => JSON.stringify(d.changeset) })
    expect(reverted.memberActions.map((m) => m.status)).toEqual(Array.from({ length: 30 }, () => "reverted"))
    const revertId = reverted.changeset.revertedBy!
    const revert = await waitFor("the revert applied", () => getChangeset(revertId),
      (d) => ENDED.has(d.changeset.status), { intervalMs: 250, show: (d) => JSON.stringify(d.changeset) })
    expect(revert.changeset).toMatchObject({ status: "applied", revertOf: changesetId, title: `Revert of ${title}`, members: { total: 30, applied: 30 } })
    expect(new Set(revert.memberActions.map((m) => m.revertOf))).toEqual(new Set(members.map((m) => m.actionId)))
    expect(await upstreamValues(changes, touchedCampaigns)).toEqual(before)
  })
})
