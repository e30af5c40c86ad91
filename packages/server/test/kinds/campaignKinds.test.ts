/**
 * The campaign kinds through REST to the simulator and back: campaign_status, bid_strategy_change,
 * target_cpa_change, rename, create_campaign and clone_campaign (composites), and delete_campaign as their
 * revert. Each kind's happy path (upstream changed, ledger applied, warehouse updated), its validation errors,
 * and its revert; a create whose third step fails rolls back what it created.
 */
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { StepContext } from "../../src/actions/kinds/Kind.ts"
import { CreateCampaign } from "../../src/actions/kinds/CreateCampaign.ts"
import { type ActionView, type Pipeline, proposalOf, startPipeline, validationFailureOf } from "../support/pipeline.ts"
import { type Answer, errorCode } from "../support/server.ts"
import { KEYWORDS_BULK_CREATE } from "../support/upstreamPaths.ts"

let p: Pipeline
let manual: Array<UpstreamCampaign>
let maxConversions: Array<UpstreamCampaign>

const account = () => p.account.upstreamAccountId
const actions = () => `/accounts/${p.account.projectId}/actions`

/** Campaigns no other test in this file changes, taken in order. */
const takeManual = () => {
  const campaign = manual.shift()
  if (campaign === undefined) throw new Error("the demo account has too few MANUAL_CPT campaigns for this file")
  return campaign
}

const upstreamCampaign = (campaignId: string) => p.run(p.upstream.campaign(account(), campaignId))

const warehouseCampaign = async (campaignId: string) =>
  (await p.sql<{ name: string; status: string; bid_strategy: string; target_cpa_micros: string | null }>(
    "SELECT name, status, bid_strategy, target_cpa_micros FROM campaigns WHERE project_id = $1 AND campaign_id = $2",
    [p.account.projectId, campaignId]
  ))[0]

const countIn = async (table: "ad_groups" | "keywords" | "negative_keywords", campaignId: string) =>
  Number((await p.sql<{ n: string }>(
    `SELECT count(*) AS n FROM ${table} WHERE project_id = $1 AND campaign_id = $2`,
    [p.account.projectId, campaignId]
  ))[0]?.n)

/** A person approves a queued action; it then applies. */
const approveAndSettle = async (actionId: string): Promise<ActionView> => {
  const approved = await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)
  expect(approved.status).toBe(200)
  return p.settle(actionId)
}

/** Reverts an applied action: the compensation applies at once and the original becomes `reverted`. */
const revert = async (actionId: string, kind: string): Promise<ActionView> => {
  const answer = await p.as("person", "POST", `${actions()}/${actionId}/revert`)
  expect(answer.status).toBe(201)
  const compensation = await p.settle(proposalOf(answer).actionId)
  expect(compensation).toMatchObject({ status: "applied", kind, revertOf: actionId })
  expect(await p.action(actionId)).toMatchObject({ status: "reverted", revertedBy: compensation.actionId })
  return compensation
}

/** A 422 validation_failed whose failed ledger row is recorded; returns its reasons. */
const expectValidationFailed = async (answer: Answer): Promise<Array<string>> => {
  expect([answer.status, errorCode(answer)]).toEqual([422, "validation_failed"])
  const error = validationFailureOf(answer)
  expect(error.action_id).toEqual(expect.any(String))
  expect((await p.action(error.action_id ?? "")).status).toBe("failed")
  return [...error.validation_errors]
}

const expectCode = (answer: Answer, status: number, code: string) => expect([answer.status, errorCode(answer)]).toEqual([status, code])

const readOnly = (path: string, body: Record<string, unknown>) => p.propose(path, body, { projectId: p.readOnlyAccount.projectId })

beforeAll(async () => {
  p = await startPipeline({ seed: 33 })
  const campaigns = (await p.run(p.upstream.campaigns(account()))).filter((c) => !c.deleted && c.dailyBudgetMicros !== null)
  manual = campaigns.filter((c) => c.bidStrategy === "MANUAL_CPT")
  maxConversions = campaigns.filter((c) => c.bidStrategy === "MAX_CONVERSIONS")
  if (manual.length < 4 || maxConversions.length < 1) {
    throw new Error(`seed 33 gives ${manual.length} MANUAL_CPT and ${maxConversions.length} MAX_CONVERSIONS campaigns; this file needs 4 and 1`)
  }
})

