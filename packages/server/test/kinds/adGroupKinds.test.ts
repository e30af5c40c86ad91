/**
 * The ad-group kinds through REST to the simulator and back: ad_group_status, cpa_goal_change,
 * default_bid_change, search_match_change, create_ad_group, clone_ad_group, ad_status, and delete_ad_group
 * (the compensation of a create or clone). Each: the policy verdict, the apply (upstream changed, ledger
 * applied, warehouse updated), every local refusal it can give, and its revert.
 */
import type { UpstreamAdGroup, UpstreamCampaign } from "@acs/upstream/Upstream"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ActionView, type Pipeline, proposalOf, startPipeline, validationFailureOf } from "../support/pipeline.ts"
import { type Answer, errorCode } from "../support/server.ts"
import { AD_GROUP_CREATE, AD_GROUP_NEGATIVES_BULK_CREATE, KEYWORDS_BULK_CREATE } from "../support/upstreamPaths.ts"

let p: Pipeline
let campaigns: ReadonlyArray<UpstreamCampaign>

interface Slot {
  readonly campaign: UpstreamCampaign
  readonly adGroup: UpstreamAdGroup
}
/** Ad groups no test in this file has touched yet; `take` hands each out once. */
const pool: Array<Slot> = []
/** Ad groups with active negatives of their own, as the warehouse has them. */
let withNegatives: ReadonlySet<string> = new Set()

const take = (what: string, predicate: (slot: Slot) => boolean): Slot => {
  const index = pool.findIndex(predicate)
  const slot = pool[index]
  if (slot === undefined) throw new Error(`the demo account has no unused ${what} for this file`)
  pool.splice(index, 1)
  return slot
}
/** USD's minor unit in micros. */
const CENT = 10_000
const manual = (slot: Slot) => slot.campaign.bidStrategy === "MANUAL_CPT"

const accountId = () => p.account.upstreamAccountId
const upstreamAdGroup = (slot: { readonly campaignId: string; readonly adGroupId: string }) =>
  p.run(p.upstream.adGroup(accountId(), slot.campaignId, slot.adGroupId))

interface AdGroupRow extends Record<string, unknown> {
  readonly name: string
  readonly status: string
  readonly default_bid_micros: string
  readonly cpa_goal_micros: string | null
  readonly search_match: boolean
}
const warehouseAdGroup = async (adGroupId: string) =>
  (await p.sql<AdGroupRow>("SELECT * FROM ad_groups WHERE project_id = $1 AND ad_group_id = $2", [p.account.projectId, adGroupId]))[0]

const proposed = (answer: Answer) => {
  expect(answer.status, answer.text).toBe(201)
  return proposalOf(answer)
}

const approveAndSettle = async (actionId: string): Promise<ActionView> => {
  const approved = await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)
  expect(approved.status, approved.text).toBe(200)
  return p.settle(actionId)
}

/** Reverts an applied action and waits for its compensation. */
const revert = async (actionId: string): Promise<ActionView> => {
  const answer = await p.as("person", "POST", `/accounts/${p.account.projectId}/actions/${actionId}/revert`)
  expect(answer.status, answer.text).toBe(201)
  return p.settle(proposalOf(answer).actionId)
}

const expectError = (answer: Answer, status: number, code: string) => expect([answer.status, errorCode(answer)], answer.text).toEqual([status, code])

const readOnlyRefuses = async (path: string, request: Record<string, unknown>) =>
  expectError(await p.propose(path, request, { projectId: p.readOnlyAccount.projectId }), 403, "read_only_account")

/** 422 validation_failed: every reason, and the failed ledger row it recorded. */
const expectValidationFailed = async (answer: Answer): Promise<ReadonlyArray<string>> => {
  expectError(answer, 422, "validation_failed")
  const error = validationFailureOf(answer)
  expect(error.action_id).toEqual(expect.any(String))
  expect((await p.action(error.action_id ?? "")).status).toBe("failed")
  return error.validation_errors
}

