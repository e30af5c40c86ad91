/**
 * The operator console in a real browser (docs/decisions/console.md): headless Chromium from Debian driven by playwright-core
 * against the real server, the simulator and PostgreSQL. A person signs in, finds a key's proposal in the
 * queue with its diff and reasons, approves it and sees it applied without a reload, reverts it from the
 * ledger, creates a key whose secret is shown once, engages the kill switch, cannot approve their own
 * proposal, rejects with a reason, manages people, sets targets and proposes a plan item after its preview, sets the account's
 * guardrails and resumes auto-apply the circuit breaker paused, sees an outside change in the ledger, and changes their password, which
 * ends their other sessions. Every page has no serious or critical axe-core violation, at 1280 px and at
 * phone width. The run writes the README's screenshots (docs/console-*.png).
 *
 * Then crafted console links, in the same world: signed in in a browser context of its own, the person opens links
 * whose account id is `..`, an encoded `/`, `?` or `#`, a malformed escape, an extra segment or an account the
 * person does not reach. Each shows the "Page not found" page, and no request leaves the browser for an API path
 * but the shell's own (who am I, the accounts, the live stream); a well-formed link to the person's account reads
 * that account's paths only (and the ledger's names of keys and people).
 */
import * as Path from "node:path"
import { ExternalChangePayload, PolicyDocument, ProposalPreview } from "@acs/domain/Actions"
import { Guardrails } from "@acs/domain/Guardrails"
import { Schema } from "effect"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newId } from "../src/db/Ids.ts"
import { launchBrowser, seriousViolations } from "./support/browser.ts"
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import { BOOTSTRAP_KEY, call, repoRoot } from "./support/server.ts"
import { waitFor, WAIT_MS } from "./support/wait.ts"

interface Campaign {
  readonly campaignId: string
  readonly name: string
  readonly status: string
  readonly dailyBudgetMicros: number | null
}

let p: Pipeline
let browser: Browser
let context: BrowserContext
let page: Page
let campaigns: Array<Campaign>
let password = ADMIN_PASSWORD
/** The key proposal approved in the queue, reverted later from the ledger. */
let approvedId = ""
/** The campaign of the person's own proposal, withdrawn: free for another proposal. */
let withdrawnCampaign: Campaign | undefined
/** What the browser saw of /events/stream (requests, answers, failures), for a failure message. */
const streamSeen: Array<string> = []

const docs = (name: string) => Path.join(repoRoot, "docs", name)

const freshCampaign = () => {
  const campaign = campaigns.shift()
  if (campaign === undefined) throw new Error("the demo account has too few campaigns for this file")
  return campaign
}

/** A budget change of +10 %, proposed through the API with the bootstrap key (so it always queues), or as the person. */
const proposeBudget = async (as: "key" | "person", reason: string) => {
  const campaign = freshCampaign()
  const newDailyBudgetMicros = Math.round((campaign.dailyBudgetMicros! * 1.1) / 10_000) * 10_000
  const answer = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros, reason }, { as })
  expect(answer.status, answer.text).toBe(201)
  return { campaign, newDailyBudgetMicros, action: proposalOf(answer) }
}

