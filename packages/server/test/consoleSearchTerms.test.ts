/**
 * The search-terms page of the console (docs/contract.md 2.1.1, 2.2; docs/decisions/console.md),
 * in a real browser: headless Chromium from Debian driven by playwright-core against the real server, the simulator and
 * PostgreSQL. The demo account is synced; in one campaign two Search Match terms convert well in a source ad group, its
 * low-volume bucket carries spend, and another ad group is the campaign's exact-match one (warehouse rows arranged with
 * SQL, as plan.test.ts does: the simulator's metrics follow from its seed). Filtered to that campaign and ad group, the
 * page lists the terms by spend with the bucket marked low-volume and the candidates marked; the plan's candidate shows
 * its expected effect, its terms chosen from the start. The person chooses just those two with the keyboard, previews
 * the harvest (the share of the source's spend, taps and installs the negatives remove, as the server's preview
 * states it) and proposes it: one harvest_search_terms action in the ledger, queued for review, proposed by the
 * person. No serious or critical axe-core violation, at 1280 px and at phone width. The run writes the picture of the
 * page in docs/using-the-api.md (docs/console-search-terms.png).
 */
import * as Path from "node:path"
import { isProposalResponse } from "@acs/domain/Actions"
import { Schema } from "effect"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { accountTotals, addSearchTerm, setDaily, type Totals, windowEnd } from "./support/arrange.ts"
import { launchBrowser, seriousViolations, signedInPage } from "./support/browser.ts"
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Pipeline, startPipeline } from "./support/pipeline.ts"
import { repoRoot } from "./support/server.ts"
import { WAIT_MS } from "./support/wait.ts"

let p: Pipeline
let browser: Browser
let page: Page
/** The campaign, its source ad group (Search Match) and its exact-match ad group, with their names. */
let place: { campaignId: string; campaignName: string; source: string; sourceName: string; exact: string; exactName: string }

/** The two terms' cost per install: a quarter of the account's at most, each a cent. */
let cpa: number

const WINNER = "console harvest winner"
const RUNNER = "console harvest runner"
const BUCKET: Totals = { spendMicros: 7_310_000, taps: 30, installs: 0 }

const Totals3 = Schema.Struct({ spendMicros: Schema.Number, taps: Schema.Number, installs: Schema.Number })
/** What a harvest's payload records of its sources' delivery (HarvestSearchTerms.ts). */
const PriorDelivery = Schema.Struct({
  priorDelivery: Schema.Struct({
    adGroups: Schema.Array(Schema.Struct({
      adGroupId: Schema.String,
      total: Totals3,
      removed: Totals3,
      removedPct: Schema.Struct({ spend: Schema.Number, taps: Schema.Number, installs: Schema.Number })
    }))
  })
})
const HarvestTerms = Schema.Struct({
  negateAtSource: Schema.Boolean,
  terms: Schema.Array(Schema.Struct({ text: Schema.String, sourceAdGroupId: Schema.String, targetAdGroupId: Schema.String }))
})

