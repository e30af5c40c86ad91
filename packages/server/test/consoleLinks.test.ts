/**
 * Crafted console links in a real browser (docs/decisions/console.md): headless Chromium (Debian's, through playwright-core)
 * signed in to the real server opens links whose account id is `..`, an encoded `/`, `?` or `#`, a malformed
 * escape, an extra segment or an account the person does not reach. Each shows the "Page not found" page, and
 * no request leaves the browser for an API path but the shell's own (who am I, the accounts, the live stream);
 * a well-formed link to the person's account reads that account's paths only (and the ledger's names of keys and people).
 */
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newId } from "../src/db/Ids.ts"
import { launchBrowser, seriousViolations } from "./support/browser.ts"
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Pipeline, startPipeline } from "./support/pipeline.ts"
import { waitFor, WAIT_MS } from "./support/wait.ts"

let p: Pipeline
let browser: Browser
let context: BrowserContext
let page: Page
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

const notFound = () => page.getByRole("heading", { level: 1, name: "Page not found" })

beforeAll(async () => {
  p = await startPipeline({ seed: 67, env: { CHANGE_HISTORY_POLL_SECONDS: "0" } })
  browser = await launchBrowser()
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  context.on("request", (request) => {
    const url = new URL(request.url())
    if (url.pathname.startsWith("/api/")) sent.push({ method: request.method(), path: url.pathname, search: url.search })
    if (url.pathname.startsWith("/api/") && url.pathname !== "/api/v1/events/stream") inFlight.add(request)
  })
  context.on("requestfinished", (request) => inFlight.delete(request))
  context.on("requestfailed", (request) => inFlight.delete(request))
  page = await context.newPage()
  await page.goto(p.server.baseUrl)
  await page.getByLabel("Email").fill(ADMIN_EMAIL)
  await page.getByLabel("Password").fill(ADMIN_PASSWORD)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { level: 1, name: "Approvals" }).waitFor({ timeout: WAIT_MS })
  // The Approvals page's own reads (actions and changesets waiting) answered first, so that on a busy machine none
  // of them is taken for a request of the first crafted link.
  await waitFor("the Approvals page's reads sent and answered", () => Promise.resolve(sent), (reads) =>
    APPROVALS_PAGE_READS.every((end) => reads.some((r) => r.path.endsWith(end))) && inFlight.size === 0)
}, 600_000)

afterAll(async () => {
  await browser?.close()
  await p?.close()
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
    await page.goto("about:blank")
    await page.goto(`${p.server.baseUrl}/${hash}`)
  } else {
    await page.evaluate(`window.location.hash = ${JSON.stringify(hash)}`)
  }
  await waitFor(`${hash}: the not-found page or a request beyond the shell's`, async () => ({
    shown: await notFound().isVisible(),
    beyond: beyondShell(from)
  }), (seen) => seen.shown || seen.beyond.length > 0)
  expect(beyondShell(from), `${hash}: API requests beyond the shell's`).toEqual([])
  expect(await notFound().isVisible(), `${hash}: the not-found page`).toBe(true)
}

describe("a crafted console link", () => {
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
    expect(await seriousViolations(page), "the not-found page: serious or critical axe-core violations").toEqual([])
  })

  it("followed inside the open console shows the not-found page and sends nothing beyond the shell's reads", async () => {
    for (const hash of crafted) {
      // From an account's page each time, so every crafted link changes the route.
      const opened = sent.length
      await page.evaluate(`window.location.hash = "#/accounts"`)
      await page.getByRole("heading", { level: 1, name: "Accounts" }).waitFor({ timeout: WAIT_MS })
      // The Accounts page's own reads all start when it mounts: wait until they were sent and answered, so none
      // of them is taken for a request of the crafted link.
      await waitFor("the Accounts page's reads sent and answered", () => Promise.resolve(sent.slice(opened)), (reads) =>
        ACCOUNTS_PAGE_READS.every((end) => reads.some((r) => r.path.endsWith(end))) && inFlight.size === 0)
      await expectNotFound(hash, "hashchange")
    }
  })

  it("a well-formed link to the person's account reads that account's paths only (and the ledger's names of keys and people)", async () => {
    const from = sent.length
    await page.goto("about:blank")
    await page.goto(`${p.server.baseUrl}/#/ledger/${p.account.projectId}`)
    await page.getByRole("heading", { level: 1, name: "Ledger" }).waitFor({ timeout: WAIT_MS })
    const reads = await waitFor("the ledger's read", () => Promise.resolve(beyondShell(from)), (r) => r.length > 0)
    const ledgerNames = ["/api/v1/keys", "/api/v1/people"]
    for (const read of reads) {
      if (ledgerNames.includes(read.path)) expect(read.search, JSON.stringify(read)).toBe("")
      else expect(read.path, JSON.stringify(read)).toMatch(new RegExp(`^/api/v1/accounts/${p.account.projectId}/`))
    }
    expect(reads.some((r) => r.path === `/api/v1/accounts/${p.account.projectId}/actions`)).toBe(true)
  })
})
