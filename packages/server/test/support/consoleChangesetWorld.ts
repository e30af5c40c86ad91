/**
 * The world of the console's changeset tests: a pipeline (real server, simulator, PostgreSQL), its enabled
 * campaigns with a budget, and the admin signed in to the console in headless Chromium.
 */
import { isProposalResponse, type ProposalPreview, type ProposalResponse } from "@acs/domain/Actions"
import type { Browser, Page } from "playwright-core"
import { launchBrowser } from "./browser.ts"
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Pipeline, startPipeline } from "./pipeline.ts"
import { WAIT_MS } from "./wait.ts"

export interface Campaign {
  readonly campaignId: string
  readonly name: string
  readonly dailyBudgetMicros: number
}

export interface ConsoleWorld {
  readonly p: Pipeline
  readonly browser: Browser
  readonly page: Page
  readonly campaigns: Array<Campaign>
}

/** A proposal's answer, not its preview (no `?preview=true` was sent). */
export const recorded = (answer: ProposalResponse | ProposalPreview): ProposalResponse => {
  if (!isProposalResponse(answer)) throw new Error("a preview answered a proposal")
  return answer
}

/** An account's enabled campaigns with a budget, as the warehouse has them. */
export const budgetedCampaigns = async (p: Pipeline, projectId: string): Promise<Array<Campaign>> => {
  const listed = await p.api("key", (client) => client.warehouse.listCampaigns({ path: { projectId }, urlParams: { limit: 100 } }))
  return listed.campaigns.flatMap((c) =>
    c.status === "ENABLED" && c.dailyBudgetMicros !== null && c.dailyBudgetMicros > 0
      ? [{ campaignId: c.campaignId, name: c.name, dailyBudgetMicros: c.dailyBudgetMicros }]
      : []
  )
}

export const startConsoleWorld = async (seed: number): Promise<ConsoleWorld> => {
  const p = await startPipeline({ seed, env: { CHANGE_HISTORY_POLL_SECONDS: "0" } })
  const campaigns = await budgetedCampaigns(p, p.account.projectId)
  const browser = await launchBrowser()
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage()
  await page.goto(p.server.baseUrl)
  await page.getByLabel("Email").fill(ADMIN_EMAIL)
  await page.getByLabel("Password").fill(ADMIN_PASSWORD)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { level: 1, name: "Approvals" }).waitFor({ timeout: WAIT_MS })
  return { p, browser, page, campaigns }
}

/** The next campaign no test of the file has changed yet (`campaigns` is the file's list, consumed). */
export const takeCampaign = (campaigns: Array<Campaign>): Campaign => {
  const campaign = campaigns.shift()
  if (campaign === undefined) throw new Error("the demo account has too few campaigns for this file")
  return campaign
}
