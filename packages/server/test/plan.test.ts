/**
 * The plan on a seeded simulator account: for each rule a crafted case where it fires and a control where it
 * does not, and every item POSTed as is to its path answers 201.
 *
 * The cases are crafted with the target band (PUT /targets) and, for the numbers, with SQL in this file's own
 * database: the simulator's spend and installs follow from its seed and cannot be dialled through the
 * platform's API, so the test writes the warehouse rows (daily metrics, a search term, a budget, a CPA goal)
 * that a sync would have written, and the plan reads them like any other.
 */
import { DEFAULT_GUARDRAILS } from "@acs/domain/Guardrails"
import { Plan } from "@acs/domain/Plan"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { accountTotals, addKeyword, addSearchTerm, campaignTotals, setDaily, type Totals } from "./support/arrange.ts"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"


const CENT = 10_000

let p: Pipeline
/** An enabled MANUAL_CPT campaign with two enabled ad groups, and two other enabled campaigns with installs. */
let manual: { campaignId: string; adGroups: [string, string] }
let limited: string
let roomy: string
let bandMax: number
let accountCpa: number

const cents = (micros: number) => Math.round(micros / CENT) * CENT
const floorCents = (micros: number) => Math.floor(micros / CENT) * CENT

/**
 * The plan as answered. Items are POSTed as they come, so a field the contract does not name fails the
 * decoding rather than being dropped from what is posted.
 */
const plan = async (limit = 1000): Promise<Plan> => {
  const answer = await p.as("key", "GET", `/accounts/${p.account.projectId}/plan?limit=${limit}`)
  expect(answer.status, answer.text).toBe(200)
  return Schema.decodeUnknownSync(Plan, { onExcessProperty: "error" })(answer.body)
}

const item = (answer: Plan, itemId: string) => answer.items.find((i) => i.itemId === itemId)

const putTargets = async (campaigns: Record<string, { minMicros: number; maxMicros: number }>) => {
  const answer = await p.as("key", "PUT", `/accounts/${p.account.projectId}/targets`, { cpaBand: null, campaigns })
  expect(answer.status, answer.text).toBe(200)
}

const activeKeywords = async (adGroupId: string) =>
  (await p.sql<{ keywordId: string; bidMicros: string | null; defaultBidMicros: string }>(
    `SELECT k.keyword_id AS "keywordId", k.bid_micros AS "bidMicros", g.default_bid_micros AS "defaultBidMicros"
     FROM keywords k JOIN ad_groups g ON g.project_id = k.project_id AND g.ad_group_id = k.ad_group_id
     WHERE k.project_id = $1 AND k.ad_group_id = $2 AND k.status = 'ACTIVE' ORDER BY k.keyword_id`,
    [p.account.projectId, adGroupId]
  ))

const setBudget = async (campaignId: string, micros: number) => {
  await p.sql("UPDATE campaigns SET daily_budget_micros = $3 WHERE project_id = $1 AND campaign_id = $2", [p.account.projectId, campaignId, micros])
}

const setCpaGoal = async (adGroupId: string, micros: number | null) => {
  await p.sql("UPDATE ad_groups SET cpa_goal_micros = $3 WHERE project_id = $1 AND ad_group_id = $2", [p.account.projectId, adGroupId, micros])
}

beforeAll(async () => {
  p = await startPipeline({ seed: 31 })
  const projectId = p.account.projectId
  const campaigns = await p.sql<{ campaignId: string; bidStrategy: string; adGroups: Array<string> }>(
    `SELECT c.campaign_id AS "campaignId", c.bid_strategy AS "bidStrategy",
       array_agg(g.ad_group_id ORDER BY g.ad_group_id) FILTER (WHERE g.status = 'ENABLED') AS "adGroups"
     FROM campaigns c JOIN ad_groups g ON g.project_id = c.project_id AND g.campaign_id = c.campaign_id
     WHERE c.project_id = $1 AND c.status = 'ENABLED' GROUP BY c.campaign_id, c.bid_strategy ORDER BY c.campaign_id`,
    [projectId]
  )
  const candidate = campaigns.find((c) => c.bidStrategy === "MANUAL_CPT" && (c.adGroups?.length ?? 0) >= 2)
  if (candidate === undefined) throw new Error("the seeded account has no enabled MANUAL_CPT campaign with two enabled ad groups")
  manual = { campaignId: candidate.campaignId, adGroups: [candidate.adGroups[0]!, candidate.adGroups[1]!] }
  const others: Array<string> = []
  for (const c of campaigns.filter((c) => c.campaignId !== manual.campaignId)) {
    if ((await campaignTotals(p, c.campaignId)).installs > 0) others.push(c.campaignId)
  }
  if (others.length < 2) throw new Error("the seeded account needs two more enabled campaigns with installs")
  ;[limited, roomy] = [others[0]!, others[1]!]
  const totals = await accountTotals(p)
  expect(totals.installs).toBeGreaterThan(0)
  accountCpa = Math.round(totals.spendMicros / totals.installs)
  bandMax = cents(accountCpa)
})

