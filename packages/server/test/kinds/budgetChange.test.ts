/**
 * budget_change through REST to the simulator and back: the policy's cut and raise rules, validation (the
 * 3 × hard cap at proposal among it), the apply (upstream changed, ledger applied, warehouse updated) and
 * its revert.
 */
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "../support/pipeline.ts"
import { errorCode } from "../support/server.ts"
import { waitFor } from "../support/wait.ts"

let p: Pipeline
let campaigns: ReadonlyArray<UpstreamCampaign>

const warehouseBudget = async (campaignId: string) =>
  Number((await p.sql<{ budget: string }>(
    "SELECT daily_budget_micros AS budget FROM campaigns WHERE project_id = $1 AND campaign_id = $2",
    [p.account.projectId, campaignId]
  ))[0]?.budget)

const upstreamBudget = async (campaignId: string) =>
  (await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaignId))).dailyBudgetMicros

/** A campaign no other test in this file touches. */
let next = 0
const freshCampaign = () => {
  const campaign = campaigns[next++]
  if (campaign === undefined) throw new Error("the demo account has too few campaigns for this file")
  return campaign
}

beforeAll(async () => {
  p = await startPipeline({ seed: 21 })
  campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).filter((c) => !c.deleted && c.dailyBudgetMicros !== null)
})

afterAll(async () => {
  await p?.close()
})

/** The event of `type` about an action, once the sequencer has given it its place. */
const eventOf = (type: string, actionId: string) =>
  waitFor(`the ${type} event of ${actionId}`, async () => {
    const page = await p.as("key", "GET", `/events?type=${type}&limit=100`)
    return (page.body as { events: Array<{ data: { action: { actionId: string }; revertedBy?: string } }> }).events
      .find((e) => e.data.action.actionId === actionId)
  }, (event) => event !== undefined).then((event) => event!.data)