beforeAll(async () => {
  // A shorter upstream timeout than the default 30 s, so a write whose answer is lost (a timeout fault, held far
  // longer) is retried within the test; still long enough for every other call on a busy machine.
  p = await startPipeline({ seed: 33, env: { UPSTREAM_TIMEOUT_MS: "10000" } })
  campaigns = await p.run(p.upstream.campaigns(accountId()))
  for (const campaign of campaigns) {
    for (const adGroup of await p.run(p.upstream.adGroups(accountId(), campaign.campaignId))) pool.push({ campaign, adGroup })
  }
  const negatives = await p.sql<{ ad_group_id: string }>(
    "SELECT DISTINCT ad_group_id FROM negative_keywords WHERE project_id = $1 AND ad_group_id IS NOT NULL AND status = 'ACTIVE'",
    [p.account.projectId]
  )
  withNegatives = new Set(negatives.map((row) => row.ad_group_id))
})

afterAll(async () => {
  await p?.close()
})

describe("ad_group_status", () => {
  it("auto-applies a person's pause, changes the upstream and the warehouse, and reverts it", async () => {
    const slot = take("enabled ad group", (s) => s.adGroup.status === "ENABLED")
    const answer = proposed(await p.propose("ad-group-status", { adGroupId: slot.adGroup.adGroupId, status: "PAUSED", reason: "stop spend" }))
    expect(answer).toMatchObject({ mode: "auto_applied", riskTier: "safe" })
    expect(answer.policyReasons.join(" ")).toMatch(/^auto-apply: pausing ad group .* is in the auto-apply set/)

    const applied = await p.settle(answer.actionId)
    expect(applied).toMatchObject({ status: "applied", payload: { status: "PAUSED", priorStatus: "ENABLED" } })
    expect((await upstreamAdGroup(slot.adGroup)).status).toBe("PAUSED")
    expect((await warehouseAdGroup(slot.adGroup.adGroupId))?.status).toBe("PAUSED")

    const compensation = await revert(answer.actionId)
    expect(compensation).toMatchObject({ status: "applied", kind: "ad_group_status", revertOf: answer.actionId })
    expect((await upstreamAdGroup(slot.adGroup)).status).toBe("ENABLED")
    expect((await warehouseAdGroup(slot.adGroup.adGroupId))?.status).toBe("ENABLED")
    expect((await p.action(answer.actionId)).status).toBe("reverted")
  })

  it("queues enabling an ad group, naming the rule, and applies it once approved", async () => {
    const slot = take("paused ad group", (s) => s.adGroup.status === "PAUSED")
    const answer = proposed(await p.propose("ad-group-status", { adGroupId: slot.adGroup.adGroupId, status: "ENABLED", reason: "resume" }))
    expect(answer).toMatchObject({ mode: "queued", riskTier: "review" })
    expect(answer.policyReasons.join(" ")).toMatch(/outside the auto-apply set: enabling ad group .* only pausing an ad group auto-applies/)
    expect((await approveAndSettle(answer.actionId)).status).toBe("applied")
    expect((await upstreamAdGroup(slot.adGroup)).status).toBe("ENABLED")
    expect((await warehouseAdGroup(slot.adGroup.adGroupId))?.status).toBe("ENABLED")
  })

  it("refuses an unknown ad group (404), the status it already has (409), a bad status (400) and a read-only account (403)", async () => {
    expectError(await p.propose("ad-group-status", { adGroupId: "999999999", status: "PAUSED", reason: "x" }), 404, "not_found")
    const slot = pool.find((s) => s.adGroup.status === "ENABLED")!
    expectError(await p.propose("ad-group-status", { adGroupId: slot.adGroup.adGroupId, status: "ENABLED", reason: "x" }), 409, "no_op")
    expectError(await p.propose("ad-group-status", { adGroupId: slot.adGroup.adGroupId, status: "OFF", reason: "x" }), 400, "invalid_request")
    await readOnlyRefuses("ad-group-status", { adGroupId: "1", status: "PAUSED", reason: "x" })
  })
})