afterAll(async () => {
  await p?.close()
})

describe("the plan", () => {
  it("answers the collection envelope, ranked by spend at stake, limit clamped", async () => {
    const all = await plan()
    expect(all.truncated).toBe(false)
    expect(all.total).toBe(all.items.length)
    expect(all.dataFreshness.coverage).toBe("30 of 30 requested days")
    const impacts = all.items.map((i) => i.impactMicros)
    expect(impacts).toEqual([...impacts].sort((a, b) => b - a))
    if (all.total > 1) {
      const one = await plan(1)
      expect(one).toMatchObject({ total: all.total, truncated: true })
      expect(one.items.map((i) => i.itemId)).toEqual([all.items[0]!.itemId])
    }
    const zero = await plan(0)
    expect(zero.items.length).toBe(Math.min(1, all.total))
  })

  it("(a) suggests EXACT negatives for terms that spent 2× the account CPA without installs, and not for the others", async () => {
    const [adGroupId] = manual.adGroups
    const place = { campaignId: manual.campaignId, adGroupId, keywordId: null }
    const waste: Totals = { spendMicros: 3 * accountCpa, taps: 40, installs: 0 }
    await addSearchTerm(p, place, "planwaste alpha", waste)
    // Controls: it converted; it spent less than the threshold; it is already a campaign negative.
    await addSearchTerm(p, place, "planwaste converting", { ...waste, installs: 1 })
    await addSearchTerm(p, place, "planwaste cheap", { spendMicros: accountCpa, taps: 10, installs: 0 })
    const negative = (await p.sql<{ text: string }>(
      "SELECT text FROM negative_keywords WHERE project_id = $1 AND campaign_id = $2 AND ad_group_id IS NULL LIMIT 1",
      [p.account.projectId, manual.campaignId]
    ))[0]
    if (negative !== undefined) await addSearchTerm(p, place, negative.text, waste)

    const answer = await plan()
    const found = item(answer, `negatives:${adGroupId}`)
    expect(found, JSON.stringify(answer.items.map((i) => i.itemId))).toBeDefined()
    expect(found!.proposal).toMatchObject({
      kind: "add_negative_keywords",
      path: `/api/v1/accounts/${p.account.projectId}/actions/add-negative-keywords`,
      body: { campaignId: manual.campaignId, adGroupId }
    })
    const proposal = found!.proposal
    if (proposal.kind !== "add_negative_keywords") throw new Error(`not a negatives proposal: ${proposal.kind}`)
    const body = proposal.body
    expect(body.keywords).toContainEqual({ text: "planwaste alpha", matchType: "EXACT" })
    expect(body.reason).toMatch(/^acs plan: /)
    expect(found!.evidence).toMatchObject({ windowDays: 30, thresholdMicros: 2 * accountCpa, installs: 0 })
    expect(found!.evidence.items).toContainEqual({ text: "planwaste alpha", id: null, spendMicros: 3 * accountCpa, taps: 40, installs: 0 })
    const suggested = answer.items.flatMap((i) =>
      i.proposal.kind === "add_negative_keywords" ? i.proposal.body.keywords.map((k) => k.text) : []
    )
    expect(suggested).not.toContain("planwaste converting")
    expect(suggested).not.toContain("planwaste cheap")
    if (negative !== undefined) expect(suggested).not.toContain(negative.text)
  })

  it("(b) pauses keywords far over the band without installs, cuts the bid of those with installs, and leaves the rest", async () => {
    const adGroupId = manual.adGroups[1]
    const keywords = await activeKeywords(adGroupId)
    expect(keywords.length).toBeGreaterThanOrEqual(4)
    const [pause, cut, inBand, notFar] = keywords
    await putTargets({ [manual.campaignId]: { minMicros: floorCents(bandMax / 2), maxMicros: bandMax } })
    await setDaily(p, "keywords", pause!.keywordId, { spendMicros: 2 * bandMax, taps: 30, installs: 0 })
    await setDaily(p, "keywords", cut!.keywordId, { spendMicros: 6 * bandMax, taps: 60, installs: 2 })
    // Controls: CPA exactly at the max; no install but spend only 1.2 × the max.
    await setDaily(p, "keywords", inBand!.keywordId, { spendMicros: 2 * bandMax, taps: 30, installs: 2 })
    await setDaily(p, "keywords", notFar!.keywordId, { spendMicros: Math.round(1.2 * bandMax), taps: 12, installs: 0 })

    const answer = await plan()
    const paused = item(answer, `pause:${adGroupId}`)
    expect(paused?.proposal).toMatchObject({ kind: "keyword_status", body: { status: "PAUSED" } })
    expect(paused!.proposal.kind === "keyword_status" && paused!.proposal.body.keywordIds).toContain(pause!.keywordId)
    expect(paused!.evidence).toMatchObject({ band: { maxMicros: bandMax }, thresholdMicros: Math.round(1.5 * bandMax) })

    const bid = Number(cut!.bidMicros ?? cut!.defaultBidMicros)
    const cutItem = item(answer, `bid:${cut!.keywordId}`)
    // CPA is 3 × the max: the bid would be cut to a third, but one step cuts at most half.
    expect(cutItem?.proposal).toMatchObject({
      kind: "keyword_bid_change",
      body: { keywordIds: [cut!.keywordId], newBidMicros: floorCents(bid / 2) }
    })
    expect(cutItem!.evidence).toMatchObject({ cpaMicros: 3 * bandMax, installs: 2, bidMicros: bid })

    const named = answer.items.flatMap((i) => ("keywordIds" in i.proposal.body ? i.proposal.body.keywordIds : []))
    expect(named).not.toContain(inBand!.keywordId)
    expect(named).not.toContain(notFar!.keywordId)
    expect(item(answer, `bid:${pause!.keywordId}`)).toBeUndefined()
  })

  it("(c) raises by 20% the budget of a budget-limited campaign inside the band, not of one with room or out of band", async () => {
    const wide = { minMicros: 0, maxMicros: 1_000_000_000_000 }
    await putTargets({ [manual.campaignId]: { minMicros: floorCents(bandMax / 2), maxMicros: bandMax }, [limited]: wide, [roomy]: wide })
    const limitedDaily = (await campaignTotals(p, limited)).spendMicros / 30
    const budget = floorCents(limitedDaily / 0.95)
    expect(budget).toBeGreaterThan(0)
    await setBudget(limited, budget)
    await setBudget(roomy, cents((3 * (await campaignTotals(p, roomy)).spendMicros) / 30) + CENT)

    const answer = await plan()
    const raise = item(answer, `budget:${limited}`)
    expect(raise?.proposal).toMatchObject({
      kind: "budget_change",
      body: { campaignId: limited, newDailyBudgetMicros: Math.floor((budget * 120) / 100 / CENT) * CENT }
    })
    expect(raise!.evidence).toMatchObject({ dailyBudgetMicros: budget, band: wide })
    expect(raise!.evidence.avgDailySpendMicros).toBeGreaterThanOrEqual(0.9 * budget)
    expect(item(answer, `budget:${roomy}`)).toBeUndefined()
    expect(answer.withheld).toEqual([])

    // A ceiling the raise would pass: not suggested, and the plan says why (docs/contract.md 3.3).
    const total = Number((await p.sql<{ total: string }>("SELECT sum(daily_budget_micros)::text AS total FROM campaigns WHERE project_id = $1", [p.account.projectId]))[0]!.total)
    const guardrails = (envelope: { maxDailyBudgetIncreaseMicros24h: number | null; maxTotalDailyBudgetMicros: number | null }) =>
      p.as("person", "PUT", `/accounts/${p.account.projectId}/guardrails`, { ...DEFAULT_GUARDRAILS, envelope })
    expect((await guardrails({ maxDailyBudgetIncreaseMicros24h: null, maxTotalDailyBudgetMicros: total })).status).toBe(200)
    const capped = await plan()
    expect(item(capped, `budget:${limited}`)).toBeUndefined()
    expect(capped.withheld).toEqual([{ itemId: `budget:${limited}`, title: raise!.title, reason: expect.stringMatching(/^budget ceiling: .* nobody can approve it/) }])
    expect((await guardrails({ maxDailyBudgetIncreaseMicros24h: null, maxTotalDailyBudgetMicros: null })).status).toBe(200)
    expect(item(await plan(), `budget:${limited}`)).toBeDefined()

    // A budget changed within the budget cooldown: a raise now would be held, so it is not suggested either.
    // Arranged in the ledger as applied an hour ago (the warehouse's budget is the test's, not the platform's).
    const actionId = "act_plan_cooldown"
    await p.sql(
      `INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, summary, reason, payload, proposed_by,
         applied_at, created_at)
       SELECT $2, org_id, project_id, 'budget_change', 'auto_applied', 'applied', 'safe', 'trim', 'trim',
         jsonb_build_object('campaignId', $3::text, 'priorDailyBudgetMicros', $4::bigint, 'newDailyBudgetMicros', $4::bigint - 10000),
         '{"kind":"person","id":"psn_plan","name":"plan"}', now() - interval '1 hour', now() - interval '1 hour'
       FROM accounts WHERE project_id = $1`,
      [p.account.projectId, actionId, limited, budget]
    )
    // With its cooldown's mark, as the pipeline's statements write one beside an applied change.
    await p.sql(
      `INSERT INTO cooldown_marks (project_id, cooldown_key, marked_at, action_id, kind)
       SELECT project_id, key, applied_at, action_id, kind FROM actions, unnest(cooldown_keys) AS key WHERE action_id = $1`,
      [actionId]
    )
    const cooling = await plan()
    expect(item(cooling, `budget:${limited}`)).toBeUndefined()
    expect(cooling.withheld).toEqual([{
      itemId: `budget:${limited}`,
      title: expect.any(String),
      reason: expect.stringMatching(new RegExp(`^cooldown: action ${actionId} changed the budget of the same entity`))
    }])
    const noCooldown = await p.as("person", "PUT", `/accounts/${p.account.projectId}/guardrails`, {
      ...DEFAULT_GUARDRAILS,
      cooldownHours: { ...DEFAULT_GUARDRAILS.cooldownHours, budget: 0 }
    })
    expect(noCooldown.status).toBe(200)

    // The same campaign with its CPA outside the band: no raise.
    await putTargets({ [limited]: { minMicros: 0, maxMicros: CENT } })
    expect(item(await plan(), `budget:${limited}`)).toBeUndefined()
  })

  it("(d) steps a CPA goal above the band down by at most 10%, and leaves one inside the band", async () => {
    const [above, inside] = manual.adGroups
    await putTargets({ [manual.campaignId]: { minMicros: floorCents(bandMax / 2), maxMicros: bandMax } })
    await setCpaGoal(above, 2 * bandMax)
    await setCpaGoal(inside, bandMax)
    const answer = await plan()
    const step = item(answer, `cpaGoal:${above}`)
    expect(step?.proposal).toMatchObject({
      kind: "cpa_goal_change",
      body: { adGroupId: above, newCpaGoalMicros: Math.ceil((2 * bandMax * 90) / (100 * CENT)) * CENT }
    })
    expect(step!.evidence).toMatchObject({ cpaGoalMicros: 2 * bandMax })
    expect(item(answer, `cpaGoal:${inside}`)).toBeUndefined()
  })

  it("(e) harvests converting terms that are not keywords yet: into the source, or the campaign's exact-match ad group with negatives at the source", async () => {
    const [source, exact] = manual.adGroups
    const projectId = p.account.projectId
    const band = { minMicros: floorCents(bandMax / 2), maxMicros: bandMax }
    await putTargets({ [manual.campaignId]: band })
    const place = { campaignId: manual.campaignId, adGroupId: source, keywordId: null }
    // CPA half the band's max, 4 installs: a candidate. Controls: 2 installs (too little data); CPA twice the max;
    // already a keyword of the source; already a negative there.
    const winner: Totals = { spendMicros: 2 * bandMax, taps: 50, installs: 4 }
    await addSearchTerm(p, place, "planharvest winner", winner)
    await addSearchTerm(p, place, "planharvest few", { spendMicros: bandMax, taps: 20, installs: 2 })
    await addSearchTerm(p, place, "planharvest costly", { spendMicros: 10 * bandMax, taps: 80, installs: 5 })
    await addSearchTerm(p, place, "planharvest known", winner)
    await addKeyword(p, { keywordId: "kw_planharvest_known", campaignId: manual.campaignId, adGroupId: source, text: "Planharvest Known", matchType: "BROAD" })
    await addSearchTerm(p, place, "planharvest negated", winner)
    await p.sql(
      `INSERT INTO negative_keywords (project_id, negative_keyword_id, campaign_id, ad_group_id, text, match_type, status)
       VALUES ($1, 'neg_planharvest', $2, $3, 'planharvest negated', 'EXACT', 'ACTIVE')`,
      [projectId, manual.campaignId, source]
    )
    // Also converting, but already a keyword of the exact-match ad group once there is one.
    await addSearchTerm(p, place, "planharvest there", winner)
    await addKeyword(p, { keywordId: "kw_planharvest_there", campaignId: manual.campaignId, adGroupId: exact, text: "planharvest there", matchType: "EXACT" })

    const settings = await p.sql<{ adGroupId: string; searchMatch: boolean }>(
      `SELECT ad_group_id AS "adGroupId", search_match AS "searchMatch" FROM ad_groups WHERE project_id = $1 AND campaign_id = $2`,
      [projectId, manual.campaignId]
    )
    const matchTypes = await p.sql<{ keywordId: string; matchType: string }>(
      `SELECT keyword_id AS "keywordId", match_type AS "matchType" FROM keywords WHERE project_id = $1 AND ad_group_id = $2`,
      [projectId, exact]
    )
    const harvest = (answer: Plan) => {
      const found = item(answer, `harvest:${source}`)
      expect(found, JSON.stringify(answer.items.map((i) => i.itemId))).toBeDefined()
      const proposal = found!.proposal
      if (proposal.kind !== "harvest_search_terms") throw new Error(`not a harvest proposal: ${proposal.kind}`)
      expect(proposal.path).toBe(`/api/v1/accounts/${projectId}/actions/harvest-search-terms`)
      return { found: found!, body: proposal.body, texts: proposal.body.terms.map((t) => t.text) }
    }
    const avgCpt = floorCents(winner.spendMicros / winner.taps)
    try {
      // No exact-match ad group in the campaign: the keyword goes into the source itself, which is not negated.
      await p.sql("UPDATE ad_groups SET search_match = true WHERE project_id = $1 AND campaign_id = $2", [projectId, manual.campaignId])
      const inPlace = harvest(await plan())
      expect(inPlace.body.negateAtSource).toBe(false)
      expect(inPlace.body.terms).toContainEqual({ text: "planharvest winner", sourceAdGroupId: source, targetAdGroupId: source, bidMicros: avgCpt })
      expect(inPlace.body.terms.every((t) => t.sourceAdGroupId === source && t.targetAdGroupId === source)).toBe(true)
      expect(inPlace.texts).toContain("planharvest there")
      for (const control of ["planharvest few", "planharvest costly", "planharvest known", "planharvest negated"]) {
        expect(inPlace.texts).not.toContain(control)
      }
      expect(inPlace.body.reason).toMatch(/^acs plan: Harvest /)
      expect(inPlace.found.evidence).toMatchObject({ windowDays: 30, band, targetCpaMicros: bandMax, minInstalls: 3 })
      expect(inPlace.found.evidence.items).toContainEqual({ text: "planharvest winner", id: null, ...winner })
      const effect = inPlace.found.evidence.expectedEffect!
      expect(effect).toMatchObject({ windowDays: 30, installs: inPlace.found.evidence.installs, spendMicros: inPlace.found.impactMicros })
      expect(effect.summary).toMatch(/installs and .* every 30 days at a CPA of .* move onto EXACT keywords/)

      // The campaign has an exact-match ad group (Search Match off, every keyword EXACT): the keywords go there and
      // the source is negated; a term already a keyword there is left out.
      await p.sql("UPDATE ad_groups SET search_match = false WHERE project_id = $1 AND ad_group_id = $2", [projectId, exact])
      await p.sql("UPDATE keywords SET match_type = 'EXACT' WHERE project_id = $1 AND ad_group_id = $2", [projectId, exact])
      const across = harvest(await plan())
      expect(across.body.negateAtSource).toBe(true)
      expect(across.body.terms).toContainEqual({ text: "planharvest winner", sourceAdGroupId: source, targetAdGroupId: exact, bidMicros: avgCpt })
      expect(across.body.terms.every((t) => t.targetAdGroupId === exact)).toBe(true)
      expect(across.texts).not.toContain("planharvest there")
      expect(across.found.rationale).toMatch(/exact-match ad group .*EXACT negatives in/)

      // Without a band the account's 30-day CPA is the target, in whole cents as the plan states every amount.
      await putTargets({})
      const fallback = harvest(await plan())
      expect(fallback.found.evidence).toMatchObject({ band: null, targetCpaMicros: cents(accountCpa) })
      expect(fallback.found.rationale).toContain(`the account's 30-day CPA of ${(cents(accountCpa) / 1_000_000).toFixed(2)} USD`)
      expect(fallback.texts).toContain("planharvest winner")
      expect(fallback.texts).not.toContain("planharvest costly")
    } finally {
      for (const s of settings) {
        await p.sql("UPDATE ad_groups SET search_match = $3 WHERE project_id = $1 AND ad_group_id = $2", [projectId, s.adGroupId, s.searchMatch])
      }
      for (const k of matchTypes) {
        await p.sql("UPDATE keywords SET match_type = $3 WHERE project_id = $1 AND keyword_id = $2", [projectId, k.keywordId, k.matchType])
      }
      await p.sql("DELETE FROM keywords WHERE project_id = $1 AND keyword_id IN ('kw_planharvest_known', 'kw_planharvest_there')", [projectId])
      await p.sql("DELETE FROM negative_keywords WHERE project_id = $1 AND negative_keyword_id = 'neg_planharvest'", [projectId])
    }
  })

  it("suggests nothing from the band when no band is set", async () => {
    await putTargets({})
    const answer = await plan()
    // Negatives and harvests compare with the account's own CPA, not the band.
    expect(answer.items.filter((i) => !i.itemId.startsWith("negatives:") && !i.itemId.startsWith("harvest:"))).toEqual([])
  })

  it("answers 201 to every item POSTed as is, inside the auto-apply set for all but bid cuts", async () => {
    const wide = { minMicros: 0, maxMicros: 1_000_000_000_000 }
    await putTargets({ [manual.campaignId]: { minMicros: floorCents(bandMax / 2), maxMicros: bandMax }, [limited]: wide })
    const answer = await plan()
    const kinds = new Set(answer.items.map((i) => i.proposal.kind))
    expect([...kinds].sort()).toEqual([
      "add_negative_keywords",
      "budget_change",
      "cpa_goal_change",
      "harvest_search_terms",
      "keyword_bid_change",
      "keyword_status"
    ])
    for (const planned of answer.items) {
      expect(planned.proposal.path.startsWith(`/api/v1/accounts/${p.account.projectId}/actions/`)).toBe(true)
      // The key's proposals all queue, so nothing is applied while the rest are posted; riskTier still says
      // whether the policy would clear the change (a harvest always needs review).
      const posted = await p.as("key", "POST", planned.proposal.path.replace(/^\/api\/v1/, ""), planned.proposal.body)
      expect(posted.status, `${planned.itemId}: ${posted.text}`).toBe(201)
      expect(posted.body, planned.itemId).toMatchObject({
        kind: planned.proposal.kind,
        riskTier: planned.proposal.kind === "keyword_bid_change" || planned.proposal.kind === "harvest_search_terms" ? "review" : "safe"
      })
    }
  })

  it("auto-applies a negatives item a person POSTs", async () => {
    const negatives = (await plan()).items.find((i) => i.proposal.kind === "add_negative_keywords")
    expect(negatives).toBeDefined()
    const posted = await p.as("person", "POST", negatives!.proposal.path.replace(/^\/api\/v1/, ""), negatives!.proposal.body)
    expect(posted.status, posted.text).toBe(201)
    expect(posted.body).toMatchObject({ mode: "auto_applied", riskTier: "safe" })
  })
})