const usd = (micros: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" }).format(micros / 1_000_000)

const expectAccessible = async (what: string) => {
  const violations = await seriousViolations(page)
  expect(violations, `${what}: serious or critical axe-core violations`).toEqual([])
}

const goTo = async (hash: string, heading: string) => {
  await page.goto(`${p.server.baseUrl}/${hash}`)
  await page.getByRole("heading", { level: 1, name: heading }).waitFor({ timeout: WAIT_MS })
}

const card = (actionId: string) => page.locator(`article[data-action-id="${actionId}"]`)

const signIn = async (target: Page, secret: string) => {
  await target.goto(p.server.baseUrl)
  await target.getByLabel("Email").fill(ADMIN_EMAIL)
  await target.getByLabel("Password").fill(secret)
  await target.getByRole("button", { name: "Sign in" }).click()
  await target.getByRole("heading", { level: 1, name: "Approvals" }).waitFor({ timeout: WAIT_MS })
}

beforeAll(async () => {
  p = await startPipeline({ seed: 61, env: { CHANGE_HISTORY_POLL_SECONDS: "0", LOG_LEVEL: "info" } })
  const listed = await p.api("key", (client) => client.warehouse.listCampaigns({ path: { projectId: p.account.projectId }, urlParams: { limit: 100 } }))
  campaigns = listed.campaigns
    .filter((c) => c.status === "ENABLED" && c.dailyBudgetMicros !== null && c.dailyBudgetMicros > 0)
  browser = await launchBrowser()
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  page = await context.newPage()
  const t0 = Date.now()
  const at = () => `+${((Date.now() - t0) / 1000).toFixed(1)}s`
  context.on("request", (r) => r.url().includes("/events/stream") && streamSeen.push(`${at()} request ${r.url()}`))
  context.on("response", (r) => r.url().includes("/events/stream") && streamSeen.push(`${at()} response ${r.status()}`))
  context.on("requestfailed", (r) => r.url().includes("/events/stream") && streamSeen.push(`${at()} failed ${r.failure()?.errorText}`))
  context.on("requestfinished", (r) => r.url().includes("/events/stream") && streamSeen.push(`${at()} finished`))
  page.on("console", (m) => streamSeen.push(`${at()} console ${m.type()} ${m.text()}`))
})

afterAll(async () => {
  await browser?.close()
  await p?.close()
})

describe("the console", () => {
  it("is served at / under a strict Content-Security-Policy, and a person signs in with the keyboard", async () => {
    const index = await call(`${p.server.baseUrl}/`)
    expect(index.status).toBe(200)
    expect(index.headers.get("content-type")).toMatch(/^text\/html/)
    const csp = index.headers.get("content-security-policy") ?? ""
    expect(csp).toContain("default-src 'self'")
    expect(csp).toContain("script-src 'self'")
    expect(csp).not.toContain("unsafe-inline")
    expect(index.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)

    await page.goto(p.server.baseUrl)
    await page.getByRole("heading", { name: "Sign in to acs" }).waitFor({ timeout: WAIT_MS })
    await expectAccessible("sign-in page")
    await page.getByLabel("Email").focus()
    await page.keyboard.type(ADMIN_EMAIL)
    await page.keyboard.press("Tab")
    await page.keyboard.type(password)
    await page.keyboard.press("Enter")
    await page.getByRole("heading", { level: 1, name: "Approvals" }).waitFor({ timeout: WAIT_MS })
    await page.getByText(/Nothing waits for a decision|oldest first/).first().waitFor({ timeout: WAIT_MS })
  })

  it("shows a key's proposal arriving in the queue, with its diff in the account's currency and the policy's reasons", async () => {
    // The page follows /events/stream: the header says so once the stream is open.
    await page.getByRole("status").filter({ hasText: /^Live$/ }).waitFor({ timeout: WAIT_MS }).catch((error: unknown) => {
      const header = page.getByRole("status").first().innerText().catch(() => "?")
      return header.then((shown) => {
        const served = p.server.logs().split("\n").filter((line) => line.includes("/events/stream"))
        throw new Error(`${String(error)}\nheader shows: ${shown}\nbrowser:\n${streamSeen.join("\n")}\nserver:\n${served.join("\n")}`)
      })
    })
    const { campaign, newDailyBudgetMicros, action } = await proposeBudget("key", "CPA below target: room to spend")
    expect(action.mode).toBe("queued")
    const entry = card(action.actionId)
    // Live: the page was open before the proposal; it arrives without a reload.
    await entry.waitFor({ timeout: WAIT_MS })
    await entry.getByRole("cell", { name: usd(campaign.dailyBudgetMicros!) }).waitFor({ timeout: WAIT_MS })
    await entry.getByRole("cell", { name: usd(newDailyBudgetMicros) }).waitFor({ timeout: WAIT_MS })
    await entry.getByRole("rowheader", { name: "daily budget" }).waitFor({ timeout: WAIT_MS })
    for (const reason of action.policyReasons) await entry.getByText(reason).waitFor({ timeout: WAIT_MS })
    await entry.getByText(`key “`).first().waitFor({ timeout: WAIT_MS })
    await entry.getByText(/^in \d/).waitFor({ timeout: WAIT_MS })
    await expectAccessible("approvals page")
    await page.screenshot({ path: docs("console-approvals.png"), fullPage: false })
    approvedId = action.actionId
  })

  it("approves it with the keyboard and shows it reach applied, live", async () => {
    // Keyboard only: from the selection checkbox, Tab reaches the card's Approve button; Enter presses it.
    await card(approvedId).getByRole("checkbox").focus()
    const approve = card(approvedId).getByRole("button", { name: "Approve", exact: true })
    for (let tabs = 0; tabs < 20 && !(await approve.evaluate((button) => button === button.ownerDocument.activeElement)); tabs++) {
      await page.keyboard.press("Tab")
    }
    await page.keyboard.press("Enter")
    const decided = page.locator(`.recent li[data-action-id="${approvedId}"]`)
    await decided.getByText("applied", { exact: true }).waitFor({ timeout: WAIT_MS })
    expect((await p.action(approvedId)).status).toBe("applied")
    await card(approvedId).waitFor({ state: "detached", timeout: WAIT_MS })
  })

  it("reverts from the ledger after showing what the revert writes, and links the action and its revert", async () => {
    const applied = await p.action(approvedId)
    const prior = (applied.payload as { priorDailyBudgetMicros: number }).priorDailyBudgetMicros
    await goTo(`#/ledger/${p.account.projectId}`, "Ledger")
    const row = page.locator(`li[data-action-id="${approvedId}"]`)
    await row.waitFor({ timeout: WAIT_MS })
    await row.getByText("Change details").click()
    await expectAccessible("ledger page")
    await page.screenshot({ path: docs("console-ledger.png"), fullPage: false })
    const written = await p.sql<{ n: string }>("SELECT count(*) AS n FROM actions")
    await row.getByRole("button", { name: "Revert…" }).click()
    const dialog = page.getByRole("dialog", { name: "Revert this change?" })
    // What the server's preview of the revert says it writes (?preview=true): its summary, the budget back to
    // the prior one, and that it applies at once; opening the dialog records nothing.
    const preview = await p.as("person", "POST", `/accounts/${p.account.projectId}/actions/${approvedId}/revert?preview=true`)
    expect(preview.status, preview.text).toBe(200)
    const previewed = Schema.decodeUnknownSync(ProposalPreview)(preview.body)
    await dialog.getByText(previewed.summary, { exact: true }).waitFor({ timeout: WAIT_MS })
    await dialog.getByRole("columnheader", { name: "Revert writes" }).waitFor({ timeout: WAIT_MS })
    await dialog.getByRole("cell", { name: usd(prior) }).waitFor({ timeout: WAIT_MS })
    expect(previewed.mode).toBe("auto_applied")
    await dialog.getByRole("note").filter({ hasText: "It applies at once." }).waitFor({ timeout: WAIT_MS })
    expect(await p.sql<{ n: string }>("SELECT count(*) AS n FROM actions"), "the preview recorded nothing").toEqual(written)
    await expectAccessible("revert confirmation")
    await dialog.getByRole("button", { name: "Revert", exact: true }).click()
    await page.getByRole("status").filter({ hasText: "Revert of" }).waitFor({ timeout: WAIT_MS })
    const reverted = await waitFor("the action to name its revert", () => p.action(approvedId), (a) => a.revertedBy !== null)
    await row.getByRole("link", { name: `Reverted by ${reverted.revertedBy}` }).waitFor({ timeout: WAIT_MS })
    const revertRow = page.locator(`li[data-action-id="${reverted.revertedBy}"]`)
    await revertRow.getByRole("link", { name: `Reverts ${approvedId}` }).waitFor({ timeout: WAIT_MS })
    // The worker applies the revert; the ledger shows it, live.
    await revertRow.locator(".badge.status-applied").waitFor({ timeout: WAIT_MS })
  })

  it("creates a key and shows its secret exactly once", async () => {
    await goTo("#/keys", "Keys and people")
    await expectAccessible("keys page")
    await page.getByLabel("Name", { exact: true }).fill("console test script")
    await page.getByLabel("Scope").selectOption("write")
    await page.getByRole("button", { name: "Create key" }).click()
    const dialog = page.getByRole("dialog", { name: "Copy the key's secret now" })
    const secret = await dialog.getByLabel("Secret").inputValue()
    expect(secret).toMatch(/^acs_/)
    await dialog.getByRole("button", { name: "Copy" }).waitFor({ timeout: WAIT_MS })
    await expectAccessible("the secret dialog")
    const me = await call(`${p.server.api}/auth/me`, { key: secret })
    expect(me.status, "the secret shown works").toBe(200)

    await dialog.getByRole("button", { name: "I have stored it" }).click()
    await page.getByRole("rowheader", { name: "console test script" }).waitFor({ timeout: WAIT_MS })
    expect(await page.content(), "the secret is gone from the page").not.toContain(secret)
    await page.reload()
    await page.getByRole("rowheader", { name: "console test script" }).waitFor({ timeout: WAIT_MS })
    expect(await page.content(), "and never shown again").not.toContain(secret)
  })

  it("adds a person with a role, whose generated password is shown once, and disables them", async () => {
    await goTo("#/keys", "Keys and people")
    const form = page.getByRole("form", { name: "Add a person" })
    await form.getByLabel("Email").fill("dana@console.example")
    await form.getByLabel("Full name").fill("Dana Approver")
    await form.getByLabel("Role").selectOption("approver")
    await form.getByRole("button", { name: "Add person" }).click()
    const dialog = page.getByRole("dialog", { name: "Hand over the password" })
    const generated = await dialog.getByLabel("Secret").inputValue()
    await expectAccessible("the password hand-over dialog")
    await dialog.getByRole("button", { name: "Done" }).click()
    const login = await call(`${p.server.api}/auth/login`, { method: "POST", body: { email: "dana@console.example", password: generated } })
    expect(login.status).toBe(200)
    expect(login.body).toMatchObject({ principal: { role: "approver" } })
    const cookie = login.headers.getSetCookie().find((l) => l.startsWith("acs_session="))!.split(";")[0]!

    await page.getByRole("combobox", { name: "Role of Dana Approver" }).selectOption("viewer")
    await page.getByRole("status").filter({ hasText: "Dana Approver updated." }).waitFor({ timeout: WAIT_MS })
    await page.getByRole("button", { name: "Disable Dana Approver" }).click()
    await page.getByRole("dialog", { name: "Disable Dana Approver?" }).waitFor({ timeout: WAIT_MS })
    await expectAccessible("the disable confirmation")
    await page.getByRole("dialog", { name: "Disable Dana Approver?" }).getByRole("button", { name: "Disable", exact: true }).click()
    await page.getByRole("button", { name: "Enable Dana Approver" }).waitFor({ timeout: WAIT_MS })
    await expectAccessible("people section")
    const me = await call(`${p.server.api}/auth/me`, { headers: { cookie } })
    expect(me.status, "a disabled person's session ends").toBe(401)
  })

  it("shows whom each key answers to and that a disabled admin's key is suspended, and revokes all of a person's keys", async () => {
    const erin = await p.api("person", (client) =>
      client.people.createPerson({ payload: { email: "erin@console.example", name: "Erin Admin", role: "admin" } })
    )
    const login = await call(`${p.server.api}/auth/login`, { method: "POST", body: { email: "erin@console.example", password: erin.password ?? "" } })
    const cookie = login.headers.getSetCookie().find((l) => l.startsWith("acs_session="))!.split(";")[0]!
    const key = await call(`${p.server.api}/keys`, { method: "POST", headers: { cookie }, body: { name: "erin's agent", scope: "admin", canApprove: true } })
    expect(key.status, key.text).toBe(201)
    expect((await p.as("person", "PUT", `/people/${erin.person.personId}`, { disabled: true })).status).toBe(200)

    // The page shows keys and people as they were when it loaded: load it anew.
    await goTo("#/approvals", "Approvals")
    await goTo("#/keys", "Keys and people")
    const row = page.getByRole("row").filter({ has: page.getByRole("rowheader", { name: "erin's agent" }) })
    await row.getByRole("cell", { name: "Erin Admin", exact: true }).waitFor({ timeout: WAIT_MS })
    await row.getByRole("cell", { name: "admin; suspended while Erin Admin is disabled" }).waitFor({ timeout: WAIT_MS })
    await page.getByRole("button", { name: "Revoke keys of Erin Admin" }).click()
    const dialog = page.getByRole("dialog", { name: "Revoke every key of Erin Admin?" })
    await expectAccessible("the revoke-keys confirmation")
    await dialog.getByRole("button", { name: "Revoke their keys" }).click()
    await page.getByRole("status").filter({ hasText: "1 key of Erin Admin revoked" }).waitFor({ timeout: WAIT_MS })
    await row.getByRole("cell", { name: /^revoked / }).waitFor({ timeout: WAIT_MS })
    const { keys } = await p.api("key", (client) => client.keys.listKeys())
    const revoked = keys.find((k) => k.name === "erin's agent")
    expect(revoked?.revokedAt).not.toBeNull()
  })

  it("sets the CPA target band, then previews a plan item and proposes it", async () => {
    await goTo(`#/policy/${p.account.projectId}`, "Policy and settings")
    await page.getByLabel("Lowest CPA (USD)").fill("1")
    await page.getByLabel("Highest CPA (USD)").fill("3")
    await page.getByRole("button", { name: "Save targets" }).click()
    await page.getByRole("status").filter({ hasText: "Targets saved." }).waitFor({ timeout: WAIT_MS })
    const targets = await p.as("key", "GET", `/accounts/${p.account.projectId}/targets`)
    expect(targets.body).toMatchObject({ cpaBand: { minMicros: 1_000_000, maxMicros: 3_000_000 } })

    const plan = await p.api("key", (client) => client.insights.getPlan({ path: { projectId: p.account.projectId }, urlParams: {} }))
    const item = plan.items
      .flatMap(({ title, proposal }) => (proposal.kind === "keyword_bid_change" ? [{ title, proposal }] : []))
      .at(0)
    expect(item, "the band makes the plan suggest a bid cut").toBeDefined()
    await goTo(`#/accounts/${p.account.projectId}`, "Accounts")
    const entry = page.locator("ol.plan > li").filter({ has: page.getByRole("heading", { name: item!.title }) })
    await entry.getByRole("button", { name: "Preview" }).click()
    const preview = entry.getByRole("region", { name: "Preview" })
    // The keyword's own bid before (or the ad group's default it bids), and the plan's new bid.
    const keyword = /keyword "(.+?)"/.exec(item!.title)![1]!
    const row = preview.getByRole("row").filter({ has: page.getByRole("rowheader", { name: `${keyword}: bid` }) })
    await row.getByRole("cell", { name: usd(item!.proposal.body.newBidMicros) }).waitFor({ timeout: WAIT_MS })
    expect(await row.getByRole("cell").first().innerText()).toMatch(/^(\$\d+\.\d\d|ad group default)$/)
    await expectAccessible("a plan item's preview")
    await entry.getByRole("button", { name: "Propose" }).click()
    await entry.getByRole("status").filter({ hasText: "Proposed:" }).waitFor({ timeout: WAIT_MS })
    const ledger = await p.api("key", (client) =>
      client.actions.listActions({ path: { projectId: p.account.projectId }, urlParams: { kind: "keyword_bid_change", limit: 5 } })
    )
    expect(ledger.actions.length).toBe(1)
  })

  it("engages the kill switch after a confirmation, and sets how long a queued change waits", async () => {
    await goTo(`#/policy/${p.account.projectId}`, "Policy and settings")
    await page.getByText(/Auto-applies in the last 24 hours/).waitFor({ timeout: WAIT_MS })
    await expectAccessible("policy page")
    await page.getByRole("button", { name: "Stop all auto-applies…" }).click()
    const dialog = page.getByRole("dialog", { name: "Change the workspace settings?" })
    await dialog.getByText(/Nothing will auto-apply/).waitFor({ timeout: WAIT_MS })
    await expectAccessible("the kill switch's confirmation")
    await dialog.getByRole("button", { name: "Confirm" }).click()
    await page.getByText("Auto-apply is off: the kill switch is engaged.").waitFor({ timeout: WAIT_MS })
    const settings = await p.as("key", "GET", "/settings")
    expect(settings.body).toMatchObject({ platformAutoApply: false })

    await page.getByLabel(/Queued changes expire after/).fill("48")
    await page.getByRole("button", { name: "Save expiry" }).click()
    await page.getByRole("status").filter({ hasText: "Settings saved: queued changes expire after 48 hours." }).waitFor({ timeout: WAIT_MS })
    expect((await p.as("key", "GET", "/settings")).body).toMatchObject({ approvalTtlHours: 48, platformAutoApply: false })
  })

  it("shows the account's guardrails on, sets an envelope and a ceiling, and resumes auto-apply the circuit breaker paused", async () => {
    const projectId = p.account.projectId
    const guardrailsOf = async () => {
      const answer = await p.as("key", "GET", `/accounts/${projectId}/guardrails`)
      expect(answer.status, answer.text).toBe(200)
      return Schema.decodeUnknownSync(Guardrails)(answer.body)
    }
    const policyOf = async () => {
      const answer = await p.as("key", "GET", `/accounts/${projectId}/policy`)
      expect(answer.status, answer.text).toBe(200)
      return Schema.decodeUnknownSync(PolicyDocument)(answer.body)
    }
    const guardrailsCard = page.getByRole("region", { name: "Guardrails", exact: true })
    const row = (header: string) => guardrailsCard.getByRole("row").filter({ has: page.getByRole("rowheader", { name: header, exact: true }) })

    // Nobody set them: the defaults, on, with the envelope's numbers in dollars.
    await goTo(`#/policy/${projectId}`, "Policy and settings")
    const before = await policyOf()
    expect(before.guardrails.isDefault).toBe(true)
    await guardrailsCard.getByText("defaults, on", { exact: true }).waitFor({ timeout: WAIT_MS })
    await row("24-hour envelope").getByRole("cell", { name: `${usd(before.envelope.maxIncrease24h)} (the default: 20 % of the total daily budget 24 hours ago)` })
      .waitFor({ timeout: WAIT_MS })
    await row("Total daily budget now").getByRole("cell", { name: usd(before.envelope.totalDailyBudget) }).waitFor({ timeout: WAIT_MS })
    await row("Ceiling of the total daily budget").getByRole("cell", { name: "No ceiling set" }).waitFor({ timeout: WAIT_MS })
    await row("Cooldown on the same entity").getByRole("cell", { name: "bid 72 h, budget 72 h, status none" }).waitFor({ timeout: WAIT_MS })
    await row("Two people approve").getByRole("cell", { name: /^a budget raise past 25 %; removing 10 or more entities; enabling a campaign$/ })
      .waitFor({ timeout: WAIT_MS })
    await expectAccessible("policy page with the default guardrails")

    // The admin sets a 24-hour envelope of $25 and a ceiling of twice today's total, in the currency's units.
    const ceilingMicros = Math.ceil((before.envelope.totalDailyBudget * 2) / 1_000_000) * 1_000_000
    const form = page.getByRole("form", { name: "Change the guardrails" })
    await form.getByLabel(/^24-hour envelope/).fill("25")
    await form.getByLabel(/^Ceiling of the total daily budget/).fill(String(ceilingMicros / 1_000_000))
    await form.getByLabel("After a bid change").fill("48")
    await form.getByLabel(/^Most of a source ad group's spend its negatives may remove/).fill("15")
    await form.getByRole("button", { name: "Save guardrails" }).click()
    await guardrailsCard.getByRole("status").filter({ hasText: "Guardrails saved." }).waitFor({ timeout: WAIT_MS })
    await guardrailsCard.getByText("set by an admin", { exact: true }).waitFor({ timeout: WAIT_MS })
    await row("24-hour envelope").getByRole("cell", { name: "$25.00 (set by an admin)" }).waitFor({ timeout: WAIT_MS })
    await row("Ceiling of the total daily budget").getByRole("cell", { name: `${usd(ceilingMicros)} (nobody can approve a raise past it)` })
      .waitFor({ timeout: WAIT_MS })
    await row("Cooldown on the same entity").getByRole("cell", { name: "bid 48 h, budget 72 h, status none" }).waitFor({ timeout: WAIT_MS })
    await row("Search-term harvest").getByRole("cell", { name: "refused when its negatives remove more than 15 % of a source ad group's 30-day spend" })
      .waitFor({ timeout: WAIT_MS })
    const saved = await guardrailsOf()
    expect(saved).toMatchObject({
      isDefault: false,
      envelope: { maxDailyBudgetIncreaseMicros24h: 25_000_000, maxTotalDailyBudgetMicros: ceilingMicros },
      cooldownHours: { bid: 48, budget: 72, status: 0 },
      evidence: { minDays: 7, minInstalls: 20 },
      highRisk: { budgetIncreasePct: 25, removals: 10, enableCampaign: true },
      circuitBreaker: { failures: 5, windowMinutes: 10 },
      maxDeliveryShareRemovedPct: 15
    })
    expect((await policyOf()).envelope).toMatchObject({ maxIncrease24h: 25_000_000, maxTotal: ceilingMicros })

    // An amount the API cannot take is refused with the field named, and nothing changes.
    await form.getByLabel(/^24-hour envelope/).fill("1e30")
    await form.getByRole("button", { name: "Save guardrails" }).click()
    await guardrailsCard.getByRole("alert").filter({ hasText: /^invalid request: envelope\.maxDailyBudgetIncreaseMicros24h: Expected an integer/ })
      .waitFor({ timeout: WAIT_MS })
    expect(await guardrailsOf()).toEqual(saved)

    // The circuit breaker opened (arranged in the database): the page says so first, and the admin resumes.
    const reason = "5 upstream write failures within 10 minutes"
    const paused = await p.sql(
      `UPDATE guardrails SET paused_reason = $1, paused_since = now() WHERE project_id = $2
       RETURNING project_id, pg_notify('acs_invalidate', 'g:' || project_id)`,
      [reason, projectId]
    )
    expect(paused).toHaveLength(1)
    await waitFor("the policy to see the pause", policyOf, (policy) => policy.guardrails.autoApplyPaused !== null, { intervalMs: 100 })
    await page.reload()
    const banner = page.getByRole("alert").filter({ hasText: "Auto-apply is paused for this account" })
    await banner.getByText(reason, { exact: false }).waitFor({ timeout: WAIT_MS })
    await expectAccessible("policy page with auto-apply paused")

    // An approver reads the same, with neither the form nor the button: changing guardrails is an admin's.
    const approver = await p.api("person", (client) =>
      client.people.createPerson({ payload: { email: "gale@console.example", name: "Gale Approver", role: "approver" } })
    )
    const other = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const reader = await other.newPage()
    await reader.goto(p.server.baseUrl)
    await reader.getByLabel("Email").fill("gale@console.example")
    await reader.getByLabel("Password").fill(approver.password ?? "")
    await reader.getByRole("button", { name: "Sign in" }).click()
    await reader.getByRole("heading", { level: 1, name: "Approvals" }).waitFor({ timeout: WAIT_MS })
    await reader.goto(`${p.server.baseUrl}/#/policy/${projectId}`)
    await reader.getByRole("alert").filter({ hasText: "Auto-apply is paused for this account" }).waitFor({ timeout: WAIT_MS })
    const readOnly = reader.getByRole("region", { name: "Guardrails", exact: true })
    await readOnly.getByRole("cell", { name: "$25.00 (set by an admin)" }).waitFor({ timeout: WAIT_MS })
    expect(await reader.getByRole("button", { name: "Resume auto-apply…" }).count()).toBe(0)
    expect(await reader.getByRole("form", { name: "Change the guardrails" }).count()).toBe(0)
    await other.close()

    await page.getByRole("button", { name: "Resume auto-apply…" }).click()
    const dialog = page.getByRole("dialog", { name: "Resume auto-apply for this account?" })
    await dialog.getByText(reason, { exact: false }).waitFor({ timeout: WAIT_MS })
    await expectAccessible("the resume confirmation")
    await dialog.getByRole("button", { name: "Resume auto-apply", exact: true }).click()
    await banner.waitFor({ state: "detached", timeout: WAIT_MS })
    expect(await page.getByRole("button", { name: "Resume auto-apply…" }).count()).toBe(0)
    expect((await guardrailsOf()).autoApplyPaused).toBeNull()
  })

  it("shows a high-risk change approved once as waiting for a second person, and lets another person give it", async () => {
    // In the second account: the first one's campaigns are this file's other tests'.
    const { projectId, upstreamAccountId } = p.secondAccount
    const campaign = (await p.run(p.upstream.campaigns(upstreamAccountId))).find((c) => !c.deleted && c.dailyBudgetMicros !== null)!
    const raised = Math.round((campaign.dailyBudgetMicros! * 1.3) / 10_000) * 10_000
    const answer = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: raised, reason: "scale" }, {
      as: "key",
      projectId
    })
    expect(answer.status, answer.text).toBe(201)
    const action = proposalOf(answer)
    expect(action.riskTier).toBe("high")
    const first = await p.as("approver", "POST", `/accounts/${projectId}/approvals/${action.actionId}/approve`)
    expect(first.status, first.text).toBe(200)
    await goTo("#/approvals", "Approvals")
    const entry = card(action.actionId)
    await entry.getByText(/^two people: a budget raise of 30\.0% is past the 25% high-risk line$/).waitFor({ timeout: WAIT_MS })
    await entry.getByRole("note").filter({ hasText: /^Approved by key “second approver” .*: a high-risk change needs a second person to approve it\.$/ })
      .waitFor({ timeout: WAIT_MS })
    await expectAccessible("a high-risk change approved once")
    await entry.getByRole("button", { name: "Approve", exact: true }).click()
    await waitFor("the second approval", () => p.action(action.actionId, projectId), (a) => a.status !== "proposed")
    expect((await p.action(action.actionId, projectId)).approvals.map((a) => a.by.kind)).toEqual(["key", "person"])
  })

  it("shows the person's own proposal as one they cannot approve (who may approve), and rejects it with a reason", async () => {
    // The kill switch is engaged: the person's own proposal queues.
    const { action, campaign } = await proposeBudget("person", "my own idea")
    withdrawnCampaign = campaign
    expect(action.mode).toBe("queued")
    await goTo("#/approvals", "Approvals")
    const entry = card(action.actionId)
    await entry.waitFor({ timeout: WAIT_MS })
    await entry.getByRole("note").filter({ hasText: "You proposed this change yourself: another approver must approve it" }).waitFor({ timeout: WAIT_MS })
    expect(await entry.getByRole("button", { name: "Approve", exact: true }).count()).toBe(0)
    await expectAccessible("approvals page with an own proposal")

    await entry.getByRole("button", { name: "Withdraw…" }).click()
    const dialog = page.getByRole("dialog", { name: "Reject this change?" })
    await dialog.getByLabel(/Reason/).fill("not this week")
    await expectAccessible("the reject dialog")
    await dialog.getByRole("button", { name: "Reject", exact: true }).click()
    await entry.waitFor({ state: "detached", timeout: WAIT_MS })
    const rejected = await p.action(action.actionId)
    expect(rejected).toMatchObject({ status: "rejected", decisionReason: "not this week" })
  })

  it("lets the person approve their own agent's change, says why, and follows the rule chosen on the Policy page", async () => {
    const agent = (await p.api("person", (client) => client.keys.createKey({ payload: { name: "my bidding agent", scope: "write" } }))).secret
    const propose = async (reason: string) => {
      // The campaign of the change withdrawn above: the demo account has few campaigns to spare.
      const campaign = withdrawnCampaign!
      const answer = await call(`${p.server.api}/accounts/${p.account.projectId}/actions/budget-change`, {
        method: "POST",
        key: agent,
        body: { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round((campaign.dailyBudgetMicros! * 0.9) / 10_000) * 10_000, reason }
      })
      expect(answer.status, answer.text).toBe(201)
      return proposalOf(answer).actionId
    }

    // Another person is needed under distinct_person: the admin chooses it on the Policy page.
    await goTo("#/policy", "Policy and settings")
    await page.getByLabel("Who may approve a change (four eyes)").selectOption("distinct_person")
    await page.getByRole("button", { name: "Save rule…" }).click()
    await page.getByRole("dialog", { name: "Change the workspace settings?" }).getByRole("button", { name: "Confirm" }).click()
    await page.getByRole("status").filter({ hasText: "Settings saved: the four-eyes rule is distinct_person." }).waitFor({ timeout: WAIT_MS })
    expect((await p.as("key", "GET", "/settings")).body).toMatchObject({ fourEyes: "distinct_person" })
    const held = await propose("my agent, under distinct_person")
    await goTo("#/approvals", "Approvals")
    await card(held).getByRole("note").filter({ hasText: /needs another person to approve it/ }).waitFor({ timeout: WAIT_MS })
    expect(await card(held).getByRole("button", { name: "Approve", exact: true }).count()).toBe(0)

    // Back to the default: the person reviews their agent's change and approves it.
    await goTo("#/policy", "Policy and settings")
    await page.getByLabel("Who may approve a change (four eyes)").selectOption("distinct_actor")
    await page.getByRole("button", { name: "Save rule…" }).click()
    await page.getByRole("dialog", { name: "Change the workspace settings?" }).getByRole("button", { name: "Confirm" }).click()
    await page.getByRole("status").filter({ hasText: "Settings saved: the four-eyes rule is distinct_actor." }).waitFor({ timeout: WAIT_MS })
    await goTo("#/approvals", "Approvals")
    const entry = card(held)
    await entry.getByRole("note").filter({ hasText: `Your key "my bidding agent" proposed this change: you review it as its person.` })
      .waitFor({ timeout: WAIT_MS })
    await expectAccessible("approvals page with an agent's proposal")
    await entry.getByRole("button", { name: "Approve", exact: true }).click()
    await entry.waitFor({ state: "detached", timeout: WAIT_MS })
    expect((await p.action(held)).decidedBy).toMatchObject({ kind: "person" })
  })

  it("rejects several selected proposals at once with one reason", async () => {
    const first = await proposeBudget("key", "batch one")
    const second = await proposeBudget("key", "batch two")
    for (const id of [first.action.actionId, second.action.actionId]) {
      await card(id).waitFor({ timeout: WAIT_MS })
      await card(id).getByRole("checkbox").check()
    }
    await page.getByRole("button", { name: "Reject selected…" }).click()
    const dialog = page.getByRole("dialog", { name: "Reject 2 changes?" })
    await dialog.getByLabel(/Reason/).fill("budget freeze")
    await dialog.getByRole("button", { name: "Reject", exact: true }).click()
    for (const id of [first.action.actionId, second.action.actionId]) {
      await card(id).waitFor({ state: "detached", timeout: WAIT_MS })
      expect(await p.action(id)).toMatchObject({ status: "rejected" })
    }
  })

  it("shows a sync started from the console running and then done, live, and the outside change it found in the ledger, filtered by who", async () => {
    const campaign = freshCampaign()
    const answer = p.simulator.webUiWrite({
      adAccountId: Number(p.account.upstreamAccountId),
      method: "PUT",
      path: `/v1/campaigns/${campaign.campaignId}`,
      body: { dailyBudget: { value: { amount: "77.70", currency: "USD" } } },
      user: "web-ui-user@example.com"
    })
    expect(answer.status, JSON.stringify(answer.body)).toBe(200)

    // The sync's first report is held a few seconds upstream, so it is seen running.
    p.simulator.control.addFault({ kind: "timeout", delayMs: 8_000, path: "/reports/" })
    await goTo(`#/accounts/${p.account.projectId}`, "Accounts")
    await page.getByRole("heading", { name: "Plan" }).waitFor({ timeout: WAIT_MS })
    // Its place in the sync queue (GET /sync-queue): this server runs no scheduled syncs.
    await page.getByRole("row").filter({ has: page.getByRole("link", { name: p.account.name, exact: true }) })
      .getByRole("cell", { name: "not scheduled" }).waitFor({ timeout: WAIT_MS })
    await expectAccessible("accounts page")
    // A mark on the page's window: gone if the page reloads.
    await page.evaluate("window.__sameDocument = true")
    const sync = page.getByRole("region", { name: "Sync" })
    await sync.getByRole("button", { name: "Sync now" }).click()
    // Live progress: the running sync's step and progress bar, then its end state, without a reload.
    await sync.getByRole("progressbar").waitFor({ timeout: WAIT_MS })
    await sync.getByText("running", { exact: true }).waitFor({ timeout: WAIT_MS })
    await sync.getByRole("button", { name: "Syncing…" }).waitFor({ timeout: WAIT_MS })
    await expectAccessible("accounts page with a sync running")
    await sync.getByText("succeeded", { exact: true }).waitFor({ timeout: WAIT_MS })
    await sync.getByText(/manual sync started .*, [\d,]+ rows/).waitFor({ timeout: WAIT_MS })
    expect(await sync.getByRole("progressbar").count()).toBe(0)
    expect(await page.evaluate<boolean>("window.__sameDocument === true"), "no reload").toBe(true)
    await waitFor("the outside change recorded", async () => {
      const ledger = await p.api("key", (client) =>
        client.actions.listActions({ path: { projectId: p.account.projectId }, urlParams: { origin: "external", limit: 50 } })
      )
      return ledger.actions.map((a) => Schema.decodeUnknownSync(ExternalChangePayload)(a.payload))
    }, (payloads) => payloads.some((payload) => payload.entity.id === campaign.campaignId), { intervalMs: 250 })

    await goTo(`#/ledger/${p.account.projectId}`, "Ledger")
    await page.getByLabel("Origin").selectOption("external")
    const outside = page.locator("li.external").filter({ hasText: "web-ui-user@example.com" }).first()
    await outside.waitFor({ timeout: WAIT_MS })
    await outside.getByText("Change details").click()
    await outside.getByRole("cell", { name: "$77.70" }).waitFor({ timeout: WAIT_MS })
    await expectAccessible("ledger of outside changes")

    // Who proposed, filtered on the server: the outside modifier's changes only, then the key's actions only.
    await page.getByLabel("Origin").selectOption("")
    await page.getByLabel("Proposed by").selectOption("web-ui-user@example.com")
    await page.locator("ol.timeline > li").first().waitFor({ timeout: WAIT_MS })
    await waitFor("only the outside modifier's changes", () => page.locator("ol.timeline > li").evaluateAll((items) =>
      items.map((item) => item.className)), (classes) => classes.length > 0 && classes.every((c) => c === "external"))
    const keyId = (await p.api("key", (client) => client.auth.getMe())).principal
    const keyActions = await p.api("key", (client) =>
      client.actions.listActions({ path: { projectId: p.account.projectId }, urlParams: { proposedBy: keyId.id, limit: 100 } })
    )
    const expected = keyActions.actions.map((a) => a.actionId)
    await page.getByLabel("Proposed by").selectOption({ label: `key “${keyId.name}”` })
    await waitFor("only the key's actions", () => page.locator("ol.timeline > li").evaluateAll((items) =>
      items.map((item) => item.getAttribute("data-action-id"))), (ids) => JSON.stringify(ids) === JSON.stringify(expected.slice(0, 25)))
    await expectAccessible("ledger filtered by who proposed")
  })

  it("fits a phone-width screen, every page without horizontal scrolling or a serious axe-core violation", async () => {
    const phone = await context.newPage()
    await phone.setViewportSize({ width: 390, height: 844 })
    const fits = async (what: string) => {
      const overflow = await phone.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth")
      expect(overflow, `${what}: no horizontal scrolling`).toBeLessThanOrEqual(0)
      expect(await seriousViolations(phone), `${what} at phone width: serious or critical axe-core violations`).toEqual([])
    }
    await phone.goto(`${p.server.baseUrl}/#/approvals`)
    await phone.getByRole("heading", { level: 1, name: "Approvals" }).waitFor({ timeout: WAIT_MS })
    await fits("approvals")
    await phone.getByRole("button", { name: "Menu" }).click()
    await fits("the open menu")
    await phone.getByRole("link", { name: "Ledger" }).click()
    await phone.getByRole("heading", { level: 1, name: "Ledger" }).waitFor({ timeout: WAIT_MS })
    // The first account's ledger (the menu names no account), whatever it holds.
    await phone.locator("ol.timeline, p.empty").first().waitFor({ timeout: WAIT_MS })
    await fits("ledger")
    for (const [hash, heading] of [
      [`#/accounts/${p.account.projectId}`, "Accounts"],
      [`#/search-terms/${p.account.projectId}`, "Search terms"],
      [`#/policy/${p.account.projectId}`, "Policy and settings"],
      ["#/keys", "Keys and people"],
      ["#/password", "Change your password"]
    ] as const) {
      await phone.goto(`${p.server.baseUrl}/${hash}`)
      await phone.getByRole("heading", { level: 1, name: heading }).waitFor({ timeout: WAIT_MS })
      await fits(heading)
    }
    await phone.close()
  })

  it("changes the password, which ends the person's other sessions", async () => {
    const other = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const elsewhere = await other.newPage()
    await signIn(elsewhere, password)

    await goTo("#/password", "Change your password")
    await expectAccessible("password page")
    // A common password is refused by the server, and the page says why (docs/contract.md 8).
    await page.getByLabel("Current password").fill(password)
    await page.getByLabel("New password (at least 12 characters, not a common one)").fill("qwerty123456")
    await page.getByLabel("New password again").fill("qwerty123456")
    await page.getByRole("button", { name: "Change password" }).click()
    await page.getByRole("alert").filter({ hasText: "one of the most common passwords" }).waitFor({ timeout: WAIT_MS })

    const next = "console-new-password-0123456789"
    await page.getByLabel("New password (at least 12 characters, not a common one)").fill(next)
    await page.getByLabel("New password again").fill(next)
    await page.getByRole("button", { name: "Change password" }).click()
    await page.getByRole("status").filter({ hasText: "Password changed" }).waitFor({ timeout: WAIT_MS })
    password = next

    // This browser continues; the other one is signed out on its next request.
    await goTo("#/approvals", "Approvals")
    await elsewhere.reload()
    await elsewhere.getByRole("heading", { name: "Sign in to acs" }).waitFor({ timeout: WAIT_MS })
    await signIn(elsewhere, next)
    await other.close()
    const old = await call(`${p.server.api}/auth/login`, { method: "POST", body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } })
    expect(old.status).toBe(401)
    expect(BOOTSTRAP_KEY).toMatch(/^acs_/)
  })
})