describe("cpa_goal_change", () => {
  it("auto-applies one step of at most 10% on an existing goal, and reverts it", async () => {
    const slot = take("ad group with a CPA goal", (s) => s.adGroup.cpaGoalMicros !== null)
    const prior = slot.adGroup.cpaGoalMicros!
    // 10% rounded down to whole cents: the platform refuses amounts finer than the currency's minor unit.
    const target = prior + Math.floor(prior / 10 / CENT) * CENT
    const answer = proposed(await p.propose("cpa-goal-change", { adGroupId: slot.adGroup.adGroupId, newCpaGoalMicros: target, reason: "nudge" }))
    expect(answer).toMatchObject({ mode: "auto_applied", riskTier: "safe" })
    expect(answer.policyReasons.join(" ")).toMatch(/within the 10% step rule/)
    const applied = await p.settle(answer.actionId)
    expect(applied).toMatchObject({ status: "applied", payload: { priorCpaGoalMicros: prior, newCpaGoalMicros: target } })
    expect((await upstreamAdGroup(slot.adGroup)).cpaGoalMicros).toBe(target)
    expect(Number((await warehouseAdGroup(slot.adGroup.adGroupId))?.cpa_goal_micros)).toBe(target)

    expect((await revert(answer.actionId)).status).toBe("applied")
    expect((await upstreamAdGroup(slot.adGroup)).cpaGoalMicros).toBe(prior)
    expect(Number((await warehouseAdGroup(slot.adGroup.adGroupId))?.cpa_goal_micros)).toBe(prior)
  })

  it("queues a step just beyond 10%, and a first goal; reverting a first goal clears it again", async () => {
    const withGoal = take("ad group with a CPA goal", (s) => s.adGroup.cpaGoalMicros !== null)
    const prior = withGoal.adGroup.cpaGoalMicros!
    const beyond = proposed(await p.propose("cpa-goal-change", {
      adGroupId: withGoal.adGroup.adGroupId,
      newCpaGoalMicros: Math.floor((prior - Math.floor(prior / 10) - 1) / 10_000) * 10_000, // whole cents, just beyond 10%
      reason: "cut"
    }))
    expect(beyond).toMatchObject({ mode: "queued", riskTier: "review" })
    expect(beyond.policyReasons.join(" ")).toMatch(/beyond the 10% auto-apply bound/)

    const without = take("manual ad group without a CPA goal", (s) => manual(s) && s.adGroup.cpaGoalMicros === null)
    const first = proposed(await p.propose("cpa-goal-change", { adGroupId: without.adGroup.adGroupId, newCpaGoalMicros: 4_000_000, reason: "goal" }))
    expect(first).toMatchObject({ mode: "queued" })
    expect(first.policyReasons.join(" ")).toMatch(/on an existing goal; ad group .* has none/)
    expect((await approveAndSettle(first.actionId)).status).toBe("applied")
    expect((await upstreamAdGroup(without.adGroup)).cpaGoalMicros).toBe(4_000_000)

    expect((await revert(first.actionId)).status).toBe("applied")
    expect((await upstreamAdGroup(without.adGroup)).cpaGoalMicros).toBeNull()
    expect((await warehouseAdGroup(without.adGroup.adGroupId))?.cpa_goal_micros).toBeNull()
  })

  it("refuses an unknown ad group (404), the goal it already has (409) and a read-only account (403)", async () => {
    expectError(await p.propose("cpa-goal-change", { adGroupId: "999999999", newCpaGoalMicros: 1_000_000, reason: "x" }), 404, "not_found")
    const slot = pool.find((s) => s.adGroup.cpaGoalMicros !== null)!
    const same = await p.propose("cpa-goal-change", { adGroupId: slot.adGroup.adGroupId, newCpaGoalMicros: slot.adGroup.cpaGoalMicros, reason: "x" })
    expectError(same, 409, "no_op")
    await readOnlyRefuses("cpa-goal-change", { adGroupId: "1", newCpaGoalMicros: 1_000_000, reason: "x" })
  })
})