const usd = (micros: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" }).format(micros / 1_000_000)

const expectAccessible = async (what: string) => {
  const violations = await seriousViolations(page)
  expect(violations, `${what}: serious or critical axe-core violations`).toEqual([])
}

const projectId = () => p.account.projectId

beforeAll(async () => {
  p = await startPipeline({ seed: 67, env: { CHANGE_HISTORY_POLL_SECONDS: "0" } })
  const end = await windowEnd(p)
  const adGroups = await p.sql<{ campaignId: string; campaignName: string; adGroupId: string; name: string; keywords: number; spend: string }>(
    `SELECT c.campaign_id AS "campaignId", c.name AS "campaignName", g.ad_group_id AS "adGroupId", g.name,
       (SELECT count(*) FROM keywords k WHERE k.project_id = g.project_id AND k.ad_group_id = g.ad_group_id)::int AS keywords,
       (SELECT coalesce(sum(m.spend_micros), 0) FROM daily_metrics m WHERE m.project_id = g.project_id AND m.level = 'adGroups'
         AND m.entity_key = g.ad_group_id AND m.day BETWEEN $2::date - 29 AND $2::date)::text AS spend
     FROM campaigns c JOIN ad_groups g ON g.project_id = c.project_id AND g.campaign_id = c.campaign_id AND g.status = 'ENABLED'
     WHERE c.project_id = $1 AND c.status = 'ENABLED' AND c.bid_strategy = 'MANUAL_CPT' ORDER BY g.ad_group_id`,
    [projectId(), end]
  )
  // A campaign with an ad group holding keywords (to be its exact-match one) and another that spent (the source):
  // the one whose source spent most. The two terms spend at most a tenth of the source's, under the guardrail's 20 %.
  const options = [...new Set(adGroups.map((g) => g.campaignId))].flatMap((campaignId) => {
    const own = adGroups.filter((g) => g.campaignId === campaignId)
    // Named as what they are made here where the seed allows it (the page's picture reads better).
    const named = (g: { readonly name: string }) => (/exact/i.test(g.name) ? 1 : 0)
    const exact = [...own].filter((g) => g.keywords > 0).sort((a, b) => named(b) - named(a) || b.keywords - a.keywords)[0]
    const source = own.filter((g) => g !== exact).sort((a, b) => named(a) - named(b) || Number(b.spend) - Number(a.spend))[0]
    return exact === undefined || source === undefined || exact.keywords === 0 || Number(source.spend) === 0 ? [] : [{ exact, source }]
  }).sort((a, b) => Number(b.source.spend) - Number(a.source.spend))
  const chosen = options[0]
  if (chosen === undefined) throw new Error("the seeded account has no enabled MANUAL_CPT campaign with an ad group holding keywords and another that spent")
  place = {
    campaignId: chosen.source.campaignId,
    campaignName: chosen.source.campaignName,
    source: chosen.source.adGroupId,
    sourceName: chosen.source.name,
    exact: chosen.exact.adGroupId,
    exactName: chosen.exact.name
  }
  // The campaign's exact-match ad group is the one the plan harvests into: Search Match off, every keyword EXACT;
  // every other ad group of the campaign runs Search Match, so it is the only one.
  await p.sql("UPDATE ad_groups SET search_match = (ad_group_id <> $3) WHERE project_id = $1 AND campaign_id = $2",
    [projectId(), place.campaignId, place.exact])
  await p.sql("UPDATE keywords SET match_type = 'EXACT' WHERE project_id = $1 AND ad_group_id = $2", [projectId(), place.exact])
  // Two Search Match terms at a quarter of the account's cost per install: candidates. The source's low-volume bucket.
  const account = await accountTotals(p)
  cpa = Math.floor(Math.min(account.spendMicros / account.installs / 4, Number(chosen.source.spend) / 100) / 10_000) * 10_000
  expect(cpa).toBeGreaterThan(0)
  const at = { campaignId: place.campaignId, adGroupId: place.source, keywordId: null }
  await addSearchTerm(p, at, WINNER, { spendMicros: 6 * cpa, taps: 60, installs: 6 })
  await addSearchTerm(p, at, RUNNER, { spendMicros: 4 * cpa, taps: 45, installs: 4 })
  const bucket = JSON.stringify([place.source, null, null])
  await p.sql(
    `INSERT INTO search_terms (project_id, entity_key, campaign_id, ad_group_id, keyword_id, text)
     VALUES ($1, $2, $3, $4, NULL, NULL) ON CONFLICT DO NOTHING`,
    [projectId(), bucket, place.campaignId, place.source]
  )
  await setDaily(p, "searchTerms", bucket, BUCKET)

  browser = await launchBrowser()
  page = await signedInPage(browser, p.server.baseUrl, ADMIN_EMAIL, ADMIN_PASSWORD, WAIT_MS)
}, 600_000)

afterAll(async () => {
  await browser?.close()
  await p?.close()
})

describe("the search-terms page", () => {
  it("lists the terms with the low-volume bucket marked, the candidates with their effect, previews the share the negatives remove and proposes the harvest", async () => {
    const plan = await p.api("key", (client) => client.insights.getPlan({ path: { projectId: projectId() }, urlParams: { limit: 1000 } }))
    const harvests = plan.items.filter((i) => i.proposal.kind === "harvest_search_terms")
    const candidate = harvests.find((i) => i.itemId === `harvest:${place.source}`)
    expect(candidate, JSON.stringify(plan.items.map((i) => i.itemId))).toBeDefined()
    if (candidate?.proposal.kind !== "harvest_search_terms") throw new Error("the source's candidate is no harvest")
    expect(candidate.proposal.body.negateAtSource).toBe(true)
    const mine = candidate.proposal.body.terms.filter((t) => t.text === WINNER || t.text === RUNNER)
    expect(mine.map((t) => [t.text, t.targetAdGroupId]).sort()).toEqual([[RUNNER, place.exact], [WINNER, place.exact]])
    const candidateTerms = harvests.reduce((n, i) => n + (i.proposal.kind === "harvest_search_terms" ? i.proposal.body.terms.length : 0), 0)

    await page.getByRole("link", { name: "Search terms" }).click()
    await page.getByRole("heading", { level: 1, name: "Search terms" }).waitFor({ timeout: WAIT_MS })
    // A select's name is its label and its chosen option.
    const filters = page.getByRole("group", { name: "Filters" })
    await filters.getByRole("combobox", { name: /^Account/ }).selectOption(projectId())
    // Every candidate of the plan is chosen from the start.
    await page.getByText(`${candidateTerms} term${candidateTerms === 1 ? "" : "s"} chosen.`, { exact: true }).waitFor({ timeout: WAIT_MS })
    await page.getByText(/^Data synced .* ago/).waitFor({ timeout: WAIT_MS })

    await filters.getByRole("combobox", { name: /^Campaign/ }).selectOption(place.campaignId)
    await filters.getByRole("combobox", { name: /^Ad group/ }).selectOption(place.source)
    const terms = page.getByRole("region", { name: `Search terms of ${p.account.name}` })
    const rowOf = (name: string | RegExp) => terms.getByRole("row").filter({ has: page.getByRole("rowheader", { name }) })
    const winnerRow = rowOf(new RegExp(`^${WINNER}`))
    await winnerRow.getByText("candidate", { exact: true }).waitFor({ timeout: WAIT_MS })
    await winnerRow.getByRole("cell", { name: "Search Match", exact: true }).waitFor({ timeout: WAIT_MS })
    // The bucket: marked low-volume, with its spend, and nothing to tick.
    const bucketRow = rowOf("low-volume")
    await bucketRow.getByRole("cell", { name: usd(BUCKET.spendMicros), exact: true }).waitFor({ timeout: WAIT_MS })
    await expect(bucketRow.getByRole("checkbox").count()).resolves.toBe(0)
    // Only the filter's ad group, spend-ranked as the server answers.
    const read = await p.api("key", (client) =>
      client.warehouse.listSearchTerms({ path: { projectId: projectId() }, urlParams: { limit: 200, campaignId: place.campaignId, adGroupId: place.source } }))
    const shown = await terms.locator("tbody tr th").allInnerTexts()
    expect(shown.map((t) => t.replace(/\s*candidate$/, ""))).toEqual(read.searchTerms.map((r) => r.text ?? "low-volume"))

    // The candidate with its expected effect, its terms chosen.
    const card = page.locator(`article[data-item-id="harvest:${place.source}"]`)
    await card.getByText(candidate.evidence.expectedEffect!.summary, { exact: false }).waitFor({ timeout: WAIT_MS })
    for (const text of [WINNER, RUNNER]) {
      await expect(card.getByRole("checkbox", { name: `Harvest “${text}” from ${place.sourceName}` }).isChecked()).resolves.toBe(true)
    }

    // Just these two, chosen with the keyboard.
    await page.getByRole("button", { name: "Clear the choice" }).click()
    await page.getByText("No term chosen", { exact: false }).waitFor({ timeout: WAIT_MS })
    for (const text of [WINNER, RUNNER]) {
      const box = card.getByRole("checkbox", { name: `Harvest “${text}” from ${place.sourceName}` })
      await box.focus()
      await page.keyboard.press("Space")
      await expect(box.isChecked()).resolves.toBe(true)
    }
    // What is chosen stays in view over the long table, one click from the harvest.
    const bar = page.getByRole("group", { name: "Chosen terms" })
    await bar.getByText("2 terms chosen to harvest", { exact: true }).waitFor({ timeout: WAIT_MS })
    await bar.getByRole("button", { name: "Go to the harvest" }).click()
    await expect(page.evaluate<string | undefined>("document.activeElement?.id")).resolves.toBe("harvest-title")
    const panel = page.getByRole("region", { name: "Harvest", exact: true })
    await panel.getByText("2 terms chosen.", { exact: true }).waitFor({ timeout: WAIT_MS })
    await expect(panel.getByRole("combobox", { name: `Ad group “${WINNER}” goes into` }).inputValue()).resolves.toBe(place.exact)
    await expect(panel.getByRole("checkbox", { name: /Negate each term/ }).isChecked()).resolves.toBe(true)
    await expect(panel.getByRole("button", { name: "Harvest", exact: true }).isDisabled()).resolves.toBe(true)

    // The preview: the share of the source's delivery the negatives remove, as the server's preview states it.
    await panel.getByRole("button", { name: "Preview" }).click()
    const preview = panel.getByRole("region", { name: "Harvest preview" })
    await preview.waitFor({ timeout: WAIT_MS })
    const body = {
      terms: candidate.proposal.body.terms.filter((t) => t.text === WINNER || t.text === RUNNER),
      negateAtSource: true,
      reason: "Harvest converting search terms as EXACT keywords"
    }
    const expected = await p.api("person", (client) =>
      client.proposals.proposeHarvestSearchTerms({ path: { projectId: projectId() }, payload: body, urlParams: { preview: true }, headers: {} }))
    if (isProposalResponse(expected)) throw new Error("the preview recorded a proposal")
    const delivery = Schema.decodeUnknownSync(PriorDelivery)(expected.payload).priorDelivery.adGroups
    expect(delivery.map((d) => d.adGroupId)).toEqual([place.source])
    const source = delivery[0]!
    // The negated terms carried their own spend in the source, worked out by hand.
    expect(source.removed.spendMicros).toBe(10 * cpa)
    const shareRow = preview.getByRole("row").filter({ has: page.getByRole("rowheader", { name: place.sourceName, exact: true }) })
    await shareRow.getByRole("cell", { name: `${source.removedPct.spend} % (${usd(source.removed.spendMicros)} of ${usd(source.total.spendMicros)})`, exact: true })
      .waitFor({ timeout: WAIT_MS })
    await preview.getByText("It would be queued for review", { exact: false }).waitFor({ timeout: WAIT_MS })
    await panel.screenshot({ path: Path.join(repoRoot, "docs", "console-search-terms.png") })
    await expectAccessible("the search-terms page with a harvest preview")
    await page.setViewportSize({ width: 390, height: 844 })
    await preview.waitFor({ timeout: WAIT_MS })
    const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth")
    expect(overflow, "at phone width: no horizontal scrolling").toBeLessThanOrEqual(0)
    await expectAccessible("the search-terms page at phone width")
    await page.setViewportSize({ width: 1280, height: 900 })

    // Harvest: one proposal, queued for review in the ledger.
    await panel.getByRole("button", { name: "Harvest", exact: true }).click()
    await panel.getByRole("status").filter({ hasText: /^Proposed: Harvest 2 search terms .*queued for review/ }).waitFor({ timeout: WAIT_MS })
    const ledger = await p.api("key", (client) =>
      client.actions.listActions({ path: { projectId: projectId() }, urlParams: { kind: "harvest_search_terms", limit: 5 } }))
    expect(ledger.actions).toHaveLength(1)
    const harvest = ledger.actions[0]!
    expect(harvest).toMatchObject({ kind: "harvest_search_terms", status: "proposed", mode: "queued", proposedBy: { kind: "person" } })
    const recorded = Schema.decodeUnknownSync(HarvestTerms)(harvest.payload)
    expect(recorded.negateAtSource).toBe(true)
    expect(recorded.terms.map((t) => [t.text, t.sourceAdGroupId, t.targetAdGroupId]).sort())
      .toEqual([[RUNNER, place.source, place.exact], [WINNER, place.source, place.exact]])
    await panel.getByRole("link", { name: "See it in the ledger" }).click()
    const entry = page.locator(`li[data-action-id="${harvest.actionId}"]`)
    await entry.getByRole("heading", { name: harvest.summary }).waitFor({ timeout: WAIT_MS })
    // Its details: each term's keyword and negative, and the delivery the negatives take, as previewed.
    await entry.locator("summary", { hasText: "Change details" }).click()
    const writes = entry.getByRole("region", { name: `Fields of ${harvest.summary}` })
    const written = (field: string) => writes.getByRole("row").filter({ has: page.getByRole("rowheader", { name: `${WINNER}: ${field}`, exact: true }) })
    await written("exact keyword").getByRole("cell", { name: `in "${place.exactName}"`, exact: true }).waitFor({ timeout: WAIT_MS })
    await written("exact negative").getByRole("cell", { name: `in "${place.sourceName}"`, exact: true }).waitFor({ timeout: WAIT_MS })
    const sharePerSource = `${source.removedPct.spend} % (${usd(source.removed.spendMicros)} of ${usd(source.total.spendMicros)})`
    await entry.getByRole("cell", { name: sharePerSource, exact: true }).waitFor({ timeout: WAIT_MS })
    // And in the approval queue, where a reviewer decides it.
    await page.getByRole("link", { name: "Approvals" }).click()
    await page.locator(`article[data-action-id="${harvest.actionId}"]`).getByRole("cell", { name: sharePerSource, exact: true }).waitFor({ timeout: WAIT_MS })
  })
})
