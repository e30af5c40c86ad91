/**
 * One action or changeset in the console (`#/change/{projectId}/{id}`, docs/contract.md 6.1), where
 * notifications link, in a real browser (headless Chromium driven by playwright-core) against the real server:
 * a key's queued budget change opens at its own address with its diff and reasons, the person approves it there;
 * a queued changeset opens with its plan and is approved by that plan; an address not of a change's form is the not-found
 * page. The person links their Slack user on the Password page, an admin anyone's in the people table; an admin sets the Slack signing secret on the Policy
 * page, never shown back. No serious or critical axe-core violation.
 */
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { seriousViolations } from "./support/browser.ts"
import { budgetedCampaigns, type Campaign, recorded, startConsoleWorld, takeCampaign } from "./support/consoleChangesetWorld.ts"
import type { Pipeline } from "./support/pipeline.ts"
import { waitFor, WAIT_MS } from "./support/wait.ts"

let p: Pipeline
let browser: Browser
let page: Page
let campaigns: Array<Campaign>

const path = () => ({ projectId: p.account.projectId })

const freshCampaign = () => takeCampaign(campaigns)

beforeAll(async () => {
  ;({ browser, campaigns, p, page } = await startConsoleWorld(63))
  campaigns = campaigns.length > 0 ? campaigns : await budgetedCampaigns(p, p.account.projectId)
})

afterAll(async () => {
  await browser?.close()
  await p?.close()
})

describe("one change at its own address", () => {
  it("shows a queued action with its diff and reasons, and the person approves it there", async () => {
    const campaign = freshCampaign()
    const proposal = await p.api("key", (client) =>
      client.proposals.proposeBudgetChange({
        path: path(),
        payload: { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros * 1.1 / 10_000) * 10_000, reason: "more reach" },
        urlParams: {},
        headers: {}
      })).then(recorded)
    await page.goto(`${p.server.baseUrl}/#/change/${p.account.projectId}/${proposal.actionId}`)
    await page.getByRole("heading", { level: 1, name: proposal.summary }).waitFor({ timeout: WAIT_MS })
    await page.getByRole("table", { name: "What it changes" }).waitFor({ timeout: WAIT_MS })
    expect(await page.getByText("proposed with an API key", { exact: false }).count()).toBeGreaterThan(0)
    expect(await seriousViolations(page)).toEqual([])
    await page.getByRole("button", { name: "Approve" }).click()
    await page.getByText("Approved.", { exact: true }).waitFor({ timeout: WAIT_MS })
    const decided = await waitFor("the action approved", () => p.action(proposal.actionId), (a) => a.status !== "proposed")
    expect(decided.decidedBy).toMatchObject({ kind: "person" })
    await page.getByRole("button", { name: "Approve" }).waitFor({ state: "detached", timeout: WAIT_MS })
  })

  it("shows a queued changeset with its plan, approved by that plan", async () => {
    const opened = await p.api("key", (client) => client.changesets.openChangeset({ path: path(), payload: { title: "Two raises from Slack" } }))
    for (const campaign of [freshCampaign(), freshCampaign()]) {
      await p.api("key", (client) =>
        client.proposals.proposeBudgetChange({
          path: path(),
          payload: {
            campaignId: campaign.campaignId,
            newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros * 1.05 / 10_000) * 10_000,
            reason: "a little more",
            changesetId: opened.changesetId
          },
          urlParams: {},
          headers: {}
        })).then(recorded)
    }
    const submitted = await p.api("key", (client) => client.changesets.submitChangeset({ path: { ...path(), changesetId: opened.changesetId }, urlParams: {} }))
    await page.goto(`${p.server.baseUrl}/#/change/${p.account.projectId}/${opened.changesetId}`)
    await page.getByRole("heading", { level: 1, name: "Two raises from Slack" }).waitFor({ timeout: WAIT_MS })
    await page.getByText(`plan ${submitted.planHash!.replace(/^sha256:/, "").slice(0, 12)}`, { exact: false }).waitFor({ timeout: WAIT_MS })
    await page.getByRole("button", { name: "Approve" }).click()
    await page.getByText("Approved.", { exact: true }).waitFor({ timeout: WAIT_MS })
    // The approval is on record: what the worker does next (applies it, or sends it back when a re-check fails) is not this page's.
    await waitFor("the changeset's approval", () =>
      p.api("key", (client) => client.events.listEvents({ urlParams: { type: "changeset.approved", limit: 100 } })), (page) =>
      page.events.some((event) => JSON.stringify(event.data).includes(opened.changesetId)))
  })

  it("is the not-found page for an address not of a change's form", async () => {
    await page.goto(`${p.server.baseUrl}/#/change/${p.account.projectId}/act_0000000000000000x`)
    await page.getByRole("heading", { level: 1, name: "Page not found" }).waitFor({ timeout: WAIT_MS })
  })

  it("lets an admin set the Slack signing secret, which is never shown back", async () => {
    await page.goto(`${p.server.baseUrl}/#/policy`)
    await page.getByText("No Slack signing secret is set", { exact: false }).waitFor({ timeout: WAIT_MS })
    await page.getByLabel("Signing secret", { exact: false }).fill("8f742231b10e8888abcd99edabcd00d1")
    await page.getByRole("button", { name: "Save", exact: true }).click()
    await page.getByText("The Slack signing secret is set", { exact: false }).waitFor({ timeout: WAIT_MS })
    expect(await page.content()).not.toContain("8f742231b10e8888abcd99edabcd00d1")
    expect((await p.as("key", "GET", "/settings/slack")).body).toMatchObject({ signingSecretSet: true })
    expect(await seriousViolations(page)).toEqual([])
  })

  it("lets an admin set a person's Slack user in the people table", async () => {
    const created = await p.as("person", "POST", "/people", { email: "sam@console.example", name: "Sam Slack", role: "approver" })
    expect(created.status, created.text).toBe(201)
    await page.goto(`${p.server.baseUrl}/#/keys`)
    const field = page.getByLabel("Slack user of Sam Slack")
    await field.fill("USAM00001")
    await field.press("Enter")
    await page.getByText("Sam Slack updated.").waitFor({ timeout: WAIT_MS })
    const people = await p.as("key", "GET", "/people")
    expect((people.body as { people: Array<{ name: string; slackUserId: string | null }> }).people.find((x) => x.name === "Sam Slack")?.slackUserId)
      .toBe("USAM00001")
  })

  it("lets the person link their Slack user on the Password page", async () => {
    await page.goto(`${p.server.baseUrl}/#/password`)
    await page.getByLabel("Slack member ID").fill("UCONSOLE1")
    await page.getByRole("button", { name: "Link", exact: true }).click()
    await page.getByText("Slack user UCONSOLE1 is yours now.").waitFor({ timeout: WAIT_MS })
    const people = await p.as("key", "GET", "/people")
    expect((people.body as { people: Array<{ slackUserId: string | null }> }).people.map((x) => x.slackUserId)).toContain("UCONSOLE1")
    expect(await seriousViolations(page)).toEqual([])
  })
})