describe("default_bid_change", () => {
  it("always queues; once approved it changes the upstream and the warehouse, and reverts", async () => {
    const slot = take("manual ad group", manual)
    const prior = slot.adGroup.defaultBidMicros
    const target = prior + 50_000
    const answer = proposed(await p.propose("default-bid-change", { adGroupId: slot.adGroup.adGroupId, newDefaultBidMicros: target, reason: "raise" }))
    expect(answer).toMatchObject({ mode: "queued", riskTier: "review" })
    expect(answer.policyReasons.join(" ")).toMatch(/default bid change of ad group .* always needs review/)
    const applied = await approveAndSettle(answer.actionId)
    expect(applied).toMatchObject({ status: "applied", payload: { priorDefaultBidMicros: prior, newDefaultBidMicros: target } })
    expect((await upstreamAdGroup(slot.adGroup)).defaultBidMicros).toBe(target)
    expect(Number((await warehouseAdGroup(slot.adGroup.adGroupId))?.default_bid_micros)).toBe(target)

    expect((await revert(answer.actionId)).status).toBe("applied")
    expect((await upstreamAdGroup(slot.adGroup)).defaultBidMicros).toBe(prior)
    expect(Number((await warehouseAdGroup(slot.adGroup.adGroupId))?.default_bid_micros)).toBe(prior)
  })

  it("demotes the apply when the bid was changed outside acs, and queues a revert after such a change", async () => {
    const slot = take("manual ad group", manual)
    const prior = slot.adGroup.defaultBidMicros
    const answer = proposed(await p.propose("default-bid-change", { adGroupId: slot.adGroup.adGroupId, newDefaultBidMicros: prior + 10_000, reason: "x" }))
    await p.run(p.upstream.updateAdGroup(accountId(), slot.campaign.campaignId, slot.adGroup.adGroupId, { defaultBidMicros: prior + 20_000 }))
    const demoted = await approveAndSettle(answer.actionId)
    expect(demoted.status).toBe("proposed")
    expect(demoted.policyReasons.join(" ")).toMatch(/drift: the default bid of ad group .* changed outside acs/)
    expect((await upstreamAdGroup(slot.adGroup)).defaultBidMicros).toBe(prior + 20_000)
  })

  it("refuses a MAX_CONVERSIONS ad group (422 bid_strategy_conflict), the bid it has (409), an unknown one (404), read-only (403)", async () => {
    const maxConversions = pool.find((s) => s.campaign.bidStrategy === "MAX_CONVERSIONS")!
    expectError(
      await p.propose("default-bid-change", { adGroupId: maxConversions.adGroup.adGroupId, newDefaultBidMicros: 1_000_000, reason: "x" }),
      422,
      "bid_strategy_conflict"
    )
    const slot = pool.find(manual)!
    expectError(
      await p.propose("default-bid-change", { adGroupId: slot.adGroup.adGroupId, newDefaultBidMicros: slot.adGroup.defaultBidMicros, reason: "x" }),
      409,
      "no_op"
    )
    expectError(await p.propose("default-bid-change", { adGroupId: "999999999", newDefaultBidMicros: 1_000_000, reason: "x" }), 404, "not_found")
    await readOnlyRefuses("default-bid-change", { adGroupId: "1", newDefaultBidMicros: 1_000_000, reason: "x" })
  })
})

describe("search_match_change", () => {
  it("always queues; once approved it flips Search Match upstream and in the warehouse, and reverts", async () => {
    const slot = take("ad group with Search Match off", (s) => !s.adGroup.searchMatch)
    const answer = proposed(await p.propose("search-match", { adGroupId: slot.adGroup.adGroupId, enabled: true, reason: "discover" }))
    expect(answer).toMatchObject({ mode: "queued", riskTier: "review" })
    expect(answer.summary).toMatch(/Turn Search Match on/)
    expect((await approveAndSettle(answer.actionId)).status).toBe("applied")
    expect((await upstreamAdGroup(slot.adGroup)).searchMatch).toBe(true)
    expect((await warehouseAdGroup(slot.adGroup.adGroupId))?.search_match).toBe(true)

    expect((await revert(answer.actionId)).status).toBe("applied")
    expect((await upstreamAdGroup(slot.adGroup)).searchMatch).toBe(false)
    expect((await warehouseAdGroup(slot.adGroup.adGroupId))?.search_match).toBe(false)
  })

  it("answers no_op when Search Match is already so, 404 for an unknown ad group, 403 read-only", async () => {
    const on = pool.find((s) => s.adGroup.searchMatch)!
    const same = await p.propose("search-match", { adGroupId: on.adGroup.adGroupId, enabled: true, reason: "x" })
    expectError(same, 409, "no_op")
    expect(same.text).toMatch(/Search Match is already on/)
    expectError(await p.propose("search-match", { adGroupId: "999999999", enabled: true, reason: "x" }), 404, "not_found")
    await readOnlyRefuses("search-match", { adGroupId: "1", enabled: true, reason: "x" })
  })
})

