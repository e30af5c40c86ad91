/**
 * Changesets in the console, in a real browser (docs/contract.md 4.3, docs/decisions/changesets.md): headless
 * Chromium from Debian driven by playwright-core against the real server, the simulator and PostgreSQL. A key opens a
 * changeset of budget changes and submits it over REST; the person sees it as ONE card (the daily-budget impact in
 * the account's currency, members by kind and campaign, the policy's reasons, each member's diff), approves the
 * plan it shows, and finds the members under their changeset in the ledger. A plan the account moved under is
 * refused in plain words naming the member that moved. No serious or critical axe-core violation, at 1280 px and
 * at phone width. The run writes the picture of a changeset's card in docs/using-the-api.md (docs/console-changeset.png).
 *
 * A changeset's revert, in the same world's second account (the tests above use up the first one's campaigns): a
 * key's changeset of three budget changes is approved and applied by the worker; one campaign is then changed in
 * Apple's web UI. From the ledger the person opens the revert, which shows its plan first (two members undone, the
 * moved one left alone with why, partial coverage), confirms it, and the two budgets go back while the moved one
 * keeps the outside value. No serious or critical axe-core violation.
 */
import * as Path from "node:path"
import type { ProposalResponse } from "@acs/domain/Actions"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { seriousViolations } from "./support/browser.ts"
import { budgetedCampaigns, type Campaign, recorded, startConsoleWorld, takeCampaign } from "./support/consoleChangesetWorld.ts"
import type { Pipeline } from "./support/pipeline.ts"
import { repoRoot } from "./support/server.ts"
import { waitFor, WAIT_MS } from "./support/wait.ts"

let p: Pipeline
let browser: Browser
let page: Page
let campaigns: Array<Campaign>

const path = () => ({ projectId: p.account.projectId })

const freshCampaign = () => takeCampaign(campaigns)

