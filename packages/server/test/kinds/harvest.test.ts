/**
 * harvest_search_terms through REST to the simulator and back (docs/contract.md 2.1): search terms become EXACT
 * keywords in their target ad groups and EXACT negatives where they came from. One keyword add failing skips only its
 * own negative; the write calls are the platform's bulk creates (one spanning the ad groups on v1); the preview states
 * the share of each source ad group's 30-day delivery the negatives remove (against figures worked out by hand from
 * arranged warehouse rows); the guardrail `maxDeliveryShareRemovedPct` refuses a harvest that removes too much; the
 * revert removes both halves and reports a negative removed outside acs since as conflicted. An agent over MCP reads
 * the search terms, previews and proposes the harvest in one tool sequence.
 */
import { CreatedKey } from "@acs/domain/ApiKeys"
import { DEFAULT_GUARDRAILS } from "@acs/domain/Guardrails"
import type { ProposalPreview } from "@acs/domain/Actions"
import type { UpstreamAdGroup, UpstreamCampaign } from "@acs/upstream/Upstream"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addSearchTerm, setDaily } from "../support/arrange.ts"
import { type Pipeline, proposalOf, startPipeline, validationFailureOf } from "../support/pipeline.ts"
import { errorCode } from "../support/server.ts"
import { AD_GROUP_NEGATIVES_BULK_CREATE, KEYWORDS_BULK_CREATE } from "../support/upstreamPaths.ts"
import { waitFor } from "../support/wait.ts"

let p: Pipeline
let adGroups: Array<UpstreamAdGroup>

const account = () => p.account.upstreamAccountId
const project = () => p.account.projectId

/** An ad group no other test in this file touches. */
const fresh = () => {
  const adGroup = adGroups.shift()
  if (adGroup === undefined) throw new Error("the demo account has too few ad groups for this file")
  return adGroup
}

const upstreamKeywordTexts = async (adGroup: UpstreamAdGroup) =>
  (await p.run(p.upstream.keywords(account(), adGroup.campaignId, adGroup.adGroupId))).map((k) => `${k.text} ${k.matchType}`)

const upstreamNegativeTexts = async (adGroup: UpstreamAdGroup) =>
  (await p.run(p.upstream.negativeKeywords(account(), adGroup.campaignId)))
    .filter((n) => n.adGroupId === adGroup.adGroupId)
    .map((n) => `${n.text} ${n.matchType}`)

const harvest = (terms: ReadonlyArray<Record<string, unknown>>, options: { readonly preview?: boolean } = {}) =>
  p.as("key", "POST", `/accounts/${project()}/actions/harvest-search-terms${options.preview === true ? "?preview=true" : ""}`, {
    terms,
    negateAtSource: true,
    reason: "harvest converting search terms"
  })

/** Proposes with the key (a harvest is always reviewed), approves as a person, waits for the apply. */
const harvested = async (terms: ReadonlyArray<Record<string, unknown>>) => {
  const answer = await harvest(terms)
  expect(answer.status, answer.text).toBe(201)
  const action = proposalOf(answer)
  expect(action).toMatchObject({ kind: "harvest_search_terms", mode: "queued" })
  const approved = await p.as("approver", "POST", `/accounts/${project()}/approvals/${action.actionId}/approve`)
  expect(approved.status, approved.text).toBe(200)
  return p.settle(action.actionId)
}

const term = (text: string, source: UpstreamAdGroup, target: UpstreamAdGroup, bidMicros?: number) => ({
  text,
  sourceAdGroupId: source.adGroupId,
  targetAdGroupId: target.adGroupId,
  ...(bidMicros === undefined ? {} : { bidMicros })
})

/** The platform's writes since `since`: no reads (v1 reads with POST …/find and …/query), no token calls. */
const writeCalls = (since: number) =>
  p.simulator.control.listCalls({ since }).filter((call) =>
    (call.path.startsWith("/v1/") || call.path.startsWith("/api/")) && call.method !== "GET" && !/\/(find|query)$/.test(call.path)
  )

const lastSeq = () => p.simulator.control.listCalls().at(-1)?.seq ?? 0