describe("ad_status", () => {
  it("always queues, even a pause; once approved it pauses the ad upstream and in the warehouse, and reverts", async () => {
    const slot = take("ad group", () => true)
    const ads = await p.run(p.upstream.ads(accountId(), slot.campaign.campaignId, slot.adGroup.adGroupId))
    const ad = ads.find((a) => a.status === "ENABLED")!
    const answer = proposed(await p.propose("ad-status", { adId: ad.adId, status: "PAUSED", reason: "creative fatigue" }))
    expect(answer).toMatchObject({ mode: "queued", riskTier: "review" })
    expect(answer.policyReasons.join(" ")).toMatch(/pausing ad .* always needs review/)
    expect((await approveAndSettle(answer.actionId)).status).toBe("applied")
    const upstreamAd = async () =>
      (await p.run(p.upstream.ads(accountId(), slot.campaign.campaignId, slot.adGroup.adGroupId))).find((a) => a.adId === ad.adId)
    const warehouseAd = async () =>
      (await p.sql<{ status: string }>("SELECT status FROM ads WHERE project_id = $1 AND ad_id = $2", [p.account.projectId, ad.adId]))[0]
    expect((await upstreamAd())?.status).toBe("PAUSED")
    expect((await warehouseAd())?.status).toBe("PAUSED")

    expect((await revert(answer.actionId)).status).toBe("applied")
    expect((await upstreamAd())?.status).toBe("ENABLED")
    expect((await warehouseAd())?.status).toBe("ENABLED")

    expectError(await p.propose("ad-status", { adId: ad.adId, status: "ENABLED", reason: "x" }), 409, "no_op")
    expectError(await p.propose("ad-status", { adId: "999999999", status: "PAUSED", reason: "x" }), 404, "not_found")
    await readOnlyRefuses("ad-status", { adId: "1", status: "PAUSED", reason: "x" })
  })
})

const manualCampaign = () => campaigns.find((c) => c.bidStrategy === "MANUAL_CPT")!
const maxConversionsCampaign = () => campaigns.find((c) => c.bidStrategy === "MAX_CONVERSIONS")!
const liveAdGroupNamed = async (campaignId: string, name: string) =>
  (await p.run(p.upstream.adGroups(accountId(), campaignId))).find((a) => a.name === name)