afterAll(async () => {
  await p?.close()
})

describe("campaign_status", () => {
  it("queues for review, applies when approved, and reverts", async () => {
    const campaign = takeManual()
    const status = campaign.status === "ENABLED" ? "PAUSED" : "ENABLED"
    const proposed = await p.propose("campaign-status", { campaignId: campaign.campaignId, status, reason: "test" })
    expect(proposed.status).toBe(201)
    const body = proposalOf(proposed)
    expect(body).toMatchObject({ kind: "campaign_status", mode: "queued", riskTier: "review", status: "proposed" })
    expect(body.policyReasons.join(" ")).toMatch(/outside the auto-apply set: enabling or pausing a campaign always needs review/)

    const applied = await approveAndSettle(body.actionId)
    expect(applied.status).toBe("applied")
    expect(applied.payload).toMatchObject({ status, priorStatus: campaign.status })
    expect((await upstreamCampaign(campaign.campaignId)).status).toBe(status)
    expect((await warehouseCampaign(campaign.campaignId))?.status).toBe(status)

    await revert(body.actionId, "campaign_status")
    expect((await upstreamCampaign(campaign.campaignId)).status).toBe(campaign.status)
    expect((await warehouseCampaign(campaign.campaignId))?.status).toBe(campaign.status)
  })

  it("refuses the status it already has (409), an unknown campaign (404) and a read-only account (403)", async () => {
    const campaign = maxConversions[0]!
    expectCode(await p.propose("campaign-status", { campaignId: campaign.campaignId, status: campaign.status, reason: "x" }), 409, "no_op")
    expectCode(await p.propose("campaign-status", { campaignId: "999999999", status: "PAUSED", reason: "x" }), 404, "not_found")
    expectCode(await readOnly("campaign-status", { campaignId: "1", status: "PAUSED", reason: "x" }), 403, "read_only_account")
    expectCode(await p.propose("campaign-status", { campaignId: campaign.campaignId, status: "STOPPED", reason: "x" }), 400, "invalid_request")
  })
})

describe("bid_strategy_change", () => {
  it("always needs review (high), switches MANUAL_CPT to MAX_CONVERSIONS with its target, and reverts", async () => {
    const campaign = takeManual()
    const target = 4_500_000
    const proposed = await p.propose("bid-strategy-change", {
      campaignId: campaign.campaignId,
      bidStrategy: "MAX_CONVERSIONS",
      targetCpaMicros: target,
      reason: "let the platform bid"
    })
    expect(proposed.status).toBe(201)
    const body = proposalOf(proposed)
    expect(body).toMatchObject({ mode: "queued", riskTier: "high", status: "proposed" })
    expect(body.policyReasons.join(" ")).toMatch(/always review: a bid strategy switch always needs review/)

    const applied = await approveAndSettle(body.actionId)
    expect(applied.status).toBe("applied")
    expect(applied.payload).toMatchObject({
      bidStrategy: "MAX_CONVERSIONS",
      targetCpaMicros: target,
      priorBidStrategy: "MANUAL_CPT",
      priorTargetCpaMicros: campaign.targetCpaMicros
    })
    const upstream = await upstreamCampaign(campaign.campaignId)
    expect([upstream.bidStrategy, upstream.targetCpaMicros]).toEqual(["MAX_CONVERSIONS", target])
    const warehouse = await warehouseCampaign(campaign.campaignId)
    expect([warehouse?.bid_strategy, Number(warehouse?.target_cpa_micros)]).toEqual(["MAX_CONVERSIONS", target])

    await revert(body.actionId, "bid_strategy_change")
    const back = await upstreamCampaign(campaign.campaignId)
    expect([back.bidStrategy, back.targetCpaMicros]).toEqual(["MANUAL_CPT", campaign.targetCpaMicros])
    expect((await warehouseCampaign(campaign.campaignId))?.bid_strategy).toBe("MANUAL_CPT")
  })

  it("needs targetCpaMicros for MAX_CONVERSIONS (400) and takes none for MANUAL_CPT (400)", async () => {
    const campaign = manual[0]!
    const missing = await p.propose("bid-strategy-change", { campaignId: campaign.campaignId, bidStrategy: "MAX_CONVERSIONS", reason: "x" })
    expectCode(missing, 400, "invalid_request")
    expect(missing.text).toMatch(/targetCpaMicros/)
    const extra = await p.propose("bid-strategy-change", {
      campaignId: campaign.campaignId,
      bidStrategy: "MANUAL_CPT",
      targetCpaMicros: 1_000_000,
      reason: "x"
    })
    expectCode(extra, 400, "invalid_request")
  })

  it("refuses the strategy and target it already has (409), an unknown campaign (404) and a read-only account (403)", async () => {
    const max = maxConversions[0]!
    const same = await p.propose("bid-strategy-change", {
      campaignId: max.campaignId,
      bidStrategy: "MAX_CONVERSIONS",
      targetCpaMicros: max.targetCpaMicros,
      reason: "x"
    })
    expectCode(same, 409, "no_op")
    expectCode(
      await p.propose("bid-strategy-change", { campaignId: manual[0]!.campaignId, bidStrategy: "MANUAL_CPT", reason: "x" }),
      409,
      "no_op"
    )
    expectCode(await p.propose("bid-strategy-change", { campaignId: "999999999", bidStrategy: "MANUAL_CPT", reason: "x" }), 404, "not_found")
    expectCode(await readOnly("bid-strategy-change", { campaignId: "1", bidStrategy: "MANUAL_CPT", reason: "x" }), 403, "read_only_account")
  })
})

