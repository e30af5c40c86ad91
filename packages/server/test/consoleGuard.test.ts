/**
 * The guard in the console (docs/contract.md 3.4, docs/decisions/console.md), in a real browser: headless Chromium from
 * Debian driven by playwright-core against the real server, the simulator and PostgreSQL. The server process only
 * enqueues applies (`WORKER_CONCURRENCY=0`): the apply worker runs in this process, as `acs worker` would beside it,
 * over the same database and simulator, on a clock the test moves with the simulator's (see below). A budget change
 * is applied and the next sync opens its watch. In the ledger the person filters by the guard's verdict (the page asks
 * the server, `?verdict=`), finds the change with its `pending` badge named as the guard's verdict, and opens the
 * watch: the baseline's window and totals as the server has them, the before/after chart of the baseline (no review
 * yet), and the day the first review waits for. No serious or critical axe-core violation, at 1280 px and at phone
 * width.
 *
 * Then a week passes. A review needs complete days after the apply, and a server process cannot be told the time:
 * the syncs that bring those days run in this process too, on its clock moved on as far as the simulator's (as
 * guard.test.ts does), and the real guard reviews the change there. The campaign converts
 * half as well from the apply on, so the change fails at both reviews and the guard proposes its undo. In the console
 * the change shows `failed`, its watch opens by itself on the two reviews (their windows, reasons and the metrics
 * before → after with their change), the chart has the windows after the apply, and the undo waits with an Approve
 * button: one click, and the worker applies it. The run writes the picture of a watch in docs/using-the-api.md
 * (docs/console-watch.png).
 */
import * as Path from "node:path"
import type { ActionRecord } from "@acs/domain/Actions"
import { ConfigProvider, Effect, Layer, ManagedRuntime, Option } from "effect"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Accounts } from "../src/accounts/Accounts.ts"
import { ServicesLive } from "../src/AppLayer.ts"
import { DatabaseLive } from "../src/db/Database.ts"
import { Syncs } from "../src/warehouse/Syncs.ts"
import { WorkerLive } from "../src/worker/Worker.ts"
import { launchBrowser, seriousViolations, signedInPage } from "./support/browser.ts"
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import { repoRoot, TEST_SECRETS_KEY } from "./support/server.ts"
import { makeShiftedClock } from "./support/shiftedClock.ts"
import { waitFor, WAIT_MS } from "./support/wait.ts"

let p: Pipeline
let browser: Browser
let page: Page
/** The applied budget change the sync began to watch. */
let watched: ActionRecord

const DAY_MS = 86_400_000

/** acs's clock in this process, moved on with the simulator's. */
const time = makeShiftedClock()
const shifted = time.clock

/** acs's services and apply worker in this process, over the pipeline's database and simulator, on the shifted clock. */
const servicesHere = () =>
  ManagedRuntime.make(WorkerLive.pipe(
    Layer.provideMerge(ServicesLive),
    Layer.provide(DatabaseLive),
    Layer.provide(Layer.setClock(shifted)),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([
      ["DATABASE_URL", p.database],
      ["ACS_SECRETS_KEY", TEST_SECRETS_KEY],
      ["SIMULATOR_URL", p.simulator.url],
      ["SYNC_INTERVAL_MINUTES", "0"],
      ["WORKER_POLL_MS", "200"],
      // The simulator runs ahead of the server process's clock: only this process's worker applies.
      ["WORKER_CONCURRENCY", "2"]
    ]))))
  ))
let here: ReturnType<typeof servicesHere>

/** Both clocks `days` on, then a sync of the account in this process: the guard reviews what its days allow. */
const daysLaterSync = async (days: number) => {
  p.simulator.control.advanceClock({ days })
  time.shift(days * DAY_MS)
  const sync = await here.runPromise(Effect.gen(function*() {
    const account = Option.getOrThrow(yield* (yield* Accounts).find(p.account.projectId))
    return yield* (yield* Syncs).runToEnd(account, "manual")
  }).pipe(Effect.withClock(shifted)))
  expect(sync?.status).toBe("succeeded")
}