describe("create_ad_group", () => {
  const request = (campaignId: string, name: string) => ({
    campaignId,
    name,
    defaultBidMicros: 1_200_000,
    cpaGoalMicros: 5_000_000,
    searchMatch: false,
    keywords: [
      { text: "acs tree alpha", matchType: "EXACT", bidMicros: 1_500_000 },
      { text: "acs tree beta", matchType: "EXACT" },
      { text: "acs tree alpha", matchType: "BROAD", bidMicros: null }
    ],
    negativeKeywords: [{ text: "acs tree free", matchType: "BROAD" }],
    reason: "new theme"
  })

  it("always needs review (high); once approved it creates the tree upstream and in the warehouse, and reverts by deleting it", async () => {
    const campaign = manualCampaign()
    const answer = proposed(await p.propose("create-ad-group", request(campaign.campaignId, "ACS Tree One")))
    expect(answer).toMatchObject({ mode: "queued", riskTier: "high" })
    expect(answer.policyReasons.join(" ")).toMatch(/always review: creating ad group "ACS Tree One" with 3 keywords and 1 negative keyword/)
    const applied = await approveAndSettle(answer.actionId)
    expect(applied.status, JSON.stringify(applied.failure)).toBe("applied")
    const adGroupId = applied.result?.["adGroupId"]
    expect(adGroupId).toEqual(expect.any(String))
    expect(applied.result?.["keywordIds"]).toHaveLength(3)

    const created = await upstreamAdGroup({ campaignId: campaign.campaignId, adGroupId: String(adGroupId) })
    expect(created).toMatchObject({ name: "ACS Tree One", defaultBidMicros: 1_200_000, cpaGoalMicros: 5_000_000, searchMatch: false, status: "ENABLED" })
    const keywords = await p.run(p.upstream.keywords(accountId(), campaign.campaignId, String(adGroupId)))
    expect(keywords.map((k) => [k.text, k.matchType, k.bidMicros]).sort()).toEqual([
      ["acs tree alpha", "BROAD", null],
      ["acs tree alpha", "EXACT", 1_500_000],
      ["acs tree beta", "EXACT", null]
    ])
    const negatives = (await p.run(p.upstream.negativeKeywords(accountId(), campaign.campaignId))).filter((n) => n.adGroupId === adGroupId)
    expect(negatives.map((n) => n.text)).toEqual(["acs tree free"])
    expect((await warehouseAdGroup(String(adGroupId)))?.name).toBe("ACS Tree One")
    const warehouseKeywords = await p.sql("SELECT keyword_id FROM keywords WHERE project_id = $1 AND ad_group_id = $2", [p.account.projectId, adGroupId])
    expect(warehouseKeywords).toHaveLength(3)

    const compensation = await revert(answer.actionId)
    expect(compensation).toMatchObject({ status: "applied", kind: "delete_ad_group", revertOf: answer.actionId })
    expect((await upstreamAdGroup({ campaignId: campaign.campaignId, adGroupId: String(adGroupId) })).deleted).toBe(true)
    expect(await warehouseAdGroup(String(adGroupId))).toBeUndefined()
    expect(await p.sql("SELECT 1 FROM keywords WHERE project_id = $1 AND ad_group_id = $2", [p.account.projectId, adGroupId])).toHaveLength(0)
    expect((await p.action(answer.actionId)).status).toBe("reverted")
  })

  it("rolls back the ad group and its keywords when the negatives step fails, naming step 3", async () => {
    const campaign = manualCampaign()
    const answer = proposed(await p.propose("create-ad-group", request(campaign.campaignId, "ACS Tree Rollback")))
    p.simulator.control.addFault({ kind: "status", status: 500, method: "POST", path: AD_GROUP_NEGATIVES_BULK_CREATE })
    const failed = await approveAndSettle(answer.actionId)
    expect(failed.status).toBe("failed")
    expect(failed.failure).toMatchObject({ step: 3 })
    expect(failed.failure?.message).toMatch(/rolled back/)
    expect(await liveAdGroupNamed(campaign.campaignId, "ACS Tree Rollback")).toBeUndefined()
    expect(await p.sql("SELECT 1 FROM ad_groups WHERE project_id = $1 AND name = $2", [p.account.projectId, "ACS Tree Rollback"])).toHaveLength(0)
  })

  it("applies with a warning per refused keyword row, and reverts at once when the ad group is already deleted", async () => {
    const campaign = manualCampaign()
    const answer = proposed(await p.propose("create-ad-group", request(campaign.campaignId, "ACS Tree Partial")))
    p.simulator.control.addFault({ kind: "bulkRows", rows: [1], method: "POST", path: KEYWORDS_BULK_CREATE, message: "row refused" })
    const applied = await approveAndSettle(answer.actionId)
    expect(applied.status).toBe("applied")
    expect(applied.warnings).toHaveLength(1)
    expect(applied.warnings[0]).toMatch(/keyword "acs tree beta" \(EXACT\)/)
    const adGroupId = String(applied.result?.["adGroupId"])

    await p.run(p.upstream.deleteAdGroup(accountId(), campaign.campaignId, adGroupId))
    const compensation = await revert(answer.actionId)
    expect(compensation).toMatchObject({ status: "applied", kind: "delete_ad_group" })
    expect(await warehouseAdGroup(adGroupId)).toBeUndefined()
  })

  it("queues the revert when keywords were added to the created ad group outside acs", async () => {
    const campaign = manualCampaign()
    const answer = proposed(await p.propose("create-ad-group", { ...request(campaign.campaignId, "ACS Tree Drift"), keywords: [], negativeKeywords: [] }))
    const applied = await approveAndSettle(answer.actionId)
    expect(applied.status).toBe("applied")
    const adGroupId = String(applied.result?.["adGroupId"])
    await p.run(p.upstream.createKeywords(accountId(), campaign.campaignId, adGroupId, [{ text: "someone else", matchType: "EXACT", bidMicros: null }]))
    const reverted = await p.as("person", "POST", `/accounts/${p.account.projectId}/actions/${answer.actionId}/revert`)
    expect(reverted.status).toBe(201)
    const compensation = proposalOf(reverted)
    expect(compensation.mode).toBe("queued")
    expect(compensation.policyReasons.join(" ")).toMatch(/drift: ad group .* has 1 keyword added since it was created \("someone else"\)/)
    expect((await upstreamAdGroup({ campaignId: campaign.campaignId, adGroupId })).deleted).toBe(false)
  })

  it("takes the ad group a lost write created on the retry, instead of creating a second one", async () => {
    const campaign = manualCampaign()
    const answer = proposed(await p.propose("create-ad-group", request(campaign.campaignId, "ACS Tree Lost Answer")))
    // The create is applied upstream, but its answer comes after the client gave up: the outcome is unknown to acs.
    const fault = p.simulator.control.addFault({ kind: "timeout", delayMs: 20_000, process: true, method: "POST", path: AD_GROUP_CREATE })
    let fired: number | undefined
    const applied = await approveAndSettle(answer.actionId).finally(() => {
      fired = p.simulator.control.listFaults().find((f) => f.id === fault)?.fired
      // Not left behind for the next test's creates, should this one fail before the fault fired.
      p.simulator.control.clearFaults()
    })
    expect(applied.status, JSON.stringify(applied.failure)).toBe("applied")
    // The fault fired, and a second create would have been refused as a duplicate name: the retry took the first.
    expect(fired).toBe(1)
    const named = (await p.run(p.upstream.adGroups(accountId(), campaign.campaignId))).filter((a) => a.name === "ACS Tree Lost Answer")
    expect(named.map((a) => a.adGroupId)).toEqual([applied.result?.["adGroupId"]])
    expect(await p.run(p.upstream.keywords(accountId(), campaign.campaignId, named[0]!.adGroupId))).toHaveLength(3)
  })

  it("demotes the apply when an ad group of that name appeared outside acs since the proposal", async () => {
    const campaign = manualCampaign()
    const answer = proposed(await p.propose("create-ad-group", request(campaign.campaignId, "ACS Tree Taken")))
    await p.run(p.upstream.createAdGroup(accountId(), campaign.campaignId, {
      name: "ACS Tree Taken",
      defaultBidMicros: 900_000,
      cpaGoalMicros: null,
      searchMatch: true,
      status: "PAUSED"
    }))
    const demoted = await approveAndSettle(answer.actionId)
    expect(demoted.status).toBe("proposed")
    expect(demoted.policyReasons.join(" ")).toMatch(/drift: campaign .* already has an ad group named "ACS Tree Taken" .* that acs did not create/)
  })

  it("lists every reason at once: a taken name and repeated keywords (422 validation_failed with its ledger row)", async () => {
    const slot = pool.find(manual)!
    const reasons = await expectValidationFailed(await p.propose("create-ad-group", {
      ...request(slot.campaign.campaignId, slot.adGroup.name),
      keywords: [{ text: "dup", matchType: "EXACT" }, { text: " DUP ", matchType: "EXACT" }],
      negativeKeywords: [{ text: "neg", matchType: "BROAD" }, { text: "neg", matchType: "BROAD" }]
    }))
    expect(reasons).toHaveLength(3)
    expect(reasons.join(" ")).toMatch(/already has an ad group named/)
    expect(reasons.join(" ")).toMatch(/keyword "dup" \(EXACT\) appears 2 times/)
    expect(reasons.join(" ")).toMatch(/negative keyword "neg" \(BROAD\) appears 2 times/)
  })

  it("refuses keyword bids on a MAX_CONVERSIONS campaign (422), an unknown campaign (404), a missing field (400), read-only (403)", async () => {
    expectError(await p.propose("create-ad-group", request(maxConversionsCampaign().campaignId, "ACS Tree MaxConv")), 422, "bid_strategy_conflict")
    expectError(await p.propose("create-ad-group", request("999999999", "ACS Tree Nowhere")), 404, "not_found")
    const { searchMatch: _searchMatch, ...missing } = request(manualCampaign().campaignId, "ACS Tree Missing")
    const malformed = await p.propose("create-ad-group", missing)
    expectError(malformed, 400, "invalid_request")
    expect(malformed.text).toMatch(/searchMatch/)
    await readOnlyRefuses("create-ad-group", request("1", "ACS Tree RO"))
  })
})