describe("a crafted console link", () => {
  // Its own browser context, signed in with the password the tests above left, whose API requests it records.
  let linksContext: BrowserContext
  let linksPage: Page
  /** Every API request the browser sent (method, path and query, as the browser sent them). */
  const sent: Array<{ readonly method: string; readonly path: string; readonly search: string }> = []
  /** API requests sent and not yet answered (the live stream aside: it stays open). */
  const inFlight = new Set<object>()

  /** The shell's own reads on any page: who is signed in, the accounts, the live stream (or its polling fallback). */
  const SHELL = new Set(["/api/v1/auth/me", "/api/v1/accounts", "/api/v1/events/stream", "/api/v1/events"])

  /** What the Approvals page, the first after sign-in, reads of each account. */
  const APPROVALS_PAGE_READS = ["/approvals", "/changesets"]

  /** What the Accounts page reads of its account when it opens (besides each account's freshness). */
  const ACCOUNTS_PAGE_READS = ["/campaigns", "/keywords", "/plan", "/syncs"]

  const notFound = () => linksPage.getByRole("heading", { level: 1, name: "Page not found" })

  beforeAll(async () => {
    linksContext = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    linksContext.on("request", (request) => {
      const url = new URL(request.url())
      if (url.pathname.startsWith("/api/")) sent.push({ method: request.method(), path: url.pathname, search: url.search })
      if (url.pathname.startsWith("/api/") && url.pathname !== "/api/v1/events/stream") inFlight.add(request)
    })
    linksContext.on("requestfinished", (request) => inFlight.delete(request))
    linksContext.on("requestfailed", (request) => inFlight.delete(request))
    linksPage = await linksContext.newPage()
    await linksPage.goto(p.server.baseUrl)
    await linksPage.getByLabel("Email").fill(ADMIN_EMAIL)
    await linksPage.getByLabel("Password").fill(password)
    await linksPage.getByRole("button", { name: "Sign in" }).click()
    await linksPage.getByRole("heading", { level: 1, name: "Approvals" }).waitFor({ timeout: WAIT_MS })
    // The Approvals page's own reads (actions and changesets waiting) answered first, so that on a busy machine none
    // of them is taken for a request of the first crafted link.
    await waitFor("the Approvals page's reads sent and answered", () => Promise.resolve(sent), (reads) =>
      APPROVALS_PAGE_READS.every((end) => reads.some((r) => r.path.endsWith(end))) && inFlight.size === 0)
  })

  afterAll(async () => {
    await linksContext?.close()
  })

  /** The API requests sent from `from` on that are not the shell's own. */
  const beyondShell = (from: number) => sent.slice(from).filter((r) => !SHELL.has(r.path))

  /**
   * Opens `hash` (a fresh load, or a change of the hash in the open console) and waits for the not-found page, or
   * for a request beyond the shell's, whichever comes first; then requires the page and no such request.
   */
  const expectNotFound = async (hash: string, how: "load" | "hashchange") => {
    const from = sent.length
    if (how === "load") {
      await linksPage.goto("about:blank")
      await linksPage.goto(`${p.server.baseUrl}/${hash}`)
    } else {
      await linksPage.evaluate(`window.location.hash = ${JSON.stringify(hash)}`)
    }
    await waitFor(`${hash}: the not-found page or a request beyond the shell's`, async () => ({
      shown: await notFound().isVisible(),
      beyond: beyondShell(from)
    }), (seen) => seen.shown || seen.beyond.length > 0)
    expect(beyondShell(from), `${hash}: API requests beyond the shell's`).toEqual([])
    expect(await notFound().isVisible(), `${hash}: the not-found page`).toBe(true)
  }

  const stranger = newId("prj")
  const crafted = [
    "#/ledger/..%2F..%2Fkeys",
    "#/ledger/x%2F..%2F..%2Fkeys%3F",
    "#/accounts/..%2F..%2Fpeople%23",
    "#/policy/..",
    "#/ledger/../../keys",
    "#/ledger/%zz",
    "#/accounts/x%3Fa%3D1",
    `#/policy/${stranger}`,
    "#/keys/..%2Fpeople",
    "#/nonsense"
  ]

  it("opened in a new page shows the not-found page and sends nothing beyond the shell's reads", async () => {
    for (const hash of [...crafted, `#/ledger/${p.account.projectId}%2F..%2F..%2Fkeys`, `#/ledger/${p.account.projectId}/..%2Fkeys`]) {
      await expectNotFound(hash, "load")
    }
    expect(await seriousViolations(linksPage), "the not-found page: serious or critical axe-core violations").toEqual([])
  })

  it("followed inside the open console shows the not-found page and sends nothing beyond the shell's reads", async () => {
    for (const hash of crafted) {
      // From an account's page each time, so every crafted link changes the route.
      const opened = sent.length
      await linksPage.evaluate(`window.location.hash = "#/accounts"`)
      await linksPage.getByRole("heading", { level: 1, name: "Accounts" }).waitFor({ timeout: WAIT_MS })
      // The Accounts page's own reads all start when it mounts: wait until they were sent and answered, so none
      // of them is taken for a request of the crafted link.
      await waitFor("the Accounts page's reads sent and answered", () => Promise.resolve(sent.slice(opened)), (reads) =>
        ACCOUNTS_PAGE_READS.every((end) => reads.some((r) => r.path.endsWith(end))) && inFlight.size === 0)
      await expectNotFound(hash, "hashchange")
    }
  })

  it("a well-formed link to the person's account reads that account's paths only (and the ledger's names of keys and people)", async () => {
    const from = sent.length
    await linksPage.goto("about:blank")
    await linksPage.goto(`${p.server.baseUrl}/#/ledger/${p.account.projectId}`)
    await linksPage.getByRole("heading", { level: 1, name: "Ledger" }).waitFor({ timeout: WAIT_MS })
    const reads = await waitFor("the ledger's read", () => Promise.resolve(beyondShell(from)), (r) => r.length > 0)
    const ledgerNames = ["/api/v1/keys", "/api/v1/people"]
    for (const read of reads) {
      if (ledgerNames.includes(read.path)) expect(read.search, JSON.stringify(read)).toBe("")
      else expect(read.path, JSON.stringify(read)).toMatch(new RegExp(`^/api/v1/accounts/${p.account.projectId}/`))
    }
    expect(reads.some((r) => r.path === `/api/v1/accounts/${p.account.projectId}/actions`)).toBe(true)
  })
})