const usd = (micros: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" }).format(micros / 1_000_000)

const expectAccessible = async (what: string) => {
  const violations = await seriousViolations(page)
  expect(violations, `${what}: serious or critical axe-core violations`).toEqual([])
}

/** At phone width the page still shows `shown`, scrolls only down, and has no serious axe-core violation; then back to 1280 px. */
const atPhoneWidth = async (what: string, shown: () => Promise<void>) => {
  await page.setViewportSize({ width: 390, height: 844 })
  await shown()
  const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth")
  expect(overflow, `${what} at phone width: no horizontal scrolling`).toBeLessThanOrEqual(0)
  await expectAccessible(`${what} at phone width`)
  await page.setViewportSize({ width: 1280, height: 900 })
}

const row = (actionId: string) => page.locator(`li[data-action-id="${actionId}"]`)

beforeAll(async () => {
  p = await startPipeline({ seed: 73, env: { CHANGE_HISTORY_POLL_SECONDS: "0", WORKER_CONCURRENCY: "0" } })
  here = servicesHere()
  await here.runtime()
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
  // From the apply on, the campaign converts half as well: its cost per install doubles.
  expect(p.simulator.control.addScenario({ entityId: Number(campaign.campaignId), installsPerTapPercent: -50 })).not.toBeNull()
  // The first sync after the apply opens the watch, with its baseline.
  const { syncId } = await p.api("key", (client) => client.warehouse.startSync({ path: { projectId } }))
  await waitFor("the sync after the apply", () => p.api("key", (client) => client.warehouse.getSync({ path: { projectId, syncId } })),
    (sync) => sync.status !== "running")
  watched = await waitFor("the change's watch", () => p.action(proposed.actionId), (a) => a.watch !== undefined)
  browser = await launchBrowser()
  page = await signedInPage(browser, p.server.baseUrl, ADMIN_EMAIL, ADMIN_PASSWORD, WAIT_MS)
})

afterAll(async () => {
  await here?.dispose()
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
    await atPhoneWidth("ledger with a watch", () => panel.getByRole("img", { name: /^Installs per day: before/ }).waitFor({ timeout: WAIT_MS }))
  })

  it("a week on shows the failed reviews with their metrics, and approves the undo the guard proposed in one click", async () => {
    await daysLaterSync(2)
    await daysLaterSync(6)
    const judged = await p.action(watched.actionId)
    const watch = judged.watch!
    expect(watch.reviews.map((r) => [r.afterDays, r.verdict]), JSON.stringify(watch.reviews.map((r) => r.reasons))).toEqual([[1, "failed"], [7, "failed"]])
    expect(watch).toMatchObject({ verdict: "failed", nextReviewDay: null })
    const revertId = watch.revertActionId!
    expect(revertId, watch.revertNote ?? "").toBeTruthy()
    expect(await p.action(revertId)).toMatchObject({ status: "proposed", revertOf: watched.actionId, proposedBy: { id: "guard" } })

    await page.goto(`${p.server.baseUrl}/#/ledger/${p.account.projectId}`)
    await page.getByRole("heading", { level: 1, name: "Ledger" }).waitFor({ timeout: WAIT_MS })
    await page.getByLabel("Guard's verdict").selectOption("failed")
    const entry = row(watched.actionId)
    await entry.locator("header").getByText("The guard's verdict: failed", { exact: true }).waitFor({ timeout: WAIT_MS })
    // A failure with its undo waiting opens by itself.
    const panel = entry.getByRole("region", { name: "The guard's watch" })
    for (const review of watch.reviews) {
      const shown = panel.getByRole("region", { name: `After ${review.afterDays} ${review.afterDays === 1 ? "day" : "days"}: failed` })
      await shown.getByText(`${review.window.start === review.window.end ? review.window.start : `${review.window.start} to ${review.window.end}`}`, { exact: false })
        .first().waitFor({ timeout: WAIT_MS })
      for (const reason of review.reasons) await shown.getByText(reason, { exact: true }).waitFor({ timeout: WAIT_MS })
      // The cost per install before → after, and its change as the server computed it.
      const cpa = review.metrics.find((m) => m.metric === "cpa")!
      const cpaRow = shown.getByRole("row", { name: /^Cost per install/ })
      await cpaRow.getByRole("cell", { name: usd(Math.round(cpa.before!)), exact: true }).waitFor({ timeout: WAIT_MS })
      await cpaRow.getByRole("cell", { name: usd(Math.round(cpa.after!)), exact: true }).waitFor({ timeout: WAIT_MS })
      await cpaRow.getByRole("cell", { name: `+${cpa.changePct!.toFixed(1)} %`, exact: true }).waitFor({ timeout: WAIT_MS })
    }
    await panel.getByText("No more reviews.").waitFor({ timeout: WAIT_MS })
    const last = watch.reviews[1]!
    const after7 = usd(Math.round(last.window.spendMicros / last.window.days))
    await panel.getByRole("img", { name: new RegExp(`^Spend per day: before \\(7 d\\): .*, after 7 d: ${after7.replace(/[$.]/g, "\\$&")}$`) })
      .waitFor({ timeout: WAIT_MS })

    const undo = panel.getByRole("group", { name: "The undo" })
    const revert = await p.action(revertId)
    await undo.getByText(revert.summary, { exact: false }).waitFor({ timeout: WAIT_MS })
    await undo.getByText("waiting for approval", { exact: false }).waitFor({ timeout: WAIT_MS })
    await expectAccessible("ledger with a failed watch")
    await entry.evaluate((element) => element.scrollIntoView({ block: "start" }))
    await page.screenshot({ path: Path.join(repoRoot, "docs", "console-watch.png"), fullPage: false })
    await atPhoneWidth("ledger with a failed watch", () => undo.getByRole("button", { name: "Approve the undo" }).waitFor({ timeout: WAIT_MS }))

    await undo.getByRole("button", { name: "Approve the undo" }).click()
    await undo.getByRole("status").filter({ hasText: "Approved the undo." }).waitFor({ timeout: WAIT_MS })
    const undone = await p.settle(revertId, ["applied", "failed"])
    expect(undone.status, JSON.stringify(undone.failure)).toBe("applied")
    expect((await p.action(watched.actionId)).status).toBe("reverted")
    // Live: the undo's status follows without a reload.
    await undo.getByText("applied", { exact: true }).waitFor({ timeout: WAIT_MS })
  })
})