describe("clone_ad_group", () => {
  it("copies an ad group with its keywords and active negatives into its own campaign, and reverts by deleting the copy", async () => {
    const source = take(
      "enabled manual ad group with negatives",
      (s) => manual(s) && s.adGroup.status === "ENABLED" && withNegatives.has(s.adGroup.adGroupId)
    )
    const keywords = await p.run(p.upstream.keywords(accountId(), source.campaign.campaignId, source.adGroup.adGroupId))
    const negatives = (await p.run(p.upstream.negativeKeywords(accountId(), source.campaign.campaignId)))
      .filter((n) => n.adGroupId === source.adGroup.adGroupId && n.status === "ACTIVE")
    const answer = proposed(await p.propose("clone-ad-group", { sourceAdGroupId: source.adGroup.adGroupId, name: "ACS Clone One", reason: "test" }))
    expect(answer).toMatchObject({ mode: "queued", riskTier: "high" })
    expect(answer.policyReasons.join(" ")).toMatch(/always review: copying ad group/)
    const applied = await approveAndSettle(answer.actionId)
    expect(applied.status, JSON.stringify(applied.failure)).toBe("applied")
    const adGroupId = String(applied.result?.["adGroupId"])

    const copy = await upstreamAdGroup({ campaignId: source.campaign.campaignId, adGroupId })
    expect(copy).toMatchObject({
      name: "ACS Clone One",
      defaultBidMicros: source.adGroup.defaultBidMicros,
      cpaGoalMicros: source.adGroup.cpaGoalMicros,
      searchMatch: source.adGroup.searchMatch
    })
    const shape = (k: { text: string; matchType: string; bidMicros: number | null; status: string }) => `${k.text}|${k.matchType}|${k.bidMicros}|${k.status}`
    const copied = await p.run(p.upstream.keywords(accountId(), source.campaign.campaignId, adGroupId))
    expect(copied.map(shape).sort()).toEqual(keywords.map(shape).sort())
    const copiedNegatives = (await p.run(p.upstream.negativeKeywords(accountId(), source.campaign.campaignId))).filter((n) => n.adGroupId === adGroupId)
    expect(copiedNegatives.map((n) => `${n.text}|${n.matchType}`).sort()).toEqual(negatives.map((n) => `${n.text}|${n.matchType}`).sort())
    expect((await warehouseAdGroup(adGroupId))?.name).toBe("ACS Clone One")

    expect((await revert(answer.actionId)).status).toBe("applied")
    expect((await upstreamAdGroup({ campaignId: source.campaign.campaignId, adGroupId })).deleted).toBe(true)
    expect(await warehouseAdGroup(adGroupId)).toBeUndefined()
    expect((await upstreamAdGroup(source.adGroup)).deleted).toBe(false)
  })

  it("copies into a MAX_CONVERSIONS campaign without the keyword bids", async () => {
    const source = take("manual ad group", manual)
    const target = maxConversionsCampaign()
    const answer = proposed(await p.propose("clone-ad-group", {
      sourceAdGroupId: source.adGroup.adGroupId,
      targetCampaignId: target.campaignId,
      name: "ACS Clone MaxConv",
      reason: "test"
    }))
    const applied = await approveAndSettle(answer.actionId)
    expect(applied.status, JSON.stringify(applied.failure)).toBe("applied")
    expect(Number(applied.payload["keywordBidsDropped"])).toBeGreaterThan(0)
    const copied = await p.run(p.upstream.keywords(accountId(), target.campaignId, String(applied.result?.["adGroupId"])))
    expect(copied.length).toBeGreaterThan(0)
    expect(copied.every((k) => k.bidMicros === null)).toBe(true)
  })

  it("refuses an unknown source or target (404), a taken name (422 with its ledger row), read-only (403)", async () => {
    const slot = pool.find(manual)!
    expectError(await p.propose("clone-ad-group", { sourceAdGroupId: "999999999", name: "x", reason: "x" }), 404, "not_found")
    expectError(
      await p.propose("clone-ad-group", { sourceAdGroupId: slot.adGroup.adGroupId, targetCampaignId: "999999999", name: "x", reason: "x" }),
      404,
      "not_found"
    )
    const reasons = await expectValidationFailed(
      await p.propose("clone-ad-group", { sourceAdGroupId: slot.adGroup.adGroupId, name: slot.adGroup.name.toUpperCase(), reason: "x" })
    )
    expect(reasons).toEqual([expect.stringMatching(/already has an ad group named/)])
    await readOnlyRefuses("clone-ad-group", { sourceAdGroupId: "1", name: "x", reason: "x" })
  })
})
