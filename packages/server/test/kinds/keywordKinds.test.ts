/**
 * The keyword kinds through REST to the simulator and back: add_keywords, keyword_bid_change, keyword_status,
 * change_match_type, remove_keywords, add_negative_keywords and remove_negative_keywords. For each, the apply
 * (upstream changed, ledger applied, warehouse updated), every validation error it can produce, and its revert
 * (or, for remove_keywords, the refusal); bulk calls where some or all rows fail; a composite rolled back. The
 * prior state recorded in `prior…` fields (docs/contract.md 1), and ledger rows written before that rename (migration 0007).
 */
import type { ProposalResponse } from "@acs/domain/Actions"
import type { UpstreamAdGroup, UpstreamCampaign, UpstreamKeyword, UpstreamNegativeKeyword } from "@acs/upstream/Upstream"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import priorFieldNames from "../../src/db/migrations/0007_prior_field_names.ts"
import { type ActionView, type Pipeline, proposalOf, startPipeline, validationFailureOf } from "../support/pipeline.ts"
import { type Answer, errorCode } from "../support/server.ts"
import { KEYWORDS_BULK_CREATE, keywordDeleteRowRefused } from "../support/upstreamPaths.ts"

let p: Pipeline
let manualCampaigns: ReadonlyArray<UpstreamCampaign>
let automaticCampaign: UpstreamCampaign
let manualAdGroups: Array<UpstreamAdGroup>
let automaticAdGroups: Array<UpstreamAdGroup>

const account = () => p.account.upstreamAccountId
const project = () => p.account.projectId

const proposed = (answer: Answer): ProposalResponse => {
  if (answer.status !== 201) throw new Error(`expected 201, got ${answer.status} ${answer.text}`)
  return proposalOf(answer)
}

/** An ad group no other test in this file touches. */
const freshAdGroup = (from: Array<UpstreamAdGroup> = manualAdGroups) => {
  const adGroup = from.shift()
  if (adGroup === undefined) throw new Error("the demo account has too few ad groups for this file")
  return adGroup
}

const upstreamKeywords = (adGroup: UpstreamAdGroup) => p.run(p.upstream.keywords(account(), adGroup.campaignId, adGroup.adGroupId))

const upstreamNegatives = (campaignId: string) => p.run(p.upstream.negativeKeywords(account(), campaignId))

interface KeywordRow extends Record<string, unknown> {
  readonly keywordId: string
  readonly text: string
  readonly matchType: string
  readonly status: string
  readonly bidMicros: string | null
}

const warehouseKeywords = (ids: ReadonlyArray<string>) =>
  p.sql<KeywordRow>(
    `SELECT keyword_id AS "keywordId", text, match_type AS "matchType", status, bid_micros AS "bidMicros" FROM keywords
     WHERE project_id = $1 AND keyword_id = ANY($2::text[]) ORDER BY keyword_id`,
    [project(), ids]
  )

const warehouseKeywordsOf = (adGroupId: string) =>
  p.sql<KeywordRow>(
    `SELECT keyword_id AS "keywordId", text, match_type AS "matchType", status, bid_micros AS "bidMicros" FROM keywords
     WHERE project_id = $1 AND ad_group_id = $2`,
    [project(), adGroupId]
  )

const warehouseNegatives = (ids: ReadonlyArray<string>) =>
  p.sql<{ negativeKeywordId: string; adGroupId: string | null; text: string }>(
    `SELECT negative_keyword_id AS "negativeKeywordId", ad_group_id AS "adGroupId", text FROM negative_keywords
     WHERE project_id = $1 AND negative_keyword_id = ANY($2::text[])`,
    [project(), ids]
  )

const approve = async (actionId: string) => {
  const answer = await p.as("approver", "POST", `/accounts/${project()}/approvals/${actionId}/approve`)
  expect(answer.status, answer.text).toBe(200)
  return p.settle(actionId)
}

const revert = (actionId: string) => p.as("person", "POST", `/accounts/${project()}/actions/${actionId}/revert`)

/** Reverts an applied action and waits for its compensation, which applies at once. */
const reverted = async (original: string, kind: string): Promise<ActionView> => {
  const answer = await revert(original)
  expect(answer.status, answer.text).toBe(201)
  const compensation = await p.settle(proposalOf(answer).actionId)
  expect(compensation, JSON.stringify(compensation)).toMatchObject({ status: "applied", kind, revertOf: original })
  expect(await p.action(original)).toMatchObject({ status: "reverted", revertedBy: compensation.actionId })
  return compensation
}

/** A 422 validation_failed whose recorded ledger row is failed; its validation errors. */
const validationFailed = async (answer: Answer): Promise<ReadonlyArray<string>> => {
  expect([answer.status, errorCode(answer)], answer.text).toEqual([422, "validation_failed"])
  const error = validationFailureOf(answer)
  expect(error.action_id).toEqual(expect.any(String))
  expect(await p.action(error.action_id ?? "")).toMatchObject({ status: "failed" })
  return error.validation_errors
}

const expectError = (answer: Answer, status: number, code: string) => expect([answer.status, errorCode(answer)], answer.text).toEqual([status, code])

/** Proposes with the key (always queued), approves as the person, and waits for the apply. */
const applyReviewed = async (path: string, body: Record<string, unknown>) => {
  const action = proposed(await p.propose(path, body, { as: "key" }))
  expect(action.mode).toBe("queued")
  const applied = await approve(action.actionId)
  expect(applied.status, JSON.stringify(applied)).toBe("applied")
  return applied
}

const activeKeywords = async (adGroup: UpstreamAdGroup, count: number) => {
  const keywords = (await upstreamKeywords(adGroup)).filter((k) => k.status === "ACTIVE")
  if (keywords.length < count) throw new Error(`ad group ${adGroup.adGroupId} has too few active keywords`)
  return keywords.slice(0, count)
}