const usd = (micros: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" }).format(micros / 1_000_000)

/** The key opens a changeset of budget changes (each campaign's budget times `factor`) and submits it. */
const openAndSubmit = async (title: string, reason: string, members: ReadonlyArray<Campaign>, factor: number) => {
  const opened = await p.api("key", (client) => client.changesets.openChangeset({ path: path(), payload: { title, reason } }))
  const added: Array<{ campaign: Campaign; action: ProposalResponse; newDailyBudgetMicros: number }> = []
  for (const campaign of members) {
    const newDailyBudgetMicros = Math.round((campaign.dailyBudgetMicros * factor) / 10_000) * 10_000
    const action = await p.api("key", (client) =>
      client.proposals.proposeBudgetChange({
        path: path(),
        payload: { campaignId: campaign.campaignId, newDailyBudgetMicros, reason: `${title}: ${campaign.name}`, changesetId: opened.changesetId },
        urlParams: {},
        headers: {}
      })).then(recorded)
    added.push({ campaign, action, newDailyBudgetMicros })
  }
  const submitted = await p.api("key", (client) =>
    client.changesets.submitChangeset({ path: { ...path(), changesetId: opened.changesetId }, urlParams: {} }))
  expect(submitted.status).toBe("queued")
  return { changeset: submitted, members: added }
}

const changesetStatus = (changesetId: string) =>
  p.api("key", (client) => client.changesets.getChangeset({ path: { ...path(), changesetId } })).then((d) => d.changeset.status)

const expectAccessible = async (what: string) => {
  const violations = await seriousViolations(page)
  expect(violations, `${what}: serious or critical axe-core violations`).toEqual([])
}

const changesetCard = (changesetId: string) => page.locator(`article[data-changeset-id="${changesetId}"]`)

/** The revert's test works in the second account: the tests above use up the first one's campaigns. */
const revertPath = () => ({ projectId: p.secondAccount.projectId })

const changesetOf = (changesetId: string) =>
  p.api("key", (client) => client.changesets.getChangeset({ path: { ...revertPath(), changesetId } })).then((d) => d.changeset)

/** The second account's campaigns' daily budgets as Apple has them now. */
const upstreamBudgets = async (): Promise<ReadonlyMap<string, number | null>> =>
  new Map((await p.run(p.upstream.campaigns(p.secondAccount.upstreamAccountId))).map((c) => [c.campaignId, c.dailyBudgetMicros] as const))

beforeAll(async () => {
  ;({ browser, campaigns, p, page } = await startConsoleWorld(62))
})

afterAll(async () => {
  await browser?.close()
  await p?.close()
})

describe("changesets in the console", () => {
  it("shows a key's submitted changeset as one card with its impact and members; the person approves its plan; the ledger holds the members under it", async () => {
    const members = [freshCampaign(), freshCampaign(), freshCampaign()]
    const { changeset, members: added } = await openAndSubmit("Raise three budgets", "CPA well below target on all three", members, 1.2)
    const card = changesetCard(changeset.changesetId)
    // Live: the page was open before the submit.
    await card.waitFor({ timeout: WAIT_MS })
    await expect(page.locator("article[data-changeset-id]").count()).resolves.toBe(1)
    // Members are never cards of their own.
    for (const { action } of added) await expect(page.locator(`article[data-action-id="${action.actionId}"]`).count()).resolves.toBe(0)

    await card.getByRole("heading", { level: 2, name: "Raise three budgets" }).waitFor({ timeout: WAIT_MS })
    await card.getByText("CPA well below target on all three").waitFor({ timeout: WAIT_MS })
    await card.getByText(/Opened by/).waitFor({ timeout: WAIT_MS })
    const delta = added.reduce((sum, m) => sum + m.newDailyBudgetMicros - m.campaign.dailyBudgetMicros, 0)
    expect(changeset.impact?.dailyBudgetDeltaMicros).toBe(delta)
    await expect(card.locator(".budget-delta").innerText()).resolves.toBe(`+${usd(delta)}`)
    await card.getByText("3 × Budget change").waitFor({ timeout: WAIT_MS })
    const byCampaign = card.getByRole("region", { name: "Impact of Raise three budgets by campaign" })
    for (const m of added) {
      const row = byCampaign.getByRole("row").filter({ has: page.getByRole("rowheader", { name: m.campaign.name, exact: true }) })
      await row.getByRole("cell", { name: `+${usd(m.newDailyBudgetMicros - m.campaign.dailyBudgetMicros)}` }).waitFor({ timeout: WAIT_MS })
    }
    // The policy's reasons for the whole, as the server decided them.
    for (const reason of changeset.decision!.policyReasons) await card.getByText(reason, { exact: true }).waitFor({ timeout: WAIT_MS })

    // Members by campaign, each diff behind a disclosure.
    const first = added[0]!
    await card.getByRole("heading", { level: 4, name: `Campaign ${first.campaign.name}` }).waitFor({ timeout: WAIT_MS })
    const member = card.locator(`li[data-action-id="${first.action.actionId}"]`)
    await expect(member.getByRole("cell", { name: usd(first.newDailyBudgetMicros) }).isVisible()).resolves.toBe(false)
    await member.locator("summary", { hasText: first.action.summary }).click()
    await member.getByRole("cell", { name: usd(first.campaign.dailyBudgetMicros) }).waitFor({ timeout: WAIT_MS })
    await member.getByRole("cell", { name: usd(first.newDailyBudgetMicros) }).waitFor({ timeout: WAIT_MS })
    await card.getByText(`Plan ${changeset.planHash!.replace(/^sha256:/, "").slice(0, 12)}`).waitFor({ timeout: WAIT_MS })
    await card.screenshot({ path: Path.join(repoRoot, "docs", "console-changeset.png") })
    await expectAccessible("approvals with a changeset")
    await page.setViewportSize({ width: 390, height: 844 })
    await expectAccessible("approvals with a changeset at phone width")
    await page.setViewportSize({ width: 1280, height: 900 })

    await card.getByRole("button", { name: "Approve changeset" }).click()
    await card.waitFor({ state: "detached", timeout: WAIT_MS })
    await page.getByRole("status").filter({ hasText: "Approved the changeset “Raise three budgets”." }).waitFor({ timeout: WAIT_MS })
    const recent = page.locator(`.recent li[data-changeset-id="${changeset.changesetId}"]`)
    await recent.getByText(/^(approved|applying|applied)$/).waitFor({ timeout: WAIT_MS })
    expect(["approved", "applying", "applied"]).toContain(await changesetStatus(changeset.changesetId))

    // The ledger: one row for the changeset, its members under it, none at the top level.
    await recent.getByRole("link", { name: "ledger" }).click()
    await page.getByRole("heading", { level: 1, name: "Ledger" }).waitFor({ timeout: WAIT_MS })
    const group = page.locator(`li.changeset-group[data-changeset-id="${changeset.changesetId}"]`)
    await group.getByRole("heading", { level: 2, name: "Raise three budgets" }).waitFor({ timeout: WAIT_MS })
    await group.locator(".badge").first().getByText(/^(approved|applying|applied)$/).waitFor({ timeout: WAIT_MS })
    await group.getByText("Members (3)").click()
    for (const { action } of added) {
      await group.locator(`li[data-action-id="${action.actionId}"]`).getByRole("heading", { name: action.summary }).waitFor({ timeout: WAIT_MS })
      await expect(page.locator(`#main section > ol.timeline > li[data-action-id="${action.actionId}"]`).count()).resolves.toBe(0)
    }
    await expectAccessible("ledger with a changeset")
  })

  it("refuses in plain words a plan the account moved under, naming the member that moved; resubmitted, it is approved", async () => {
    await page.goto(`${p.server.baseUrl}/#/approvals`)
    await page.getByRole("heading", { level: 1, name: "Approvals" }).waitFor({ timeout: WAIT_MS })
    const [a, b] = [freshCampaign(), freshCampaign()]
    const { changeset, members: added } = await openAndSubmit("Trim two budgets", "Spend ahead of plan", [a, b], 0.9)
    const card = changesetCard(changeset.changesetId)
    await card.waitFor({ timeout: WAIT_MS })

    // Someone changes the first member's campaign in Apple's web UI; the change history brings it into the ledger.
    const outside = Math.round((a.dailyBudgetMicros * 0.8) / 10_000) * 10_000
    p.setBudgetOutsideAcs(a.campaignId, outside)
    await p.api("key", (client) => client.warehouse.startSync({ path: path() }))
    await waitFor("the outside change in the ledger", () =>
      p.sql<{ n: string }>("SELECT count(*) AS n FROM actions WHERE kind = 'external_change' AND payload->'entity'->>'id' = $1", [a.campaignId]),
      (rows) => Number(rows[0]!.n) > 0, { intervalMs: 250 })

    await card.getByRole("button", { name: "Approve changeset" }).click()
    const refusal = card.getByRole("alert")
    await refusal.getByText(/the account changed since this changeset was proposed/).waitFor({ timeout: WAIT_MS })
    const moved = refusal.locator(`li[data-action-id="${added[0]!.action.actionId}"]`)
    await moved.getByText(added[0]!.action.summary).waitFor({ timeout: WAIT_MS })
    await moved.getByText(/changed outside acs by web-ui-user@example.com/).waitFor({ timeout: WAIT_MS })
    await expect(refusal.locator("li").count()).resolves.toBe(1)
    await expectAccessible("a changeset's stale plan refused")
    expect(await changesetStatus(changeset.changesetId)).toBe("queued")

    // The key submits it again: a new plan, shown on the card without a reload, and the approval holds.
    const resubmitted = await p.api("key", (client) =>
      client.changesets.submitChangeset({ path: { ...path(), changesetId: changeset.changesetId }, urlParams: {} }))
    expect(resubmitted.planHash).not.toBe(changeset.planHash)
    await card.getByText(`Plan ${resubmitted.planHash!.replace(/^sha256:/, "").slice(0, 12)}`).waitFor({ timeout: WAIT_MS })
    await card.getByRole("button", { name: "Approve changeset" }).click()
    await card.waitFor({ state: "detached", timeout: WAIT_MS })
    expect(["approved", "applying", "applied"]).toContain(await changesetStatus(changeset.changesetId))
  })

  it("tells the person a changeset they opened needs another approver, as the server would answer, and lets them withdraw it once", async () => {
    await page.goto(`${p.server.baseUrl}/#/approvals`)
    await page.getByRole("heading", { level: 1, name: "Approvals" }).waitFor({ timeout: WAIT_MS })
    const campaign = freshCampaign()
    const opened = await p.api("person", (client) => client.changesets.openChangeset({ path: path(), payload: { title: "My own raise" } }))
    await p.api("person", (client) =>
      client.proposals.proposeBudgetChange({
        path: path(),
        payload: {
          campaignId: campaign.campaignId,
          newDailyBudgetMicros: Math.round((campaign.dailyBudgetMicros * 1.1) / 10_000) * 10_000,
          reason: "mine",
          changesetId: opened.changesetId
        },
        urlParams: {},
        headers: {}
      }))
    const submitted = await p.api("person", (client) =>
      client.changesets.submitChangeset({ path: { ...path(), changesetId: opened.changesetId }, urlParams: {} }))
    // A raise without a CPA target band queues, even for a person.
    expect(submitted.status).toBe("queued")
    const card = changesetCard(opened.changesetId)
    await card.getByRole("note").getByText("You proposed this change yourself: another approver must approve it (you may still withdraw it).")
      .waitFor({ timeout: WAIT_MS })
    await expect(card.getByRole("button", { name: "Approve changeset" }).count()).resolves.toBe(0)
    // The server agrees: the person's approval is refused by four eyes.
    const refused = await p.as("person", "POST", `/accounts/${p.account.projectId}/changesets/${opened.changesetId}/approve`, {
      planHash: submitted.planHash
    })
    expect(refused.status).toBe(403)
    await expectAccessible("the person's own changeset")

    await card.getByRole("button", { name: "Withdraw…" }).click()
    const dialog = page.getByRole("dialog", { name: "Reject this change?" })
    await dialog.getByText("Changeset “My own raise” and its 1 member").waitFor({ timeout: WAIT_MS })
    await dialog.getByLabel("Reason (the proposer sees it)").fill("not now")
    await dialog.getByRole("button", { name: "Reject" }).click()
    await card.waitFor({ state: "detached", timeout: WAIT_MS })
    await page.locator(`.recent li[data-changeset-id="${opened.changesetId}"]`).getByText("rejected", { exact: true }).waitFor({ timeout: WAIT_MS })
    const detail = await p.api("key", (client) => client.changesets.getChangeset({ path: { ...path(), changesetId: opened.changesetId } }))
    expect(detail.changeset).toMatchObject({ status: "rejected", decisionReason: "not now" })
    expect(detail.memberActions.map((m) => m.status)).toEqual(["rejected"])
  })
})

describe("a high-risk changeset in the console", () => {
  it("says who approved it first and that a second person must, and lets the person give the second approval", async () => {
    await page.goto(`${p.server.baseUrl}/#/approvals`)
    await page.getByRole("heading", { level: 1, name: "Approvals" }).waitFor({ timeout: WAIT_MS })
    // A 30 % raise is past the default 25 % high-risk line (of any campaign, as the warehouse has it now: its
    // changeset is approved, and whatever its apply meets is not this test's).
    const [campaign] = await budgetedCampaigns(p, p.account.projectId)
    const { changeset } = await openAndSubmit("One big raise", "launch week", [campaign!], 1.3)
    expect(changeset.decision).toMatchObject({ riskTier: "high" })
    const first = await p.api("approver", (client) =>
      client.changesets.approveChangeset({ path: { ...path(), changesetId: changeset.changesetId }, payload: { planHash: changeset.planHash! } }))
    expect(first).toMatchObject({ status: "queued", approvals: [{ by: { kind: "key" } }] })

    const card = changesetCard(changeset.changesetId)
    await card.getByRole("note").getByText(/^Approved by .+ \(.+\): a high-risk changeset needs a second person to approve it\.$/)
      .waitFor({ timeout: WAIT_MS })
    await expectAccessible("a high-risk changeset approved once")
    await card.getByRole("button", { name: "Approve changeset" }).click()
    await card.waitFor({ state: "detached", timeout: WAIT_MS })
    const decided = await p.api("key", (client) => client.changesets.getChangeset({ path: { ...path(), changesetId: changeset.changesetId } }))
    expect(decided.changeset.approvals.map((a) => a.by.kind)).toEqual(["key", "person"])
    expect(decided.changeset.status).not.toBe("queued")
  })
})

describe("a changeset's revert in the console", () => {
  it("shows the revert plan (undone, moved since and left alone, coverage), reverts what can be, and leaves the moved member alone", async () => {
    const members = (await budgetedCampaigns(p, p.secondAccount.projectId)).slice(0, 3)
    expect(members).toHaveLength(3)
    const opened = await p.api("key", (client) => client.changesets.openChangeset({ path: revertPath(), payload: { title: "Lift three budgets" } }))
    const added: Array<ProposalResponse> = []
    for (const campaign of members) {
      added.push(await p.api("key", (client) =>
        client.proposals.proposeBudgetChange({
          path: revertPath(),
          payload: {
            campaignId: campaign.campaignId,
            newDailyBudgetMicros: Math.round((campaign.dailyBudgetMicros * 1.1) / 10_000) * 10_000,
            reason: "lift",
            changesetId: opened.changesetId
          },
          urlParams: {},
          headers: {}
        })).then(recorded))
    }
    const submitted = await p.api("key", (client) =>
      client.changesets.submitChangeset({ path: { ...revertPath(), changesetId: opened.changesetId }, urlParams: {} }))
    await p.api("person", (client) =>
      client.changesets.approveChangeset({ path: { ...revertPath(), changesetId: opened.changesetId }, payload: { planHash: submitted.planHash! } }))
    await waitFor("the changeset applied", () => changesetOf(opened.changesetId), (c) => c.status === "applied")

    // The first campaign is changed in Apple's web UI since acs wrote it.
    const [moved, ...kept] = members as [Campaign, Campaign, Campaign]
    const outside = Math.round((moved.dailyBudgetMicros * 0.7) / 10_000) * 10_000
    p.setBudgetOutsideAcs(moved.campaignId, outside, p.secondAccount)

    await page.goto(`${p.server.baseUrl}/#/ledger/${p.secondAccount.projectId}`)
    await page.getByRole("heading", { level: 1, name: "Ledger" }).waitFor({ timeout: WAIT_MS })
    const group = page.locator(`li.changeset-group[data-changeset-id="${opened.changesetId}"]`)
    await group.locator(".badge").first().getByText("applied", { exact: true }).waitFor({ timeout: WAIT_MS })
    await group.getByRole("button", { name: "Revert changeset…" }).click()

    const dialog = page.getByRole("dialog", { name: "Revert this changeset?" })
    await dialog.getByText("The revert undoes some members only; the rest stay as they are.").waitFor({ timeout: WAIT_MS })
    const conflicted = dialog.locator(`tr[data-action-id="${added[0]!.actionId}"]`)
    await expect(conflicted.getAttribute("data-verdict")).resolves.toBe("conflicted")
    await conflicted.getByText("moved since: left alone").waitFor({ timeout: WAIT_MS })
    await conflicted.getByText(/changed/).waitFor({ timeout: WAIT_MS })
    await conflicted.getByRole("checkbox", { name: `Revert anyway: ${added[0]!.summary}` }).waitFor({ timeout: WAIT_MS })
    for (const member of added.slice(1)) {
      const row = dialog.locator(`tr[data-action-id="${member.actionId}"]`)
      await expect(row.getAttribute("data-verdict")).resolves.toBe("revertible")
      await row.getByText("undone", { exact: true }).waitFor({ timeout: WAIT_MS })
    }
    const violations = await seriousViolations(page)
    expect(violations, "the revert plan: serious or critical axe-core violations").toEqual([])

    await dialog.getByRole("button", { name: "Revert" }).click()
    await page.getByRole("status").filter({ hasText: /^Reverting “Lift three budgets”: 2 members undone by changeset “Revert of Lift three budgets”/ })
      .waitFor({ timeout: WAIT_MS })
    const revertId = (await changesetOf(opened.changesetId)).revertedBy
    expect(revertId).not.toBeNull()
    await waitFor("the revert applied", () => changesetOf(revertId!), (c) => c.status === "applied")
    const budgets = await upstreamBudgets()
    for (const campaign of kept) expect(budgets.get(campaign.campaignId)).toBe(campaign.dailyBudgetMicros)
    expect(budgets.get(moved.campaignId)).toBe(outside)
    // The ledger says so, live: the changeset reverted by its revert, which has a row of its own.
    await group.getByText(`Reverted by changeset ${revertId}`).waitFor({ timeout: WAIT_MS })
    await page.locator(`li.changeset-group[data-changeset-id="${revertId}"]`).getByRole("heading", { name: "Revert of Lift three budgets" })
      .waitFor({ timeout: WAIT_MS })
  })
})