describe("target_cpa_change", () => {
  it("auto-applies a person's step of at most 10%, and reverts it", async () => {
    const campaign = maxConversions[0]!
    const prior = campaign.targetCpaMicros!
    // The largest raise within 10% in whole cents (the upstream refuses finer USD amounts).
    const next = prior + Math.floor(prior / 10 / 10_000) * 10_000
    const proposed = await p.propose("target-cpa-change", { campaignId: campaign.campaignId, newTargetCpaMicros: next, reason: "grow" })
    expect(proposed.status).toBe(201)
    const body = proposalOf(proposed)
    expect(body).toMatchObject({ mode: "auto_applied", riskTier: "safe" })
    expect(body.policyReasons.join(" ")).toMatch(/auto-apply: target CPA step of \d+\.\d% is within the 10% step rule/)

    const applied = await p.settle(body.actionId)
    expect([applied.status, applied.failure]).toEqual(["applied", null])
    expect(applied.payload).toMatchObject({ priorTargetCpaMicros: prior, newTargetCpaMicros: next })
    expect((await upstreamCampaign(campaign.campaignId)).targetCpaMicros).toBe(next)
    expect(Number((await warehouseCampaign(campaign.campaignId))?.target_cpa_micros)).toBe(next)

    await revert(body.actionId, "target_cpa_change")
    expect((await upstreamCampaign(campaign.campaignId)).targetCpaMicros).toBe(prior)
    expect(Number((await warehouseCampaign(campaign.campaignId))?.target_cpa_micros)).toBe(prior)
  })

  it("queues a step beyond 10%, and any key-proposed step", async () => {
    const campaign = maxConversions[0]!
    const prior = campaign.targetCpaMicros!
    const beyond = await p.propose("target-cpa-change", {
      campaignId: campaign.campaignId,
      newTargetCpaMicros: Math.floor((prior - prior / 10 - 1) / 10_000) * 10_000, // whole cents, just beyond 10%
      reason: "cut"
    })
    expect(proposalOf(beyond)).toMatchObject({ mode: "queued", riskTier: "review" })
    expect(proposalOf(beyond).policyReasons.join(" ")).toMatch(/outside the auto-apply set: target CPA step of 10\.\d% is beyond/)
    const key = await p.propose("target-cpa-change", { campaignId: campaign.campaignId, newTargetCpaMicros: prior + 10_000, reason: "x" }, { as: "key" })
    expect(proposalOf(key)).toMatchObject({ mode: "queued", riskTier: "safe" })
  })

  it("demotes an approved change to proposed when the target changed outside acs since the proposal", async () => {
    const campaign = maxConversions[0]!
    const prior = campaign.targetCpaMicros!
    const proposed = await p.propose("target-cpa-change", { campaignId: campaign.campaignId, newTargetCpaMicros: prior + 20_000, reason: "x" }, {
      as: "key"
    })
    await p.run(p.upstream.updateCampaign(account(), campaign.campaignId, { targetCpaMicros: prior + 10_000 }))
    const approved = await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${proposalOf(proposed).actionId}/approve`)
    expect(approved.status).toBe(200)
    const demoted = await p.settle(proposalOf(proposed).actionId, ["proposed", "applied", "failed"])
    expect(demoted.status).toBe("proposed")
    expect(demoted.policyReasons.join(" ")).toMatch(/drift: the target CPA of campaign .* changed outside acs/)
    expect((await upstreamCampaign(campaign.campaignId)).targetCpaMicros).toBe(prior + 10_000)
    await p.run(p.upstream.updateCampaign(account(), campaign.campaignId, { targetCpaMicros: prior }))
  })

  it("refuses a MANUAL_CPT campaign (422 validation_failed), the same target (409), unknown (404), read-only (403)", async () => {
    const reasons = await expectValidationFailed(
      await p.propose("target-cpa-change", { campaignId: manual[0]!.campaignId, newTargetCpaMicros: 2_000_000, reason: "x" })
    )
    expect(reasons.join(" ")).toMatch(/only to MAX_CONVERSIONS campaigns/)
    const campaign = maxConversions[0]!
    expectCode(
      await p.propose("target-cpa-change", { campaignId: campaign.campaignId, newTargetCpaMicros: campaign.targetCpaMicros, reason: "x" }),
      409,
      "no_op"
    )
    expectCode(await p.propose("target-cpa-change", { campaignId: "999999999", newTargetCpaMicros: 1_000_000, reason: "x" }), 404, "not_found")
    expectCode(await readOnly("target-cpa-change", { campaignId: "1", newTargetCpaMicros: 1_000_000, reason: "x" }), 403, "read_only_account")
  })
})

describe("rename", () => {
  it("renames a campaign and one of its ad groups after review, and reverts both", async () => {
    const campaign = takeManual()
    const renamed = await p.propose("rename", { entity: "campaign", id: campaign.campaignId, name: `${campaign.name} (renamed)`, reason: "tidy" })
    expect(proposalOf(renamed)).toMatchObject({ mode: "queued", riskTier: "review" })
    const applied = await approveAndSettle(proposalOf(renamed).actionId)
    expect(applied.status).toBe("applied")
    expect(applied.payload).toMatchObject({ priorName: campaign.name, name: `${campaign.name} (renamed)` })
    expect((await upstreamCampaign(campaign.campaignId)).name).toBe(`${campaign.name} (renamed)`)
    expect((await warehouseCampaign(campaign.campaignId))?.name).toBe(`${campaign.name} (renamed)`)
    await revert(proposalOf(renamed).actionId, "rename")
    expect((await upstreamCampaign(campaign.campaignId)).name).toBe(campaign.name)
    expect((await warehouseCampaign(campaign.campaignId))?.name).toBe(campaign.name)

    const adGroup = (await p.run(p.upstream.adGroups(account(), campaign.campaignId)))[0]!
    const group = await p.propose("rename", { entity: "adGroup", id: adGroup.adGroupId, name: "Renamed group", reason: "tidy" })
    expect((await approveAndSettle(proposalOf(group).actionId)).status).toBe("applied")
    expect((await p.run(p.upstream.adGroup(account(), campaign.campaignId, adGroup.adGroupId))).name).toBe("Renamed group")
    const row = await p.sql<{ name: string }>("SELECT name FROM ad_groups WHERE project_id = $1 AND ad_group_id = $2", [
      p.account.projectId,
      adGroup.adGroupId
    ])
    expect(row[0]?.name).toBe("Renamed group")
    await revert(proposalOf(group).actionId, "rename")
    expect((await p.run(p.upstream.adGroup(account(), campaign.campaignId, adGroup.adGroupId))).name).toBe(adGroup.name)

    // Renamed outside acs after the apply: the revert queues for review, naming the drift.
    const other = (await p.run(p.upstream.adGroups(account(), campaign.campaignId)))[1]!
    const renameOther = await p.propose("rename", { entity: "adGroup", id: other.adGroupId, name: "Ours", reason: "tidy" })
    expect((await approveAndSettle(proposalOf(renameOther).actionId)).status).toBe("applied")
    await p.run(p.upstream.updateAdGroup(account(), campaign.campaignId, other.adGroupId, { name: "Theirs" }))
    const drifted = await p.as("person", "POST", `${actions()}/${proposalOf(renameOther).actionId}/revert`)
    expect(drifted.status).toBe(201)
    expect(proposalOf(drifted)).toMatchObject({ mode: "queued", status: "proposed" })
    expect(proposalOf(drifted).policyReasons.join(" ")).toMatch(/drift: the name of ad group .* is now "Theirs" upstream/)
  })

  it("refuses a name another campaign or ad group has (422), the same name (409), unknown ids (404), read-only (403)", async () => {
    const [a, b] = [manual[0]!, maxConversions[0]!]
    const campaignClash = await expectValidationFailed(
      await p.propose("rename", { entity: "campaign", id: a.campaignId, name: b.name, reason: "x" })
    )
    expect(campaignClash.join(" ")).toMatch(new RegExp(`campaign ${b.campaignId} is already named`))
    const [first, second] = await p.run(p.upstream.adGroups(account(), a.campaignId))
    const groupClash = await expectValidationFailed(
      await p.propose("rename", { entity: "adGroup", id: first!.adGroupId, name: second!.name, reason: "x" })
    )
    expect(groupClash.join(" ")).toMatch(/is already named/)
    expectCode(await p.propose("rename", { entity: "campaign", id: a.campaignId, name: a.name, reason: "x" }), 409, "no_op")
    expectCode(await p.propose("rename", { entity: "adGroup", id: first!.adGroupId, name: first!.name, reason: "x" }), 409, "no_op")
    expectCode(await p.propose("rename", { entity: "campaign", id: "999999999", name: "n", reason: "x" }), 404, "not_found")
    expectCode(await p.propose("rename", { entity: "adGroup", id: "999999999", name: "n", reason: "x" }), 404, "not_found")
    expectCode(await readOnly("rename", { entity: "campaign", id: "1", name: "n", reason: "x" }), 403, "read_only_account")
  })
})

/** A create_campaign body: two ad groups, bids on some keywords, negatives on the first. */
const createBody = (name: string, overrides: Record<string, unknown> = {}) => ({
  name,
  adamId: manual[0]!.adamId,
  countriesOrRegions: ["US"],
  dailyBudgetMicros: 50_000_000,
  bidStrategy: "MANUAL_CPT",
  adGroups: [
    {
      name: "Brand - Exact",
      defaultBidMicros: 1_500_000,
      cpaGoalMicros: 8_000_000,
      searchMatch: false,
      keywords: [
        { text: "acme tasks", matchType: "EXACT", bidMicros: 2_000_000 },
        { text: "acme todo", matchType: "EXACT" },
        { text: "acme planner", matchType: "EXACT", bidMicros: null }
      ],
      negativeKeywords: [{ text: "free", matchType: "BROAD" }]
    },
    {
      name: "Discovery",
      defaultBidMicros: 900_000,
      searchMatch: true,
      keywords: [{ text: "task manager", matchType: "BROAD" }],
      negativeKeywords: []
    }
  ],
  reason: "launch",
  ...overrides
})

const liveCampaignNamed = async (name: string) =>
  (await p.run(p.upstream.campaigns(account()))).find((c) => c.name === name && !c.deleted)

describe("create_campaign", () => {
  it("builds the campaign, its ad groups, keywords and negatives after review, and reverts by deleting it", async () => {
    const proposed = await p.propose("create-campaign", createBody("Launch 2025"))
    expect(proposed.status).toBe(201)
    const body = proposalOf(proposed)
    expect(body).toMatchObject({ kind: "create_campaign", mode: "queued", riskTier: "high" })
    expect(body.policyReasons.join(" ")).toMatch(/always review: creating a campaign always needs review/)

    const applied = await approveAndSettle(body.actionId)
    expect(applied.status).toBe("applied")
    expect(applied.warnings).toEqual([])
    const campaignId = applied.result?.["campaignId"]
    expect(campaignId).toEqual(expect.any(String))
    expect(applied.result).toMatchObject({ "adGroupId:0": expect.any(String), "adGroupId:1": expect.any(String) })

    const campaign = await upstreamCampaign(String(campaignId))
    expect(campaign).toMatchObject({ name: "Launch 2025", bidStrategy: "MANUAL_CPT", dailyBudgetMicros: 50_000_000, status: "ENABLED" })
    const adGroups = await p.run(p.upstream.adGroups(account(), campaign.campaignId))
    expect(adGroups.map((a) => a.name).sort()).toEqual(["Brand - Exact", "Discovery"])
    const brand = adGroups.find((a) => a.name === "Brand - Exact")!
    const keywords = await p.run(p.upstream.keywords(account(), campaign.campaignId, brand.adGroupId))
    expect(keywords.map((k) => [k.text, k.bidMicros]).sort()).toEqual([
      ["acme planner", null],
      ["acme tasks", 2_000_000],
      ["acme todo", null]
    ])
    const negatives = await p.run(p.upstream.negativeKeywords(account(), campaign.campaignId))
    expect(negatives.map((n) => [n.text, n.adGroupId])).toEqual([["free", brand.adGroupId]])

    expect((await warehouseCampaign(campaign.campaignId))?.name).toBe("Launch 2025")
    expect(await countIn("ad_groups", campaign.campaignId)).toBe(2)
    expect(await countIn("keywords", campaign.campaignId)).toBe(4)
    expect(await countIn("negative_keywords", campaign.campaignId)).toBe(1)

    const compensation = await revert(body.actionId, "delete_campaign")
    expect(compensation.summary).toMatch(/^Revert: delete campaign "Launch 2025"/)
    expect((await upstreamCampaign(campaign.campaignId)).deleted).toBe(true)
    expect(await warehouseCampaign(campaign.campaignId)).toBeUndefined()
    expect(await countIn("keywords", campaign.campaignId)).toBe(0)
    const again = await p.as("person", "POST", `${actions()}/${compensation.actionId}/revert`)
    expectCode(again, 422, "not_revertible")
  })

  it("applies with warnings when some keyword rows are refused upstream", async () => {
    // Fires once: on the first keyword call, that of ad group "Brand - Exact".
    p.simulator.control.addFault({ kind: "bulkRows", rows: [1], method: "POST", path: KEYWORDS_BULK_CREATE, message: "simulated refusal" })
    const proposed = await p.propose("create-campaign", createBody("Partly keywords"))
    const applied = await approveAndSettle(proposalOf(proposed).actionId)
    expect(applied.status).toBe("applied")
    expect(applied.warnings).toHaveLength(1)
    expect(applied.warnings[0]).toMatch(/"acme todo" \(EXACT\).*simulated refusal/)
    const campaignId = String(applied.result?.["campaignId"])
    expect(await countIn("keywords", campaignId)).toBe(3)
    await revert(proposalOf(proposed).actionId, "delete_campaign")
  })

  it("rolls back what it created when step 3 fails, and reports that step", async () => {
    // Steps: 1 create the campaign, 2 its first ad group, 3 that ad group's keywords (this call fails once).
    p.simulator.control.addFault({ kind: "status", status: 500, method: "POST", path: KEYWORDS_BULK_CREATE, nth: 1 })
    const since = Math.max(0, ...p.simulator.control.listCalls().map((c) => c.seq))
    const proposed = await p.propose("create-campaign", createBody("Doomed launch"))
    const approved = await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${proposalOf(proposed).actionId}/approve`)
    expect(approved.status).toBe(200)
    const failed = await p.settle(proposalOf(proposed).actionId)
    expect(failed.status).toBe("failed")
    expect(failed.failure).toMatchObject({ step: 3 })
    expect(failed.failure?.message).toMatch(/step 3 \(create the keywords of ad group "Brand - Exact"\) failed: .*rolled back/)
    // The campaign step 1 created was deleted upstream by the rollback, and the warehouse does not keep it.
    const deletes = p.simulator.control.listCalls({ method: "DELETE", path: /\/campaigns\/\d+$/, since })
    expect(deletes).toHaveLength(1)
    const campaignId = deletes[0]!.path.split("/").pop()!
    expect(await upstreamCampaign(campaignId)).toMatchObject({ name: "Doomed launch", deleted: true })
    expect(await liveCampaignNamed("Doomed launch")).toBeUndefined()
    expect(await p.sql("SELECT 1 FROM campaigns WHERE project_id = $1 AND name = $2", [p.account.projectId, "Doomed launch"])).toHaveLength(0)
  })

  it("reconciles by name: running its steps again creates nothing twice", async () => {
    const prepared = await p.propose("create-campaign", createBody("Twice built"), { as: "key" })
    const payload = (await p.action(proposalOf(prepared).actionId)).payload
    const steps = CreateCampaign.use((definition) => definition.steps(Schema.decodeUnknownSync(definition.payload)(payload)))
    const runAll = async () => {
      let ids: StepContext["ids"] = {}
      for (const step of steps) {
        const result = await Effect.runPromise(step.apply({ client: p.upstream, accountId: account(), ids, acceptDrift: false }))
        ids = { ...ids, ...result.ids }
      }
      return ids
    }
    const first = await runAll()
    const second = await runAll()
    expect(second["campaignId"]).toBe(first["campaignId"])
    expect(second["adGroupId:0"]).toBe(first["adGroupId:0"])
    const campaignId = String(first["campaignId"])
    expect(await p.run(p.upstream.adGroups(account(), campaignId))).toHaveLength(2)
    expect(await p.run(p.upstream.campaignKeywords(account(), campaignId))).toHaveLength(4)
    await p.run(p.upstream.deleteCampaign(account(), campaignId))
  })

  it("deletes idempotently on revert when the campaign was already deleted outside acs", async () => {
    const proposed = await p.propose("create-campaign", createBody("Short lived"))
    const applied = await approveAndSettle(proposalOf(proposed).actionId)
    const campaignId = String(applied.result?.["campaignId"])
    await p.run(p.upstream.deleteCampaign(account(), campaignId))
    await revert(proposalOf(proposed).actionId, "delete_campaign")
    expect(await warehouseCampaign(campaignId)).toBeUndefined()
  })

  it("refuses a taken name and other conflicts all at once (422), keyword bids on MAX_CONVERSIONS (422), a missing target (400)", async () => {
    const taken = manual[0]!.name
    const reasons = await expectValidationFailed(await p.propose("create-campaign", createBody(taken, {
      adGroups: [
        { name: "Same", defaultBidMicros: 1_000_000, searchMatch: false, keywords: [], negativeKeywords: [] },
        {
          name: "same",
          defaultBidMicros: 1_000_000,
          searchMatch: false,
          keywords: [{ text: "dup", matchType: "EXACT" }, { text: "DUP ", matchType: "EXACT" }],
          negativeKeywords: []
        }
      ]
    })))
    expect(reasons).toHaveLength(3)
    expect(reasons.join(" | ")).toMatch(/is already named/)
    expect(reasons.join(" | ")).toMatch(/ad group name "same" is used 2 times/)
    expect(reasons.join(" | ")).toMatch(/"dup" \(EXACT\) appears 2 times/)

    const bids = await p.propose("create-campaign", createBody("Max conv", { bidStrategy: "MAX_CONVERSIONS", targetCpaMicros: 5_000_000 }))
    expectCode(bids, 422, "bid_strategy_conflict")
    expect(bids.text).toMatch(/acme tasks/)

    const noTarget = await p.propose("create-campaign", createBody("Max conv", { bidStrategy: "MAX_CONVERSIONS" }))
    expectCode(noTarget, 400, "invalid_request")
    expect(noTarget.text).toMatch(/targetCpaMicros/)

    expectCode(await readOnly("create-campaign", createBody("Read only")), 403, "read_only_account")
  })

  it("creates a MAX_CONVERSIONS campaign with its target when no keyword has a bid", async () => {
    const body = createBody("Max conv launch", { bidStrategy: "MAX_CONVERSIONS", targetCpaMicros: 5_000_000 })
    const adGroups = body.adGroups.map((a) => ({ ...a, keywords: a.keywords.map((k) => ({ text: k.text, matchType: k.matchType })) }))
    const applied = await approveAndSettle(proposalOf(await p.propose("create-campaign", { ...body, adGroups })).actionId)
    expect(applied.status).toBe("applied")
    const campaign = await upstreamCampaign(String(applied.result?.["campaignId"]))
    expect([campaign.bidStrategy, campaign.targetCpaMicros]).toEqual(["MAX_CONVERSIONS", 5_000_000])
  })
})

