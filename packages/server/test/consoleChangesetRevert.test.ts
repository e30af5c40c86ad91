/**
 * A changeset's revert in the console, in a real browser (docs/contract.md 4.3, docs/decisions/changesets.md):
 * headless Chromium from Debian driven by playwright-core against the real server, the simulator and PostgreSQL.
 * A key's changeset of three budget changes is approved and applied by the worker; one campaign is then changed
 * in Apple's web UI. From the ledger the person opens the revert, which shows its plan first (two members undone,
 * the moved one left alone with why, partial coverage), confirms it, and the two budgets go back while the moved
 * one keeps the outside value. No serious or critical axe-core violation.
 */
import type { ProposalResponse } from "@acs/domain/Actions"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { seriousViolations } from "./support/browser.ts"
import { type Campaign, recorded, startConsoleWorld } from "./support/consoleChangesetWorld.ts"
import type { Pipeline } from "./support/pipeline.ts"
import { waitFor, WAIT_MS } from "./support/wait.ts"

let p: Pipeline
let browser: Browser
let page: Page
let campaigns: Array<Campaign>

const path = () => ({ projectId: p.account.projectId })

const changesetOf = (changesetId: string) =>
  p.api("key", (client) => client.changesets.getChangeset({ path: { ...path(), changesetId } })).then((d) => d.changeset)

/** The campaigns' daily budgets as Apple has them now. */
const upstreamBudgets = async (): Promise<ReadonlyMap<string, number | null>> =>
  new Map((await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).map((c) => [c.campaignId, c.dailyBudgetMicros] as const))

beforeAll(async () => {
  ;({ browser, campaigns, p, page } = await startConsoleWorld(63))
})

afterAll(async () => {
  await browser?.close()
  await p?.close()
})

describe("a changeset's revert in the console", () => {
  it("shows the revert plan (undone, moved since and left alone, coverage), reverts what can be, and leaves the moved member alone", async () => {
    const members = campaigns.slice(0, 3)
    expect(members).toHaveLength(3)
    const opened = await p.api("key", (client) => client.changesets.openChangeset({ path: path(), payload: { title: "Lift three budgets" } }))
    const added: Array<ProposalResponse> = []
    for (const campaign of members) {
      added.push(await p.api("key", (client) =>
        client.proposals.proposeBudgetChange({
          path: path(),
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
      client.changesets.submitChangeset({ path: { ...path(), changesetId: opened.changesetId }, urlParams: {} }))
    await p.api("person", (client) =>
      client.changesets.approveChangeset({ path: { ...path(), changesetId: opened.changesetId }, payload: { planHash: submitted.planHash! } }))
    await waitFor("the changeset applied", () => changesetOf(opened.changesetId), (c) => c.status === "applied")

    // The first campaign is changed in Apple's web UI since acs wrote it.
    const [moved, ...kept] = members as [Campaign, Campaign, Campaign]
    const outside = Math.round((moved.dailyBudgetMicros * 0.7) / 10_000) * 10_000
    p.setBudgetOutsideAcs(moved.campaignId, outside)

    await page.goto(`${p.server.baseUrl}/#/ledger/${p.account.projectId}`)
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
