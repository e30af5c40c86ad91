/**
 * Headless Chromium for the console's tests: Debian's `chromium` package (installed with apt-get when missing
 * and we are root, as postgres.ts does for PostgreSQL), driven by playwright-core through `executablePath`;
 * never a downloaded browser. axe-core is evaluated in the page for the accessibility checks. The console is
 * built once for the run (globalSetup.ts), so a test run sees the current source.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import { type Browser, chromium, type Page } from "playwright-core"

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]

const isRoot = process.getuid?.() === 0

export const chromiumPath = (): string => {
  const found = CANDIDATES.find((path) => Fs.existsSync(path))
  if (found !== undefined) return found
  if (!isRoot) throw new Error("Chromium not found: install Debian's `chromium` package")
  execFileSync("apt-get", ["update"], { stdio: "inherit" })
  execFileSync("apt-get", ["install", "-y", "chromium"], { stdio: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } })
  const installed = CANDIDATES.find((path) => Fs.existsSync(path))
  if (installed === undefined) throw new Error("apt-get installed chromium but no chromium binary was found")
  return installed
}

/** Starts a headless browser. */
export const launchBrowser = async (): Promise<Browser> =>
  chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // As root in a container Chromium's sandbox cannot start; the pages are our own.
    args: ["--no-sandbox", "--disable-dev-shm-usage"]
  })

/** A desktop-sized page of the console at `baseUrl`, signed in as the person, on the approval queue. */
export const signedInPage = async (browser: Browser, baseUrl: string, email: string, password: string, timeoutMs: number): Promise<Page> => {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage()
  await page.goto(baseUrl)
  await page.getByLabel("Email").fill(email)
  await page.getByLabel("Password").fill(password)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { level: 1, name: "Approvals" }).waitFor({ timeout: timeoutMs })
  return page
}

const axeSource = Fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

export interface AxeViolation {
  readonly id: string
  readonly impact: string | null
  readonly help: string
  readonly nodes: ReadonlyArray<string>
}

/**
 * The page's serious and critical axe-core violations (WCAG 2 A and AA rules). axe is evaluated through the
 * DevTools protocol, which the page's Content-Security-Policy does not govern, so the CSP stays as served.
 */
export const seriousViolations = async (page: Page): Promise<ReadonlyArray<AxeViolation>> => {
  await page.evaluate(axeSource)
  // A string, evaluated in the page: this file is compiled for Node, without the DOM's types.
  const violations = await page.evaluate<ReadonlyArray<AxeViolation>>(`(async () => {
    const result = await axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] } })
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")) }))
  })()`)
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical")
}