beforeAll(async () => {
  p = await startPipeline({ seed: 53, env: { CHANGE_HISTORY_POLL_SECONDS: "0" } })
  const campaigns: ReadonlyArray<UpstreamCampaign> = (await p.run(p.upstream.campaigns(account()))).filter((c) => c.bidStrategy === "MANUAL_CPT")
  adGroups = (await Promise.all(campaigns.map((c) => p.run(p.upstream.adGroups(account(), c.campaignId))))).flat()
}, 600_000)

afterAll(async () => {
  await p?.close()
})

describe("harvest_search_terms", () => {
  it("adds each keyword, then negates only the terms whose keyword exists: one failed add skips its own negative", async () => {
    const source = fresh()
    const first = fresh()
    const second = adGroups.find((g) => g.campaignId !== first.campaignId) ?? fresh()
    adGroups = adGroups.filter((g) => g !== second)
    p.simulator.control.addFault({ kind: "bulkRows", rows: [1], method: "POST", path: KEYWORDS_BULK_CREATE, message: "simulated row failure" })
    const since = lastSeq()
    const applied = await harvested([
      term("acs harvest alpha", source, first, 20_000),
      term("acs harvest bravo", source, first),
      term("acs harvest charlie", source, second)
    ])
    expect(applied.status, JSON.stringify(applied)).toBe("applied")
    expect(applied.warnings).toEqual([
      `term "acs harvest bravo": its keyword was not added to ad group "${first.name}": INTERNAL_ERROR: simulated row failure; ` +
      `so it is not negated in ad group "${source.name}"`
    ])
    expect(Object.keys(applied.result ?? {}).sort()).toEqual(["keywordId:0", "keywordId:2", "negativeKeywordId:0", "negativeKeywordId:2"])
    expect(await upstreamKeywordTexts(first)).toEqual(expect.arrayContaining(["acs harvest alpha EXACT"]))
    expect(await upstreamKeywordTexts(first)).not.toContain("acs harvest bravo EXACT")
    expect(await upstreamKeywordTexts(second)).toEqual(expect.arrayContaining(["acs harvest charlie EXACT"]))
    const negated = await upstreamNegativeTexts(source)
    expect(negated).toEqual(expect.arrayContaining(["acs harvest alpha EXACT", "acs harvest charlie EXACT"]))
    expect(negated).not.toContain("acs harvest bravo EXACT")
    // The fewest writes: keywords then negatives, in bulk (v1's bulk create spans ad groups; v5's is per ad group).
    const writes = writeCalls(since).map((call) => `${call.method} ${call.path}`)
    if (writes.some((w) => w.includes("/v1/"))) {
      expect(writes).toEqual(["POST /v1/keywords/bulk-create", "POST /v1/negative-keywords/bulk-create"])
    } else {
      expect(writes.filter((w) => w.endsWith("/targetingkeywords/bulk"))).toHaveLength(2)
      expect(writes.filter((w) => w.endsWith("/negativekeywords/bulk"))).toHaveLength(1)
      expect(writes).toHaveLength(3)
    }
    // The new keywords and negatives are in the warehouse at once.
    const rows = await p.sql<{ text: string }>(
      `SELECT text FROM keywords WHERE project_id = $1 AND keyword_id = ANY($2::text[]) ORDER BY text`,
      [project(), [applied.result?.["keywordId:0"], applied.result?.["keywordId:2"]]]
    )
    expect(rows.map((r) => r.text)).toEqual(["acs harvest alpha", "acs harvest charlie"])
    // After the next sync the guard watches the new keywords, at keyword level.
    const sync = await p.as("person", "POST", `/accounts/${project()}/syncs`)
    expect(sync.status, sync.text).toBeLessThan(300)
    const watches = await waitFor(
      "the guard's watch of the harvest",
      () => p.sql<{ level: string; entityKeys: Array<string> }>(
        `SELECT level, entity_keys AS "entityKeys" FROM watches WHERE project_id = $1 AND watch_id = $2`,
        [project(), applied.actionId]
      ),
      (found) => found.length === 1
    )
    expect(watches[0]).toEqual({ level: "keywords", entityKeys: [String(applied.result?.["keywordId:0"]), String(applied.result?.["keywordId:2"])].sort() })
  })

  it("fails with nothing left behind when the negatives' call fails as a whole: the keywords are removed again", async () => {
    const source = fresh()
    const target = fresh()
    p.simulator.control.addFault({ kind: "status", status: 500, method: "POST", path: AD_GROUP_NEGATIVES_BULK_CREATE })
    const failed = await harvested([term("acs harvest doomed", source, target)])
    expect(failed.status, JSON.stringify(failed)).toBe("failed")
    expect(failed.failure).toMatchObject({ step: 2, stepName: "create negative keywords", message: expect.stringMatching(/rolled back/) })
    expect(await upstreamKeywordTexts(target)).not.toContain("acs harvest doomed EXACT")
    expect(await upstreamNegativeTexts(source)).not.toContain("acs harvest doomed EXACT")
  })

  it("previews the share of each source ad group's 30-day spend, taps and installs its negatives remove", async () => {
    const source = fresh()
    const target = fresh()
    const place = { campaignId: source.campaignId, adGroupId: source.adGroupId, keywordId: null }
    await setDaily(p, "adGroups", source.adGroupId, { spendMicros: 200_000_000, taps: 400, installs: 40 })
    await addSearchTerm(p, place, "acs share one", { spendMicros: 30_000_000, taps: 60, installs: 8 })
    // The same text under another keyword of the ad group: an EXACT negative there stops it too.
    await addSearchTerm(p, { ...place, keywordId: "991" }, "ACS Share One", { spendMicros: 4_000_000, taps: 10, installs: 0 })
    await addSearchTerm(p, place, "acs share two", { spendMicros: 6_000_000, taps: 20, installs: 2 })
    await addSearchTerm(p, place, "acs share kept", { spendMicros: 50_000_000, taps: 100, installs: 10 })
    const answer = await harvest([term("acs share one", source, target), term("acs share two", source, target)], { preview: true })
    expect(answer.status, answer.text).toBe(200)
    const preview = answer.body as ProposalPreview
    expect(preview).toMatchObject({ kind: "harvest_search_terms", mode: "queued", riskTier: "review" })
    // By hand: (30 + 4 + 6) / 200 USD = 20 %; (60 + 10 + 20) / 400 taps = 22.5 %; (8 + 0 + 2) / 40 installs = 25 %.
    expect(preview.payload["priorDelivery"]).toMatchObject({
      adGroups: [{
        adGroupId: source.adGroupId,
        total: { spendMicros: 200_000_000, taps: 400, installs: 40 },
        removed: { spendMicros: 40_000_000, taps: 90, installs: 10 },
        removedPct: { spend: 20, taps: 22.5, installs: 25 }
      }]
    })
    expect(preview.summary).toContain(`"${source.name}" 20% of spend, 22.5% of taps, 25% of installs`)
    // Exactly at the default guardrail (20 %) is allowed: it refuses more than that.
    const recorded = await harvest([term("acs share one", source, target), term("acs share two", source, target)])
    expect(recorded.status, recorded.text).toBe(201)
  })

  it("refuses a harvest whose negatives remove more than maxDeliveryShareRemovedPct of a source ad group's spend", async () => {
    const source = fresh()
    const target = fresh()
    const place = { campaignId: source.campaignId, adGroupId: source.adGroupId, keywordId: null }
    await setDaily(p, "adGroups", source.adGroupId, { spendMicros: 100_000_000, taps: 100, installs: 10 })
    await addSearchTerm(p, place, "acs greedy term", { spendMicros: 35_000_000, taps: 20, installs: 2 })
    const terms = [term("acs greedy term", source, target)]
    const refused = await harvest(terms)
    expect([refused.status, errorCode(refused)], refused.text).toEqual([422, "validation_failed"])
    expect(validationFailureOf(refused).validation_errors).toEqual([
      `the negatives would remove 35% of the spend of ad group "${source.name}" over the last 30 days (35.00 USD of 100.00 USD), ` +
      "more than the guardrail maxDeliveryShareRemovedPct allows (20%)"
    ])
    expect(await upstreamKeywordTexts(target)).not.toContain("acs greedy term EXACT")
    // An admin who allows more lets the same harvest through.
    const put = await p.as("person", "PUT", `/accounts/${project()}/guardrails`, { ...DEFAULT_GUARDRAILS, maxDeliveryShareRemovedPct: 40 })
    expect(put.status, put.text).toBe(200)
    try {
      const allowed = await harvest(terms)
      expect(allowed.status, allowed.text).toBe(201)
    } finally {
      await p.as("person", "PUT", `/accounts/${project()}/guardrails`, DEFAULT_GUARDRAILS)
    }
  })

  it("refuses terms already keywords or negatives there, duplicates, a source that is its target and a full ad group", async () => {
    const source = fresh()
    const target = fresh()
    await harvested([term("acs harvest once", source, target)])
    const refused = await harvest([
      term("acs harvest once", source, target),
      term("acs harvest twice", source, target),
      term("ACS harvest twice", source, target),
      term("acs harvest self", target, target)
    ])
    expect([refused.status, errorCode(refused)], refused.text).toEqual([422, "validation_failed"])
    expect([...validationFailureOf(refused).validation_errors].sort()).toEqual([
      `"acs harvest twice" is harvested into ad group "${target.name}" 2 times in the request`,
      `"acs harvest once" is already an EXACT keyword of ad group "${target.name}"`,
      `"acs harvest once" is already an EXACT negative keyword of ad group "${source.name}" (or its campaign)`,
      `"acs harvest self" comes from ad group "${target.name}", its target: a negative there would block the new keyword`,
      `"acs harvest twice" is negated in ad group "${source.name}" 2 times in the request`
    ].sort())
    // The platform's 5,000 keywords and negatives per ad group: a full ad group (in the warehouse only) takes no more.
    const full = fresh()
    await p.sql(
      `INSERT INTO keywords (project_id, keyword_id, ad_group_id, campaign_id, text, match_type, status, bid_micros)
       SELECT $1, 'acs-full-' || i, $2, $3, 'acs filler ' || i, 'EXACT', 'ACTIVE', NULL FROM generate_series(1, 5000) i
       ON CONFLICT DO NOTHING`,
      [project(), full.adGroupId, full.campaignId]
    )
    const held = (await p.sql<{ n: number }>(
      `SELECT (SELECT count(*) FROM keywords WHERE project_id = $1 AND ad_group_id = $2)::int
         + (SELECT count(*) FROM negative_keywords WHERE project_id = $1 AND ad_group_id = $2)::int AS n`,
      [project(), full.adGroupId]
    ))[0]!.n
    const over = await harvest([term("acs harvest overflow", source, full)])
    expect([over.status, errorCode(over)], over.text).toEqual([422, "validation_failed"])
    expect(validationFailureOf(over).validation_errors).toEqual([
      `ad group "${full.name}" would hold ${held + 1} keywords and negative keywords (it holds ${held}); the platform allows at most 5000`
    ])
    const unknown = await harvest([{ text: "acs nowhere", sourceAdGroupId: "999999999", targetAdGroupId: target.adGroupId }])
    expect([unknown.status, errorCode(unknown)]).toEqual([404, "not_found"])
  })

  it("reverts both halves; a negative removed outside acs since is reported conflicted, the rest removed", async () => {
    const source = fresh()
    const target = fresh()
    const applied = await harvested([term("acs undo one", source, target), term("acs undo two", source, target)])
    expect(applied.status).toBe("applied")
    const removedOutside = String(applied.result?.["negativeKeywordId:1"])
    const outside = p.simulator.webUiWrite({ adAccountId: Number(account()), method: "DELETE", path: `/v1/negative-keywords/${removedOutside}` })
    expect([200, 204], JSON.stringify(outside.body)).toContain(outside.status)

    const conflicted = `conflicted: negative keyword ${removedOutside} "acs undo two" (EXACT) of ad group "${source.name}" of campaign ` +
      `"${await campaignName(source)}" was removed outside acs since the harvest added it; nothing left to remove`
    // The revert's preview names it already, and the revert still applies at once.
    const preview = await p.as("person", "POST", `/accounts/${project()}/actions/${applied.actionId}/revert?preview=true`)
    expect(preview.status, preview.text).toBe(200)
    expect(preview.body).toMatchObject({ kind: "unharvest_search_terms", mode: "auto_applied", policyReasons: [expect.any(String), conflicted] })
    const answer = await p.as("person", "POST", `/accounts/${project()}/actions/${applied.actionId}/revert`)
    expect(answer.status, answer.text).toBe(201)
    expect(proposalOf(answer)).toMatchObject({ mode: "auto_applied", policyReasons: [expect.any(String), conflicted] })
    const compensation = await p.settle(proposalOf(answer).actionId)
    expect(compensation).toMatchObject({ status: "applied", kind: "unharvest_search_terms", revertOf: applied.actionId })
    expect(compensation.warnings).toEqual([conflicted])
    expect(await p.action(applied.actionId)).toMatchObject({ status: "reverted", revertedBy: compensation.actionId })
    expect((await upstreamKeywordTexts(target)).filter((t) => t.startsWith("acs undo"))).toEqual([])
    expect((await upstreamNegativeTexts(source)).filter((t) => t.startsWith("acs undo"))).toEqual([])
  })
})