beforeAll(async () => {
  p = await startPipeline({ seed: 47 })
  const campaigns = await p.run(p.upstream.campaigns(account()))
  manualCampaigns = campaigns.filter((c) => c.bidStrategy === "MANUAL_CPT")
  const automatic = campaigns.find((c) => c.bidStrategy === "MAX_CONVERSIONS")
  if (automatic === undefined || manualCampaigns.length < 2) throw new Error("the demo account lacks a campaign of each bid strategy")
  automaticCampaign = automatic
  manualAdGroups = (await Promise.all(manualCampaigns.map((c) => p.run(p.upstream.adGroups(account(), c.campaignId))))).flat()
  automaticAdGroups = [...(await p.run(p.upstream.adGroups(account(), automatic.campaignId)))]
})

afterAll(async () => {
  await p?.close()
})

describe("add_keywords", () => {
  it("auto-applies a person's few EXACT keywords at a low bid, writes them back, and its revert removes them", async () => {
    const adGroup = freshAdGroup()
    const keywords = [
      { text: "acs alpha one", matchType: "EXACT", bidMicros: 10_000 },
      { text: "acs alpha two", matchType: "EXACT" }
    ]
    const action = proposed(await p.propose("add-keywords", { adGroupId: adGroup.adGroupId, keywords, reason: "grow" }))
    expect(action).toMatchObject({ kind: "add_keywords", mode: "auto_applied", riskTier: "safe" })
    expect(action.policyReasons.join(" ")).toMatch(/auto-apply: 2 EXACT keywords \(at most 10\), each bid at most 1\.5 × the account's 30-day average/)
    expect(action.summary).toContain('"acs alpha one" (EXACT) at 0.01 USD')

    const applied = await p.settle(action.actionId)
    expect(applied.status).toBe("applied")
    expect(applied.warnings).toEqual([])
    const ids = [applied.result?.["keywordId:0"], applied.result?.["keywordId:1"]]
    expect(ids.every((id) => typeof id === "string")).toBe(true)
    const upstream = (await upstreamKeywords(adGroup)).filter((k) => ids.includes(k.keywordId))
    expect(upstream.map((k) => [k.text, k.matchType, k.status, k.bidMicros]).sort()).toEqual([
      ["acs alpha one", "EXACT", "ACTIVE", 10_000],
      ["acs alpha two", "EXACT", "ACTIVE", null]
    ])
    expect((await warehouseKeywords(ids as Array<string>)).map((k) => k.text).sort()).toEqual(["acs alpha one", "acs alpha two"])

    const compensation = await reverted(action.actionId, "remove_keywords")
    expect(compensation.summary).toMatch(/^Revert: remove the 2 keywords added to ad group/)
    expect((await upstreamKeywords(adGroup)).filter((k) => ids.includes(k.keywordId))).toEqual([])
    expect(await warehouseKeywords(ids as Array<string>)).toEqual([])
  })

  it("queues 11 keywords, BROAD keywords and bids above 1.5 × the average CPT, naming each rule", async () => {
    const adGroup = freshAdGroup()
    const eleven = Array.from({ length: 11 }, (_, i) => ({ text: `acs eleven ${i}`, matchType: "EXACT", bidMicros: 10_000 }))
    const many = proposed(await p.propose("add-keywords", { adGroupId: adGroup.adGroupId, keywords: eleven, reason: "x" }))
    expect(many).toMatchObject({ mode: "queued", riskTier: "review" })
    expect(many.policyReasons.join(" ")).toMatch(/outside the auto-apply set: 11 keywords is more than the 10 that auto-apply/)

    const broad = proposed(await p.propose("add-keywords", {
      adGroupId: adGroup.adGroupId,
      keywords: [{ text: "acs broad one", matchType: "BROAD", bidMicros: 10_000 }],
      reason: "x"
    }))
    expect(broad.mode).toBe("queued")
    expect(broad.policyReasons.join(" ")).toMatch(/only EXACT keywords auto-apply, and "acs broad one" \(BROAD\) is not/)

    const pricey = proposed(await p.propose("add-keywords", {
      adGroupId: adGroup.adGroupId,
      keywords: [{ text: "acs pricey one", matchType: "EXACT", bidMicros: 1_000_000_000 }],
      reason: "x"
    }))
    expect(pricey.mode).toBe("queued")
    expect(pricey.policyReasons.join(" ")).toMatch(/the bid of "acs pricey one" \(EXACT\) \(1000\.00 USD\) is above 1\.5 × the account's 30-day average cost per tap/)
  })

  it("refuses texts already in the ad group with that match type and duplicates in the request, listing every reason", async () => {
    const adGroup = freshAdGroup()
    const [existing] = await upstreamKeywords(adGroup)
    const answer = await p.propose("add-keywords", {
      adGroupId: adGroup.adGroupId,
      keywords: [
        { text: existing!.text.toUpperCase(), matchType: existing!.matchType },
        { text: "acs twice", matchType: "EXACT" },
        { text: " ACS Twice ", matchType: "EXACT" },
        { text: "acs twice", matchType: "BROAD" }
      ],
      reason: "x"
    })
    const reasons = await validationFailed(answer)
    expect(reasons).toEqual([
      '"acs twice" (EXACT) appears 2 times in the request',
      `"${existing!.text.toUpperCase()}" (${existing!.matchType}) is already in ad group "${adGroup.name}"`
    ])
  })

  it("refuses more than 5000 keywords and negatives in the ad group", async () => {
    const adGroup = freshAdGroup()
    const held = (await warehouseKeywordsOf(adGroup.adGroupId)).length +
      Number((await p.sql<{ n: string }>("SELECT count(*) AS n FROM negative_keywords WHERE project_id = $1 AND ad_group_id = $2", [
        project(),
        adGroup.adGroupId
      ]))[0]?.n)
    // Filler rows in the warehouse copy bring the ad group to 4,999 (validation is local, against the warehouse).
    await p.sql(
      `INSERT INTO keywords (project_id, keyword_id, ad_group_id, campaign_id, text, match_type, status, bid_micros)
       SELECT $1, 'filler-' || g, $2, $3, 'filler ' || g, 'EXACT', 'ACTIVE', NULL FROM generate_series(1, $4::int) g`,
      [project(), adGroup.adGroupId, adGroup.campaignId, 4999 - held]
    )
    const one = proposed(await p.propose("add-keywords", {
      adGroupId: adGroup.adGroupId,
      keywords: [{ text: "acs the 5000th", matchType: "BROAD" }],
      reason: "x"
    }, { as: "key" }))
    expect(one.mode).toBe("queued")
    const reasons = await validationFailed(
      await p.propose("add-keywords", {
        adGroupId: adGroup.adGroupId,
        keywords: [{ text: "acs over a", matchType: "EXACT" }, { text: "acs over b", matchType: "EXACT" }],
        reason: "x"
      })
    )
    expect(reasons).toEqual([
      `ad group "${adGroup.name}" would hold 5001 keywords and negative keywords (it holds 4999); the platform allows at most 5000`
    ])
  })

  it("refuses bids on a MAX_CONVERSIONS campaign (422 bid_strategy_conflict), an unknown ad group (404) and bad bodies (400)", async () => {
    const adGroup = freshAdGroup(automaticAdGroups)
    const conflict = await p.propose("add-keywords", {
      adGroupId: adGroup.adGroupId,
      keywords: [{ text: "acs auto bid", matchType: "EXACT", bidMicros: 500_000 }, { text: "acs auto none", matchType: "EXACT" }],
      reason: "x"
    })
    expectError(conflict, 422, "bid_strategy_conflict")
    expect(conflict.text).toMatch(/MAX_CONVERSIONS/)
    // Without bids the keywords are fine there.
    const withoutBids = proposed(await p.propose("add-keywords", {
      adGroupId: adGroup.adGroupId,
      keywords: [{ text: "acs auto none", matchType: "EXACT" }],
      reason: "x"
    }, { as: "key" }))
    expect(withoutBids.mode).toBe("queued")

    expectError(
      await p.propose("add-keywords", { adGroupId: "999999999", keywords: [{ text: "x", matchType: "EXACT" }], reason: "x" }),
      404,
      "not_found"
    )
    expectError(
      await p.propose("add-keywords", { adGroupId: adGroup.adGroupId, keywords: [{ text: "x", matchType: "PHRASE" }], reason: "x" }),
      400,
      "invalid_request"
    )
    expectError(await p.propose("add-keywords", { adGroupId: adGroup.adGroupId, keywords: [], reason: "x" }), 400, "invalid_request")
  })

  it("applies with a warning naming the keyword when one row of the bulk call fails, and reverts the rest", async () => {
    const adGroup = freshAdGroup()
    p.simulator.control.addFault({
      kind: "bulkRows",
      rows: [1],
      method: "POST",
      path: KEYWORDS_BULK_CREATE,
      message: "simulated row failure"
    })
    const keywords = ["acs partial a", "acs partial b", "acs partial c"].map((text) => ({ text, matchType: "EXACT", bidMicros: 10_000 }))
    const action = proposed(await p.propose("add-keywords", { adGroupId: adGroup.adGroupId, keywords, reason: "x" }))
    expect(action.mode).toBe("auto_applied")
    const applied = await p.settle(action.actionId)
    expect(applied.status).toBe("applied")
    expect(applied.warnings).toEqual(['keyword "acs partial b" (EXACT): INTERNAL_ERROR: simulated row failure'])
    expect(Object.keys(applied.result ?? {}).sort()).toEqual(["keywordId:0", "keywordId:2"])
    const texts = (await upstreamKeywords(adGroup)).map((k) => k.text)
    expect(texts).toEqual(expect.arrayContaining(["acs partial a", "acs partial c"]))
    expect(texts).not.toContain("acs partial b")
    expect((await warehouseKeywordsOf(adGroup.adGroupId)).map((k) => k.text).filter((t) => t.startsWith("acs partial")).sort())
      .toEqual(["acs partial a", "acs partial c"])

    await reverted(action.actionId, "remove_keywords")
    expect((await upstreamKeywords(adGroup)).map((k) => k.text).filter((t) => t.startsWith("acs partial"))).toEqual([])
  })

  it("fails when every row of the bulk call fails", async () => {
    const adGroup = freshAdGroup()
    p.simulator.control.addFault({ kind: "bulkRows", rows: [0, 1], method: "POST", path: KEYWORDS_BULK_CREATE })
    const keywords = ["acs doomed a", "acs doomed b"].map((text) => ({ text, matchType: "EXACT", bidMicros: 10_000 }))
    const action = proposed(await p.propose("add-keywords", { adGroupId: adGroup.adGroupId, keywords, reason: "x" }))
    const failed = await p.settle(action.actionId)
    expect(failed.status).toBe("failed")
    expect(failed.failure?.message).toMatch(/^every row failed: keyword "acs doomed a" \(EXACT\): .*; keyword "acs doomed b" \(EXACT\): /)
    expect((await upstreamKeywords(adGroup)).map((k) => k.text).filter((t) => t.startsWith("acs doomed"))).toEqual([])
  })
})

describe("keyword_bid_change", () => {
  it("needs review, sets one bid on keywords of two ad groups, and its revert restores each prior bid", async () => {
    const [first] = await activeKeywords(freshAdGroup(), 1)
    const [second] = await activeKeywords(freshAdGroup(), 1)
    const keywords = [first!, second!]
    const action = proposed(await p.propose("keyword-bid", {
      keywordIds: keywords.map((k) => k.keywordId),
      newBidMicros: 770_000,
      reason: "x"
    }))
    expect(action).toMatchObject({ kind: "keyword_bid_change", mode: "queued", riskTier: "review" })
    expect(action.policyReasons.join(" ")).toMatch(/outside the auto-apply set: keyword bid changes always need review/)

    const applied = await approve(action.actionId)
    expect(applied.status, JSON.stringify(applied.failure)).toBe("applied")
    expect(applied.payload).toEqual({
      currency: "USD",
      keywords: keywords.map((k) => ({
        keywordId: k.keywordId,
        adGroupId: k.adGroupId,
        campaignId: k.campaignId,
        text: k.text,
        priorBidMicros: k.bidMicros,
        newBidMicros: 770_000
      }))
    })
    for (const k of keywords) {
      const now = (await p.run(p.upstream.keywords(account(), k.campaignId, k.adGroupId))).find((x) => x.keywordId === k.keywordId)
      expect(now?.bidMicros).toBe(770_000)
    }
    expect((await warehouseKeywords(keywords.map((k) => k.keywordId))).map((k) => Number(k.bidMicros))).toEqual([770_000, 770_000])

    await reverted(action.actionId, "keyword_bid_change")
    for (const k of keywords) {
      const now = (await p.run(p.upstream.keywords(account(), k.campaignId, k.adGroupId))).find((x) => x.keywordId === k.keywordId)
      expect(now?.bidMicros).toBe(k.bidMicros)
    }
    const restored = new Map((await warehouseKeywords(keywords.map((k) => k.keywordId))).map((k) => [k.keywordId, k.bidMicros]))
    expect(keywords.map((k) => restored.get(k.keywordId) ?? null).map((b) => (b === null ? null : Number(b)))).toEqual(keywords.map((k) => k.bidMicros))
  })

  it("is demoted, naming the drift, when a bid changed upstream after the proposal", async () => {
    const [keyword] = await activeKeywords(freshAdGroup(), 1)
    const action = proposed(await p.propose("keyword-bid", { keywordIds: [keyword!.keywordId], newBidMicros: 880_000, reason: "x" }))
    await p.run(p.upstream.updateKeywords(account(), keyword!.campaignId, keyword!.adGroupId, [{ keywordId: keyword!.keywordId, bidMicros: 650_000 }]))
    const answer = await p.as("approver", "POST", `/accounts/${project()}/approvals/${action.actionId}/approve`)
    expect(answer.status).toBe(200)
    const demoted = await p.settle(action.actionId, ["proposed", "applied", "failed"])
    expect(demoted.status, JSON.stringify(demoted.failure)).toBe("proposed")
    expect(demoted.policyReasons.join(" ")).toMatch(/drift: the bid of keyword \d+ ".*" changed outside acs: it is now 0\.65 USD upstream/)
  })

  it("refuses MAX_CONVERSIONS keywords (422), keywords already at the bid (409 no_op) and unknown ids (404 listing them)", async () => {
    const [automatic] = await upstreamKeywords(freshAdGroup(automaticAdGroups))
    expectError(await p.propose("keyword-bid", { keywordIds: [automatic!.keywordId], newBidMicros: 500_000, reason: "x" }), 422, "bid_strategy_conflict")

    const withBid = (await upstreamKeywords(freshAdGroup())).filter((k) => k.bidMicros !== null).slice(0, 2)
    expect(withBid.length).toBe(2)
    // Two keywords at the same bid: set one to the other's first, through acs, so the warehouse agrees.
    await applyReviewed("keyword-bid", { keywordIds: [withBid[1]!.keywordId], newBidMicros: withBid[0]!.bidMicros, reason: "align" })
    const same = await p.propose("keyword-bid", { keywordIds: withBid.map((k) => k.keywordId), newBidMicros: withBid[0]!.bidMicros, reason: "x" })
    expectError(same, 409, "no_op")
    expect(same.text).toMatch(/all 2 keywords are already bid at/)

    const unknown = await p.propose("keyword-bid", { keywordIds: ["999999991", withBid[0]!.keywordId, "999999992"], newBidMicros: 10_000, reason: "x" })
    expectError(unknown, 404, "not_found")
    expect(unknown.text).toMatch(/no keywords 999999991, 999999992 in this account/)
    expectError(await p.propose("keyword-bid", { keywordIds: [], newBidMicros: 1, reason: "x" }), 400, "invalid_request")
  })
})

describe("keyword_status", () => {
  it("auto-applies pausing keywords of two ad groups, and its revert activates them again", async () => {
    const keywords = [...(await activeKeywords(freshAdGroup(), 2)), ...(await activeKeywords(freshAdGroup(), 1))]
    const action = proposed(await p.propose("keyword-status", { keywordIds: keywords.map((k) => k.keywordId), status: "PAUSED", reason: "x" }))
    expect(action).toMatchObject({ kind: "keyword_status", mode: "auto_applied", riskTier: "safe" })
    expect(action.policyReasons).toEqual(["auto-apply: pausing 3 keywords is in the auto-apply set"])
    const applied = await p.settle(action.actionId)
    expect(applied.status).toBe("applied")
    expect((applied.payload as { keywords: Array<{ priorStatus: string }> }).keywords.map((k) => k.priorStatus)).toEqual(["ACTIVE", "ACTIVE", "ACTIVE"])
    const statuses = async () => {
      const byGroup = await Promise.all([...new Set(keywords.map((k) => `${k.campaignId}/${k.adGroupId}`))].map((key) => {
        const [campaignId, adGroupId] = key.split("/")
        return p.run(p.upstream.keywords(account(), campaignId!, adGroupId!))
      }))
      const all = new Map(byGroup.flat().map((k) => [k.keywordId, k.status]))
      return keywords.map((k) => all.get(k.keywordId))
    }
    expect(await statuses()).toEqual(["PAUSED", "PAUSED", "PAUSED"])
    expect((await warehouseKeywords(keywords.map((k) => k.keywordId))).map((k) => k.status)).toEqual(["PAUSED", "PAUSED", "PAUSED"])

    await reverted(action.actionId, "keyword_status")
    expect(await statuses()).toEqual(["ACTIVE", "ACTIVE", "ACTIVE"])
    expect((await warehouseKeywords(keywords.map((k) => k.keywordId))).map((k) => k.status)).toEqual(["ACTIVE", "ACTIVE", "ACTIVE"])
  })

  it("queues activating, and refuses a status already set (409 no_op) and unknown keywords (404)", async () => {
    const [keyword] = await activeKeywords(freshAdGroup(), 1)
    const pause = proposed(await p.propose("keyword-status", { keywordIds: [keyword!.keywordId], status: "PAUSED", reason: "x" }))
    expect((await p.settle(pause.actionId)).status).toBe("applied")

    const again = await p.propose("keyword-status", { keywordIds: [keyword!.keywordId], status: "PAUSED", reason: "x" })
    expectError(again, 409, "no_op")
    expect(again.text).toMatch(/the keyword is already PAUSED/)

    const activate = proposed(await p.propose("keyword-status", { keywordIds: [keyword!.keywordId], status: "ACTIVE", reason: "x" }))
    expect(activate).toMatchObject({ mode: "queued", riskTier: "review" })
    expect(activate.policyReasons.join(" ")).toMatch(/outside the auto-apply set: activating 1 keyword: only pausing keywords auto-applies/)

    const unknown = await p.propose("keyword-status", { keywordIds: ["999999993"], status: "PAUSED", reason: "x" })
    expectError(unknown, 404, "not_found")
    expect(unknown.text).toMatch(/no keyword 999999993 in this account/)
    expectError(await p.propose("keyword-status", { keywordIds: [keyword!.keywordId], status: "ENABLED", reason: "x" }), 400, "invalid_request")
  })
})

describe("change_match_type", () => {
  const other = (matchType: string) => (matchType === "EXACT" ? "BROAD" : "EXACT")
  const replaceable = async (adGroup: UpstreamAdGroup): Promise<UpstreamKeyword> => {
    const keywords = await upstreamKeywords(adGroup)
    const taken = new Set(keywords.map((k) => `${k.matchType}|${k.text.toLowerCase()}`))
    const keyword = keywords.find((k) => !taken.has(`${other(k.matchType)}|${k.text.toLowerCase()}`))
    if (keyword === undefined) throw new Error("no keyword to change")
    return keyword
  }

  it("needs review, replaces the keyword with one of the new match type, and its revert changes it back", async () => {
    const adGroup = freshAdGroup()
    const keyword = await replaceable(adGroup)
    const target = other(keyword.matchType)
    const action = proposed(await p.propose("change-match-type", { keywordId: keyword.keywordId, matchType: target, reason: "x" }))
    expect(action).toMatchObject({ kind: "change_match_type", mode: "queued", riskTier: "review" })
    expect(action.policyReasons.join(" ")).toMatch(/changing a match type replaces the keyword, so it always needs review/)

    const applied = await approve(action.actionId)
    expect(applied.status, JSON.stringify(applied)).toBe("applied")
    // The old keyword's state at proposal (the state the drift check compares) lives in `prior…` fields.
    expect(applied.payload).toEqual({
      keywordId: keyword.keywordId,
      adGroupId: adGroup.adGroupId,
      adGroupName: adGroup.name,
      campaignId: adGroup.campaignId,
      text: keyword.text,
      priorMatchType: keyword.matchType,
      newMatchType: target,
      priorBidMicros: keyword.bidMicros,
      priorStatus: keyword.status
    })
    const newId = applied.result?.["newKeywordId"]
    expect(typeof newId).toBe("string")
    const after = await upstreamKeywords(adGroup)
    expect(after.find((k) => k.keywordId === keyword.keywordId)).toBeUndefined()
    expect(after.find((k) => k.keywordId === newId)).toMatchObject({
      text: keyword.text,
      matchType: target,
      status: keyword.status,
      bidMicros: keyword.bidMicros
    })
    expect(await warehouseKeywords([keyword.keywordId])).toEqual([])
    expect(await warehouseKeywords([newId as string])).toMatchObject([{ text: keyword.text, matchType: target }])

    const compensation = await reverted(action.actionId, "change_match_type")
    const back = compensation.result?.["newKeywordId"] as string
    const final = await upstreamKeywords(adGroup)
    expect(final.find((k) => k.keywordId === newId)).toBeUndefined()
    expect(final.find((k) => k.keywordId === back)).toMatchObject({
      text: keyword.text,
      matchType: keyword.matchType,
      status: keyword.status,
      bidMicros: keyword.bidMicros
    })
    expect(await warehouseKeywords([newId as string, back])).toMatchObject([{ keywordId: back, matchType: keyword.matchType }])
  })

  it("rolls back the created keyword when removing the old one fails, and names step 2", async () => {
    const adGroup = freshAdGroup()
    const keyword = await replaceable(adGroup)
    const target = other(keyword.matchType)
    const action = proposed(await p.propose("change-match-type", { keywordId: keyword.keywordId, matchType: target, reason: "x" }))
    // One fault per API version; the one the connection does not speak never fires, so none is left behind.
    p.simulator.control.addFaults(keywordDeleteRowRefused(0))
    const failed = await approve(action.actionId).finally(() => p.simulator.control.clearFaults())
    expect(failed.status).toBe("failed")
    expect(failed.failure).toMatchObject({ step: 2, stepName: `remove the ${keyword.matchType} keyword` })
    expect(failed.failure?.message).toMatch(/^step 2 \(remove the .* keyword\) failed: .*; the steps before it were rolled back$/)
    const after = await upstreamKeywords(adGroup)
    expect(after.find((k) => k.keywordId === keyword.keywordId)).toMatchObject({ matchType: keyword.matchType })
    expect(after.filter((k) => k.text === keyword.text && k.matchType === target)).toEqual([])
    expect((await warehouseKeywordsOf(adGroup.adGroupId)).filter((k) => k.text === keyword.text).map((k) => k.keywordId))
      .toEqual([keyword.keywordId])
  })

  it("refuses the match type it has (409 no_op), a text the ad group already has with the new type (422), and unknown keywords (404)", async () => {
    const adGroup = freshAdGroup()
    const keyword = await replaceable(adGroup)
    const target = other(keyword.matchType)
    const same = await p.propose("change-match-type", { keywordId: keyword.keywordId, matchType: keyword.matchType, reason: "x" })
    expectError(same, 409, "no_op")
    expect(same.text).toContain(`is already ${keyword.matchType}`)

    await applyReviewed("add-keywords", { adGroupId: adGroup.adGroupId, keywords: [{ text: keyword.text, matchType: target }], reason: "both" })
    const reasons = await validationFailed(
      await p.propose("change-match-type", { keywordId: keyword.keywordId, matchType: target, reason: "x" })
    )
    expect(reasons).toHaveLength(1)
    expect(reasons[0]).toMatch(new RegExp(`^ad group ".*" already has "${keyword.text}" \\(${target}\\)`))

    expectError(await p.propose("change-match-type", { keywordId: "999999994", matchType: "EXACT", reason: "x" }), 404, "not_found")
  })
})

describe("remove_keywords", () => {
  it("needs review, removes keywords of two ad groups keeping them in the payload, and cannot be reverted", async () => {
    const keywords = [...(await activeKeywords(freshAdGroup(), 1)), ...(await activeKeywords(freshAdGroup(), 2))]
    const action = proposed(await p.propose("remove-keywords", { keywordIds: keywords.map((k) => k.keywordId), reason: "x" }))
    expect(action).toMatchObject({ kind: "remove_keywords", mode: "queued", riskTier: "review" })
    expect(action.policyReasons.join(" ")).toMatch(/removing keywords cannot be reverted, so it always needs review/)
    const applied = await approve(action.actionId)
    expect(applied.status).toBe("applied")
    // docs/contract.md 1: the removed keywords are the prior state, so they live in `priorKeywords`, and nothing else is recorded.
    expect(applied.payload).toEqual({
      priorKeywords: keywords.map((k) => ({
        keywordId: k.keywordId,
        adGroupId: k.adGroupId,
        campaignId: k.campaignId,
        text: k.text,
        matchType: k.matchType,
        status: k.status,
        bidMicros: k.bidMicros
      }))
    })
    for (const k of keywords) {
      const there = await p.run(p.upstream.keywords(account(), k.campaignId, k.adGroupId))
      expect(there.find((x) => x.keywordId === k.keywordId)).toBeUndefined()
    }
    expect(await warehouseKeywords(keywords.map((k) => k.keywordId))).toEqual([])

    const refused = await revert(action.actionId)
    expectError(refused, 422, "not_revertible")
    expect(refused.text).toMatch(/remove_keywords has no compensating change/)
    expect(await p.action(action.actionId)).toMatchObject({ status: "applied", revertedBy: null })
  })

  it("refuses unknown keywords (404 listing them)", async () => {
    const unknown = await p.propose("remove-keywords", { keywordIds: ["999999995", "999999996"], reason: "x" })
    expectError(unknown, 404, "not_found")
    expect(unknown.text).toMatch(/no keywords 999999995, 999999996 in this account/)
  })
})

describe("add_negative_keywords", () => {
  it("auto-applies campaign-level negatives for a person, and its revert removes them", async () => {
    const campaign = automaticCampaign
    const keywords = [{ text: "acs free stuff", matchType: "BROAD" }, { text: "acs cheap", matchType: "EXACT" }]
    const action = proposed(await p.propose("add-negative-keywords", { campaignId: campaign.campaignId, keywords, reason: "x" }))
    expect(action).toMatchObject({ kind: "add_negative_keywords", mode: "auto_applied", riskTier: "safe" })
    expect(action.policyReasons).toEqual(["auto-apply: adding negative keywords is in the auto-apply set"])
    expect(action.summary).toBe(`Add 2 negative keywords to campaign "${campaign.name}": "acs free stuff" (BROAD), "acs cheap" (EXACT)`)
    const applied = await p.settle(action.actionId)
    expect(applied.status).toBe("applied")
    const ids = [applied.result?.["negativeKeywordId:0"], applied.result?.["negativeKeywordId:1"]] as Array<string>
    const made = (await upstreamNegatives(campaign.campaignId)).filter((n) => ids.includes(n.negativeKeywordId))
    expect(made.map((n) => [n.text, n.matchType, n.adGroupId]).sort()).toEqual([["acs cheap", "EXACT", null], ["acs free stuff", "BROAD", null]])
    expect((await warehouseNegatives(ids)).map((n) => n.adGroupId)).toEqual([null, null])

    // Already there (and twice in the request): refused with every reason.
    const reasons = await validationFailed(await p.propose("add-negative-keywords", {
      campaignId: campaign.campaignId,
      keywords: [{ text: "ACS cheap", matchType: "EXACT" }, { text: "acs new", matchType: "BROAD" }, { text: "acs new", matchType: "BROAD" }],
      reason: "x"
    }))
    expect(reasons).toEqual([
      '"acs new" (BROAD) appears 2 times in the request',
      `"ACS cheap" (EXACT) is already a negative keyword of campaign "${campaign.name}"`
    ])

    const compensation = await reverted(action.actionId, "remove_negative_keywords")
    expect(compensation.summary).toBe(`Revert: remove the 2 negative keywords from campaign "${campaign.name}": "acs free stuff" (BROAD), "acs cheap" (EXACT)`)
    expect((await upstreamNegatives(campaign.campaignId)).filter((n) => ids.includes(n.negativeKeywordId))).toEqual([])
    expect(await warehouseNegatives(ids)).toEqual([])
  })

  it("adds ad-group-level negatives; a key's proposal queues; an unknown campaign or a foreign ad group is 404", async () => {
    const adGroup = freshAdGroup()
    const keyAnswer = proposed(await p.propose("add-negative-keywords", {
      campaignId: adGroup.campaignId,
      adGroupId: adGroup.adGroupId,
      keywords: [{ text: "acs group neg", matchType: "EXACT" }],
      reason: "x"
    }, { as: "key" }))
    expect(keyAnswer).toMatchObject({ mode: "queued", riskTier: "safe" })
    expect(keyAnswer.policyReasons.join(" ")).toMatch(/would auto-apply: adding negative keywords/)
    const applied = await approve(keyAnswer.actionId)
    expect(applied.status).toBe("applied")
    const id = applied.result?.["negativeKeywordId:0"] as string
    expect((await upstreamNegatives(adGroup.campaignId)).find((n) => n.negativeKeywordId === id)).toMatchObject({
      adGroupId: adGroup.adGroupId,
      text: "acs group neg",
      matchType: "EXACT"
    })
    expect(await warehouseNegatives([id])).toEqual([{ negativeKeywordId: id, adGroupId: adGroup.adGroupId, text: "acs group neg" }])

    expectError(
      await p.propose("add-negative-keywords", { campaignId: "999999997", keywords: [{ text: "x", matchType: "EXACT" }], reason: "x" }),
      404,
      "not_found"
    )
    const foreign = await p.propose("add-negative-keywords", {
      campaignId: automaticCampaign.campaignId,
      adGroupId: adGroup.adGroupId,
      keywords: [{ text: "x", matchType: "EXACT" }],
      reason: "x"
    })
    expectError(foreign, 404, "not_found")
    expect(foreign.text).toContain(`no ad group ${adGroup.adGroupId} in campaign ${automaticCampaign.campaignId}`)
  })
})

describe("remove_negative_keywords", () => {
  it("auto-applies removing negatives of a campaign and of an ad group, and its revert adds them back", async () => {
    const campaign = manualCampaigns[0]!
    const adGroup = freshAdGroup()
    const campaignLevel = (await upstreamNegatives(campaign.campaignId)).find((n) => n.adGroupId === null)
    const adGroupLevel = (await upstreamNegatives(adGroup.campaignId)).find((n) => n.adGroupId === adGroup.adGroupId) ??
      (await applyReviewed("add-negative-keywords", {
        campaignId: adGroup.campaignId,
        adGroupId: adGroup.adGroupId,
        keywords: [{ text: "acs to remove", matchType: "BROAD" }],
        reason: "x"
      }).then(async (a) =>
        (await upstreamNegatives(adGroup.campaignId)).find((n) => n.negativeKeywordId === a.result?.["negativeKeywordId:0"])
      ))
    if (campaignLevel === undefined || adGroupLevel === undefined) throw new Error("no negatives to remove")
    const negatives: Array<UpstreamNegativeKeyword> = [campaignLevel, adGroupLevel]

    const action = proposed(await p.propose("remove-negative-keywords", {
      negativeKeywordIds: negatives.map((n) => n.negativeKeywordId),
      reason: "x"
    }))
    expect(action).toMatchObject({ kind: "remove_negative_keywords", mode: "auto_applied", riskTier: "safe" })
    expect(action.summary).toMatch(/^Remove 2 negative keywords in 2 places: /)
    const applied = await p.settle(action.actionId)
    expect(applied.status).toBe("applied")
    // docs/contract.md 1: the removed negatives are the prior state, so they live in `priorNegatives`, and nothing else is recorded.
    expect(applied.payload).toEqual({
      priorNegatives: negatives.map((n) => ({
        negativeKeywordId: n.negativeKeywordId,
        campaignId: n.campaignId,
        campaignName: manualCampaigns.find((c) => c.campaignId === n.campaignId)?.name,
        adGroupId: n.adGroupId,
        adGroupName: n.adGroupId === null ? null : adGroup.name,
        text: n.text,
        matchType: n.matchType,
        status: n.status
      }))
    })
    const live = async () =>
      [...(await upstreamNegatives(campaign.campaignId)), ...(await upstreamNegatives(adGroup.campaignId))]
    const ids = negatives.map((n) => n.negativeKeywordId)
    expect((await live()).filter((n) => ids.includes(n.negativeKeywordId))).toEqual([])
    expect(await warehouseNegatives(ids)).toEqual([])

    const compensation = await reverted(action.actionId, "add_negative_keywords")
    const back = await live()
    for (const n of negatives) {
      expect(back.find((x) => x.text === n.text && x.matchType === n.matchType && x.adGroupId === n.adGroupId && x.campaignId === n.campaignId))
        .toBeDefined()
    }
    const newIds = Object.values(compensation.result ?? {}) as Array<string>
    expect(newIds).toHaveLength(2)
    expect((await warehouseNegatives(newIds)).map((n) => n.text).sort()).toEqual(negatives.map((n) => n.text).sort())
  })

  it("refuses unknown negatives (404 listing them)", async () => {
    const unknown = await p.propose("remove-negative-keywords", { negativeKeywordIds: ["999999998", "999999999"], reason: "x" })
    expectError(unknown, 404, "not_found")
    expect(unknown.text).toMatch(/no negative keywords 999999998, 999999999 in this account/)
  })
})

describe("ledger rows written before the prior… rename (migration 0007)", () => {
  /** Runs the migration again on this database, as a deployed database that held such rows would at start. */
  const migrate = () => Effect.runPromise(Effect.provide(priorFieldNames, PgClient.layer({ url: Redacted.make(p.database) })))
  const payloadOf = async (actionId: string) =>
    (await p.sql<{ payload: Record<string, unknown> }>("SELECT payload FROM actions WHERE action_id = $1", [actionId]))[0]?.payload
  /** Puts the payload back in the shape an older acs wrote: `renames` maps each new key to its old name. */
  const writeOldShape = async (actionId: string, renames: Record<string, string>) => {
    const payload = await payloadOf(actionId)
    if (payload === undefined) throw new Error(`no action ${actionId}`)
    const old = Object.fromEntries(Object.entries(payload).map(([key, value]) => [renames[key] ?? key, value]))
    await p.sql("UPDATE actions SET payload = $2::jsonb WHERE action_id = $1", [actionId, JSON.stringify(old)])
    return { payload, old }
  }

  it("renames the old keys of queued and applied rows, which then apply and revert as new ones", async () => {
    // One ad group for both keyword kinds (the demo account has few to spare): one keyword removed, another changed.
    const adGroup = freshAdGroup(automaticAdGroups)
    const [removed] = await activeKeywords(adGroup, 1)
    const removeKeywords = proposed(await p.propose("remove-keywords", { keywordIds: [removed!.keywordId], reason: "x" }, { as: "key" }))
    const keywords = await upstreamKeywords(adGroup)
    const taken = new Set(keywords.map((k) => `${k.matchType}|${k.text.toLowerCase()}`))
    const keyword = keywords.find((k) =>
      k.keywordId !== removed!.keywordId && !taken.has(`${k.matchType === "EXACT" ? "BROAD" : "EXACT"}|${k.text.toLowerCase()}`)
    )
    if (keyword === undefined) throw new Error("no keyword to change")
    const changeMatch = proposed(await p.propose("change-match-type", {
      keywordId: keyword.keywordId,
      matchType: keyword.matchType === "EXACT" ? "BROAD" : "EXACT",
      reason: "x"
    }, { as: "key" }))
    const added = await applyReviewed("add-negative-keywords", {
      campaignId: automaticCampaign.campaignId,
      keywords: [{ text: "acs before the rename", matchType: "EXACT" }],
      reason: "x"
    })
    const removeNegatives = proposed(await p.propose("remove-negative-keywords", {
      negativeKeywordIds: [added.result?.["negativeKeywordId:0"]],
      reason: "x"
    }, { as: "key" }))

    const rows = [
      { actionId: removeKeywords.actionId, ...(await writeOldShape(removeKeywords.actionId, { priorKeywords: "keywords" })) },
      {
        actionId: changeMatch.actionId,
        ...(await writeOldShape(changeMatch.actionId, { priorBidMicros: "bidMicros", priorStatus: "status" }))
      },
      { actionId: removeNegatives.actionId, ...(await writeOldShape(removeNegatives.actionId, { priorNegatives: "negatives" })) }
    ]
    for (const row of rows) expect(Object.keys(row.old).filter((key) => key.startsWith("prior") && key !== "priorMatchType")).toEqual([])

    await migrate()
    for (const row of rows) expect(await payloadOf(row.actionId)).toEqual(row.payload)
    // Only the old keys are renamed: a second run changes nothing.
    await migrate()
    for (const row of rows) expect(await payloadOf(row.actionId)).toEqual(row.payload)

    expect((await approve(removeKeywords.actionId)).status).toBe("applied")
    expect((await approve(changeMatch.actionId)).status).toBe("applied")
    expect((await approve(removeNegatives.actionId)).status).toBe("applied")
    const compensation = await reverted(removeNegatives.actionId, "add_negative_keywords")
    expect(compensation.payload).toEqual({ negatives: [expect.objectContaining({ text: "acs before the rename", matchType: "EXACT" })] })
  })
})

describe("a read-only account", () => {
  it("refuses every keyword kind with 403 read_only_account", async () => {
    const bodies: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
      ["add-keywords", { adGroupId: "1", keywords: [{ text: "x", matchType: "EXACT" }] }],
      ["keyword-bid", { keywordIds: ["1"], newBidMicros: 1 }],
      ["keyword-status", { keywordIds: ["1"], status: "PAUSED" }],
      ["change-match-type", { keywordId: "1", matchType: "EXACT" }],
      ["remove-keywords", { keywordIds: ["1"] }],
      ["add-negative-keywords", { campaignId: "1", keywords: [{ text: "x", matchType: "EXACT" }] }],
      ["remove-negative-keywords", { negativeKeywordIds: ["1"] }]
    ]
    for (const [path, body] of bodies) {
      const answer = await p.propose(path, { ...body, reason: "x" }, { projectId: p.readOnlyAccount.projectId })
      expect([path, answer.status, errorCode(answer)]).toEqual([path, 403, "read_only_account"])
    }
  })
})