describe("clone_campaign", () => {
  it("copies the source's tree from the warehouse, builds it after review, and reverts by deleting the copy", async () => {
    const source = manual[manual.length - 1]!
    const proposed = await p.propose("clone-campaign", {
      sourceCampaignId: source.campaignId,
      name: "Copy of source",
      dailyBudgetMicros: 12_000_000,
      reason: "test a variant"
    })
    expect(proposed.status).toBe(201)
    const body = proposalOf(proposed)
    expect(body).toMatchObject({ kind: "clone_campaign", mode: "queued", riskTier: "high" })
    const queued = await p.action(body.actionId)
    const sourceGroups = await p.run(p.upstream.adGroups(account(), source.campaignId))
    const sourceKeywords = await p.run(p.upstream.campaignKeywords(account(), source.campaignId))
    const tree = queued.payload["campaign"] as { adGroups: Array<{ keywords: Array<unknown> }> }
    expect(tree.adGroups).toHaveLength(sourceGroups.length)
    expect(tree.adGroups.reduce((n, a) => n + a.keywords.length, 0)).toBe(sourceKeywords.length)

    const applied = await approveAndSettle(body.actionId)
    expect(applied.status).toBe("applied")
    const copyId = String(applied.result?.["campaignId"])
    const copy = await upstreamCampaign(copyId)
    expect(copy).toMatchObject({
      name: "Copy of source",
      adamId: source.adamId,
      dailyBudgetMicros: 12_000_000,
      bidStrategy: source.bidStrategy,
      status: source.status
    })
    expect((await p.run(p.upstream.adGroups(account(), copyId))).map((a) => a.name).sort()).toEqual(sourceGroups.map((a) => a.name).sort())
    expect(await p.run(p.upstream.campaignKeywords(account(), copyId))).toHaveLength(sourceKeywords.length)
    const sourceNegatives = (await p.run(p.upstream.negativeKeywords(account(), source.campaignId))).filter((n) => n.status === "ACTIVE")
    expect(await p.run(p.upstream.negativeKeywords(account(), copyId))).toHaveLength(sourceNegatives.length)
    expect(await countIn("ad_groups", copyId)).toBe(sourceGroups.length)
    expect(await countIn("keywords", copyId)).toBe(sourceKeywords.length)

    await revert(body.actionId, "delete_campaign")
    expect((await upstreamCampaign(copyId)).deleted).toBe(true)
    expect(await warehouseCampaign(copyId)).toBeUndefined()
    // The source is untouched.
    expect(await p.run(p.upstream.campaignKeywords(account(), source.campaignId))).toHaveLength(sourceKeywords.length)
  })

  it("refuses a taken name (422), an unknown source (404) and a read-only account (403)", async () => {
    const source = manual[manual.length - 1]!
    const reasons = await expectValidationFailed(
      await p.propose("clone-campaign", { sourceCampaignId: source.campaignId, name: source.name, reason: "x" })
    )
    expect(reasons.join(" ")).toMatch(/is already named/)
    expectCode(await p.propose("clone-campaign", { sourceCampaignId: "999999999", name: "n", reason: "x" }), 404, "not_found")
    expectCode(await readOnly("clone-campaign", { sourceCampaignId: "1", name: "n", reason: "x" }), 403, "read_only_account")
  })
})