describe("harvest_search_terms over MCP", () => {
  it("an agent reads the search terms, previews the harvest and proposes it, in one tool sequence", async () => {
    const source = fresh()
    const target = fresh()
    const place = { campaignId: source.campaignId, adGroupId: source.adGroupId, keywordId: null }
    await setDaily(p, "adGroups", source.adGroupId, { spendMicros: 80_000_000, taps: 200, installs: 20 })
    await addSearchTerm(p, place, "acs agent term", { spendMicros: 8_000_000, taps: 30, installs: 5 })
    const created = await p.as("key", "POST", "/keys", { name: "harvesting agent", scope: "write" })
    expect(created.status, created.text).toBe(201)
    const agent = new Client({ name: "acs-agent", version: "1.0.0" })
    await agent.connect(new StreamableHTTPClientTransport(new URL(`${p.server.baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${Schema.decodeUnknownSync(CreatedKey)(created.body).secret}` } }
    }))
    try {
      const tool = async (name: string, args: Record<string, unknown>) => {
        const result = await agent.callTool({ name, arguments: args })
        expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false)
        return result.structuredContent
      }
      const listed = Schema.decodeUnknownSync(SearchTerms)(
        await tool("platform_list_search_terms", { projectId: project(), adGroupId: source.adGroupId, days: 30, limit: 1000 })
      )
      const found = listed.searchTerms.find((row) => row.text === "acs agent term")
      expect(found).toMatchObject({ adGroupId: source.adGroupId })
      const args = {
        projectId: project(),
        terms: [{ text: found?.text, sourceAdGroupId: found?.adGroupId, targetAdGroupId: target.adGroupId }],
        reason: "the agent's harvest of a converting term"
      }
      const preview = Schema.decodeUnknownSync(Previewed)(await tool("platform_propose_harvest_search_terms", { ...args, preview: true }))
      expect(preview.payload.priorDelivery.adGroups).toEqual([
        expect.objectContaining({ adGroupId: source.adGroupId, removedPct: { spend: 10, taps: 15, installs: 25 } })
      ])
      const proposal = await tool("platform_propose_harvest_search_terms", args)
      expect(proposal).toMatchObject({ kind: "harvest_search_terms", mode: "queued", status: "proposed" })
    } finally {
      await agent.close()
    }
  })
})

/** What the test reads of a search-term list and of a harvest's preview. */
const SearchTerms = Schema.Struct({ searchTerms: Schema.Array(Schema.Struct({ text: Schema.NullOr(Schema.String), adGroupId: Schema.String })) })
const Previewed = Schema.Struct({
  payload: Schema.Struct({
    priorDelivery: Schema.Struct({
      adGroups: Schema.Array(Schema.Struct({
        adGroupId: Schema.String,
        removedPct: Schema.Struct({ spend: Schema.Number, taps: Schema.Number, installs: Schema.Number })
      }))
    })
  })
})

const campaignName = async (adGroup: UpstreamAdGroup) => (await p.run(p.upstream.campaign(account(), adGroup.campaignId))).name
