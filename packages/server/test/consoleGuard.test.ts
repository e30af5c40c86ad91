/**
 * The guard in the console (docs/contract.md 3.4, docs/decisions/console.md), in a real browser: headless Chromium from
 * Debian driven by playwright-core against the real server, the simulator and PostgreSQL. A budget change is
 * applied and the next sync opens its watch. In the ledger the person filters by the guard's verdict (the page asks
 * the server, `?verdict=`), finds the change with its `pending` badge named as the guard's verdict, and opens the
 * watch: the baseline's window and totals as the server has them, the before/after chart of the baseline (no review
 * yet), and the day the first review waits for. No serious or critical axe-core violation, at 1280 px and at phone
 * width. The run writes the picture of a watch in the README (docs/console-watch.png).
 *
 * A review needs complete days after the apply, and a server process cannot be told the time: reviews, their
 * metrics and the guard's undo are judged end to end in guard.test.ts, in one process with a shifted clock.
 */
import * as Path from "node:path"
import type { ActionRecord } from "@acs/domain/Actions"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchBrowser, seriousViolations } from "./support/browser.ts"
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import { repoRoot } from "./support/server.ts"
import { waitFor, WAIT_MS } from "./support/wait.ts"

let p: Pipeline
let browser: Browser
let page: Page
/** The applied budget change the sync began to watch. */
let watched: ActionRecord

const usd = (micros: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" }).format(micros / 1_000_000)

const expectAccessible = async (what: string) => {
  const violations = await seriousViolations(page)
  expect(violations, `${what}: serious or critical axe-core violations`).toEqual([])
}

const row = (actionId: string) => page.locator(`li[data-action-id="${actionId}"]`)

beforeAll(async () => {
  p = await startPipeline({ seed: 73, env: { CHANGE_HISTORY_POLL_SECONDS: "0" } })
  const projectId = p.account.projectId
  const listed = await p.api("key", (client) => client.warehouse.listCampaigns({ path: { projectId }, urlParams: { limit: 100 } }))
  // The busiest enabled campaign with a budget: a baseline with spend and installs to show.
  const campaign = listed.campaigns.find((c) => c.status === "ENABLED" && c.dailyBudgetMicros !== null && c.dailyBudgetMicros > 0 && c.installs > 0)
  if (campaign === undefined) throw new Error("the demo account has no enabled campaign with a budget and installs")
  const newDailyBudgetMicros = Math.round((campaign.dailyBudgetMicros! * 1.1) / 10_000) * 10_000
  const proposed = proposalOf(await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros, reason: "room to spend" }, { as: "key" }))
  const approved = await p.as("person", "POST", `/accounts/${projectId}/approvals/${proposed.actionId}/approve`)
  expect(approved.status, approved.text).toBe(200)
  expect((await p.settle(proposed.actionId, ["applied", "failed"])).status).toBe("applied")
  // The first sync after the apply opens the watch, with its baseline.
  const { syncId } = await p.api("key", (client) => client.warehouse.startSync({ path: { projectId } }))
  await waitFor("the sync after the apply", () => p.api("key", (client) => client.warehouse.getSync({ path: { projectId, syncId } })),
    (sync) => sync.status !== "running")
  watched = await waitFor("the change's watch", () => p.action(proposed.actionId), (a) => a.watch !== undefined)
  browser = await launchBrowser()
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage()
  await page.goto(p.server.baseUrl)
  await page.getByLabel("Email").fill(ADMIN_EMAIL)
  await page.getByLabel("Password").fill(ADMIN_PASSWORD)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { level: 1, name: "Approvals" }).waitFor({ timeout: WAIT_MS })
})

afterAll(async () => {
  await browser?.close()
  await p?.close()
})

describe("the guard in the console", () => {
  it("filters the ledger by verdict and shows an applied change's pending watch: its badge, baseline, chart and next review", async () => {
    const watch = watched.watch!
    expect(watch).toMatchObject({ verdict: "pending", level: "campaigns", reviews: [], revertActionId: null })
    const baseline = watch.baseline!
    expect(baseline.days).toBe(7)
    expect(baseline.spendMicros).toBeGreaterThan(0)

    await page.goto(`${p.server.baseUrl}/#/ledger/${p.account.projectId}`)
    await page.getByRole("heading", { level: 1, name: "Ledger" }).waitFor({ timeout: WAIT_MS })
    const verdict = page.getByLabel("Guard's verdict")
    // A verdict nothing has yet: the server answers no action.
    await verdict.selectOption("failed")
    await page.getByText("No actions match.").waitFor({ timeout: WAIT_MS })
    await verdict.selectOption("pending")
    const entry = row(watched.actionId)
    await entry.waitFor({ timeout: WAIT_MS })
    // Every action the filter shows has a pending watch: the applied change, not its proposal's neighbours.
    const shown = await page.locator("li[data-action-id]").evaluateAll((items) => items.map((item) => item.getAttribute("data-action-id")))
    expect(shown).toEqual([watched.actionId])
    await entry.locator("header").getByText("The guard's verdict: pending", { exact: true }).waitFor({ timeout: WAIT_MS })

    await entry.locator("summary", { hasText: "The guard's watch: pending" }).click()
    const panel = entry.getByRole("region", { name: "The guard's watch" })
    await panel.getByText(`${baseline.start} to ${baseline.end} (7 days): ${usd(baseline.spendMicros)} spent`).waitFor({ timeout: WAIT_MS })
    await panel.getByText(`${baseline.installs.toLocaleString("en-US")} installs`, { exact: false }).waitFor({ timeout: WAIT_MS })
    await panel.getByText(`applied on ${watch.appliedDay}`, { exact: false }).waitFor({ timeout: WAIT_MS })
    await panel.getByText(`Next review: once ${watch.nextReviewDay} is synced.`).waitFor({ timeout: WAIT_MS })
    // The chart's bars, named with their values: the baseline's spend per day, nothing after the apply yet.
    const spendPerDay = usd(Math.round(baseline.spendMicros / baseline.days))
    await panel.getByRole("img", { name: `Spend per day: before (7 d): ${spendPerDay}` }).waitFor({ timeout: WAIT_MS })
    expect(await panel.getByRole("table").count(), "no review, so no metrics compared").toBe(0)
    await expectAccessible("ledger with a watch")
    await panel.scrollIntoViewIfNeeded()
    await page.screenshot({ path: Path.join(repoRoot, "docs", "console-watch.png"), fullPage: false })

    await page.setViewportSize({ width: 390, height: 844 })
    await panel.getByRole("img", { name: /^Installs per day: before/ }).waitFor({ timeout: WAIT_MS })
    await expectAccessible("ledger with a watch at phone width")
  })
})