describe("budget_change", () => {
  it("auto-applies a person's 20% cut, changes the upstream and the warehouse, and reverts it", async () => {
    const campaign = freshCampaign()
    const prior = campaign.dailyBudgetMicros!
    const target = Math.round(prior * 0.8)
    const proposed = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: target, reason: "trim" })
    expect(proposed.status).toBe(201)
    const body = proposed.body as { actionId: string; mode: string; riskTier: string; policyReasons: Array<string> }
    expect(proposed.headers.get("location")).toBe(`/api/v1/accounts/${p.account.projectId}/actions/${body.actionId}`)
    expect(body).toMatchObject({ kind: "budget_change", mode: "auto_applied", riskTier: "safe" })
    expect(body.policyReasons.join(" ")).toMatch(/30% cut rule/)

    const applied = await p.settle(body.actionId)
    expect(applied.status).toBe("applied")
    expect(applied.payload).toMatchObject({ priorDailyBudgetMicros: prior, newDailyBudgetMicros: target })
    expect(await upstreamBudget(campaign.campaignId)).toBe(target)
    expect(await warehouseBudget(campaign.campaignId)).toBe(target)

    const revert = await p.as("person", "POST", `/accounts/${p.account.projectId}/actions/${body.actionId}/revert`)
    expect(revert.status).toBe(201)
    const compensation = await p.settle((revert.body as { actionId: string }).actionId)
    expect(compensation).toMatchObject({ status: "applied", revertOf: body.actionId, kind: "budget_change" })
    expect(await upstreamBudget(campaign.campaignId)).toBe(prior)
    expect(await warehouseBudget(campaign.campaignId)).toBe(prior)
    const reverted = await p.action(body.actionId)
    expect(reverted).toMatchObject({ status: "reverted", revertedBy: compensation.actionId })
    // Each outcome's event carries the action as the API showed it then (written in the apply's own statement).
    expect((await eventOf("action.applied", body.actionId)).action).toEqual(applied)
    expect((await eventOf("action.applied", compensation.actionId)).action).toEqual(compensation)
    expect(await eventOf("action.reverted", body.actionId)).toEqual({ action: reverted, revertedBy: compensation.actionId })

    const again = await p.as("person", "POST", `/accounts/${p.account.projectId}/actions/${body.actionId}/revert`)
    expect(again.status).toBe(422)
    expect(errorCode(again)).toBe("not_revertible")
    const ofCompensation = await p.as("person", "POST", `/accounts/${p.account.projectId}/actions/${compensation.actionId}/revert`)
    expect(errorCode(ofCompensation)).toBe("not_revertible")
  })

  it("queues a 31% cut, and a raise without a target band, naming the rule", async () => {
    const campaign = freshCampaign()
    const prior = campaign.dailyBudgetMicros!
    const cut = await p.propose("budget-change", {
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: Math.floor(prior * 0.69),
      reason: "deep cut"
    })
    expect(cut.status).toBe(201)
    expect(cut.body).toMatchObject({ mode: "queued", riskTier: "review", status: "proposed" })
    expect((cut.body as { policyReasons: Array<string> }).policyReasons.join(" ")).toMatch(/outside the auto-apply set: budget cut of 31\.0% is beyond the 30%/)

    const raise = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(prior * 1.1), reason: "grow" })
    expect(raise.body).toMatchObject({ mode: "queued" })
    expect((raise.body as { policyReasons: Array<string> }).policyReasons.join(" ")).toMatch(/target band/)
  })

  it("auto-applies a raise of at most 30% only while the campaign's 30-day CPA is inside the band", async () => {
    const campaign = freshCampaign()
    const prior = campaign.dailyBudgetMicros!
    const wide = { minMicros: 0, maxMicros: 1_000_000_000_000 }
    const put = await p.as("key", "PUT", `/accounts/${p.account.projectId}/targets`, { cpaBand: wide, campaigns: {} })
    expect(put.status).toBe(200)
    const inBand = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(prior * 1.2), reason: "grow" })
    const inBody = inBand.body as { mode: string; actionId: string; policyReasons: Array<string> }
    const installs = Number((await p.sql<{ installs: string }>(
      "SELECT coalesce(sum(installs), 0) AS installs FROM daily_metrics WHERE project_id = $1 AND level = 'campaigns' AND entity_key = $2",
      [p.account.projectId, campaign.campaignId]
    ))[0]?.installs)
    if (installs > 0) {
      expect(inBody.mode).toBe("auto_applied")
      expect(inBody.policyReasons.join(" ")).toMatch(/inside the target band/)
      expect((await p.settle(inBody.actionId)).status).toBe("applied")
    } else {
      expect(inBody.policyReasons.join(" ")).toMatch(/no installs/)
    }

    // A campaign band outside the CPA wins over the account band.
    const other = freshCampaign()
    await p.as("key", "PUT", `/accounts/${p.account.projectId}/targets`, {
      cpaBand: wide,
      campaigns: { [other.campaignId]: { minMicros: 0, maxMicros: 1 } }
    })
    const outOfBand = await p.propose("budget-change", {
      campaignId: other.campaignId,
      newDailyBudgetMicros: Math.round(other.dailyBudgetMicros! * 1.2),
      reason: "grow"
    })
    expect(outOfBand.body).toMatchObject({ mode: "queued" })
    await p.as("key", "PUT", `/accounts/${p.account.projectId}/targets`, { cpaBand: null, campaigns: {} })
  })

  it("queues every key-proposed change, even one the policy would clear", async () => {
    const campaign = freshCampaign()
    const answer = await p.propose(
      "budget-change",
      { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.9), reason: "trim" },
      { as: "key" }
    )
    expect(answer.body).toMatchObject({ mode: "queued", riskTier: "safe", status: "proposed" })
    const reasons = (answer.body as { policyReasons: Array<string> }).policyReasons
    expect(reasons[0]).toMatch(/API key/)
    expect(reasons.join(" ")).toMatch(/would auto-apply: budget cut of 10\.0%/)
  })

  it("refuses a budget above 3 × the warehouse value at proposal, recording the failed row, and takes exactly 3 ×", async () => {
    const campaign = freshCampaign()
    const prior = await warehouseBudget(campaign.campaignId)
    const capReason = /^hard cap: the new daily budget .* is more than 3 × the campaign's daily budget in the warehouse/

    // One micro over: the cap is named (beside the whole-cent rule the micro also breaks).
    const micro = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: 3 * prior + 1, reason: "x" })
    expect([micro.status, errorCode(micro)], micro.text).toEqual([422, "validation_failed"])
    const microError = (micro.body as { error: { action_id: string; validation_errors: Array<string> } }).error
    expect(microError.validation_errors).toEqual(expect.arrayContaining([expect.stringMatching(capReason)]))
    expect(await p.action(microError.action_id)).toMatchObject({ kind: "budget_change", status: "failed" })

    // One cent over: the cap is the only reason, and the failed row keeps it.
    const cent = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: 3 * prior + 10_000, reason: "x" })
    expect([cent.status, errorCode(cent)], cent.text).toEqual([422, "validation_failed"])
    const centError = (cent.body as { error: { action_id: string; validation_errors: Array<string> } }).error
    expect(centError.validation_errors).toHaveLength(1)
    expect(centError.validation_errors[0]).toMatch(capReason)
    const failed = await p.action(centError.action_id)
    expect(failed).toMatchObject({ kind: "budget_change", status: "failed", mode: null })
    expect(failed.failure?.message).toMatch(capReason)

    // Exactly 3 × is inside the cap: queued (a raise beyond 30%), and the apply worker's own cap lets it through.
    const exactly = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: 3 * prior, reason: "x" })
    expect(exactly.status, exactly.text).toBe(201)
    expect(exactly.body).toMatchObject({ mode: "queued", status: "proposed" })
    expect((exactly.body as { policyReasons: Array<string> }).policyReasons.join(" ")).toMatch(/budget raise of \+200\.0% is beyond the 30%/)
    const actionId = (exactly.body as { actionId: string }).actionId
    expect((await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)).status).toBe(200)
    expect((await p.settle(actionId)).status).toBe("applied")
    expect(await upstreamBudget(campaign.campaignId)).toBe(3 * prior)

    // Its revert cuts the budget back (the last test of this file expects the campaign's budget as synced).
    const revert = await p.as("person", "POST", `/accounts/${p.account.projectId}/actions/${actionId}/revert`)
    expect(revert.status, revert.text).toBe(201)
    expect((await p.settle((revert.body as { actionId: string }).actionId)).status).toBe("applied")
    expect(await warehouseBudget(campaign.campaignId)).toBe(prior)
  })

  it("refuses an unknown campaign (404), the budget it already has (409 no_op) and a read-only account (403)", async () => {
    const unknown = await p.propose("budget-change", { campaignId: "999999999", newDailyBudgetMicros: 1_000_000, reason: "x" })
    expect([unknown.status, errorCode(unknown)]).toEqual([404, "not_found"])

    const campaign = campaigns[campaigns.length - 1]!
    const same = await p.propose("budget-change", {
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: campaign.dailyBudgetMicros,
      reason: "x"
    })
    expect([same.status, errorCode(same)]).toEqual([409, "no_op"])

    const readOnly = await p.propose(
      "budget-change",
      { campaignId: "1", newDailyBudgetMicros: 1_000_000, reason: "x" },
      { projectId: p.readOnlyAccount.projectId }
    )
    expect([readOnly.status, errorCode(readOnly)]).toEqual([403, "read_only_account"])

    const malformed = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: -5, reason: "x" })
    expect([malformed.status, errorCode(malformed)]).toEqual([400, "invalid_request"])
  })
})
