/**
 * budget_change through REST to the simulator and back: the policy's cut and raise rules, validation (the
 * 3 × hard cap at proposal among it), the apply (upstream changed, ledger applied, warehouse updated) and
 * its revert.
 */
import { isProposalResponse, type ProposalPreview, ProposalResponse, type Targets } from "@acs/domain/Actions"
import { ErrorBodies } from "@acs/domain/Errors"
import type { EventType } from "@acs/domain/Events"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Caller, type Pipeline, startPipeline } from "../support/pipeline.ts"
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

/** A revert's answer, not its preview: the typed client decodes a 201 as the revert, a 200 as the preview. */
const recorded = (answer: ProposalResponse | ProposalPreview): ProposalResponse => {
  if (!isProposalResponse(answer)) throw new Error(`a preview where a revert was expected: ${JSON.stringify(answer)}`)
  return answer
}

interface BudgetChange {
  readonly campaignId: string
  readonly newDailyBudgetMicros: number
  readonly reason: string
}

/**
 * Proposes a budget change: 201, its answer decoded by the contract's schema. (Over `call`: the typed client's
 * proposal group, built in a loop over the kinds, types its methods as `never`.)
 */
const proposeBudget = async (payload: BudgetChange, as: Caller = "person") => {
  const answer = await p.propose("budget-change", { ...payload }, { as })
  expect(answer.status, answer.text).toBe(201)
  return Schema.decodeUnknownSync(ProposalResponse)(answer.body)
}

/** A budget change refused as 422 `validation_failed`: its envelope decoded by the contract's schema. */
const validationFailed = async (payload: BudgetChange) => {
  const answer = await p.propose("budget-change", { ...payload })
  expect([answer.status, errorCode(answer)], answer.text).toEqual([422, "validation_failed"])
  return Schema.decodeUnknownSync(ErrorBodies.ValidationFailed)(answer.body)
}

/** Reverts an action as the signed-in person: its compensating action's proposal. */
const revert = (actionId: string) =>
  p.api("person", (client) => Effect.map(client.actions.revertAction({ path: { projectId: p.account.projectId, actionId }, urlParams: {} }), recorded))

/** The refusal of a revert, as its error class. */
const revertRefusal = (actionId: string) =>
  p.api("person", (client) => Effect.flip(client.actions.revertAction({ path: { projectId: p.account.projectId, actionId }, urlParams: {} })))

/** An action event's data: the action as GET …/actions/{actionId} shows it (every field kept), and on a revert its compensation. */
const ActionEventData = Schema.Struct({ action: Schema.Struct({ actionId: Schema.String }), revertedBy: Schema.optional(Schema.String) })
const actionEventData = Schema.decodeUnknownSync(ActionEventData, { onExcessProperty: "preserve" })

/** The event of `type` about an action, once the sequencer has given it its place. */
const eventOf = (type: EventType, actionId: string) =>
  waitFor(`the ${type} event of ${actionId}`, async () => {
    const page = await p.api("key", (client) => client.events.listEvents({ urlParams: { type, limit: 100 } }))
    return page.events.map((e) => actionEventData(e.data)).find((data) => data.action.actionId === actionId)
  }, (data) => data !== undefined).then((data) => data!)

describe("budget_change", () => {
  it("auto-applies a person's 20% cut, changes the upstream and the warehouse, and reverts it", async () => {
    const campaign = freshCampaign()
    const prior = campaign.dailyBudgetMicros!
    const target = Math.round(prior * 0.8)
    const proposed = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros: target, reason: "trim" })
    expect(proposed.status).toBe(201)
    const body = Schema.decodeUnknownSync(ProposalResponse)(proposed.body)
    expect(proposed.headers.get("location")).toBe(`/api/v1/accounts/${p.account.projectId}/actions/${body.actionId}`)
    expect(body).toMatchObject({ kind: "budget_change", mode: "auto_applied", riskTier: "safe" })
    expect(body.policyReasons.join(" ")).toMatch(/30% cut rule/)

    const applied = await p.settle(body.actionId)
    expect(applied.status).toBe("applied")
    expect(applied.payload).toMatchObject({ priorDailyBudgetMicros: prior, newDailyBudgetMicros: target })
    expect(await upstreamBudget(campaign.campaignId)).toBe(target)
    expect(await warehouseBudget(campaign.campaignId)).toBe(target)

    const compensation = await p.settle((await revert(body.actionId)).actionId)
    expect(compensation).toMatchObject({ status: "applied", revertOf: body.actionId, kind: "budget_change" })
    expect(await upstreamBudget(campaign.campaignId)).toBe(prior)
    expect(await warehouseBudget(campaign.campaignId)).toBe(prior)
    const reverted = await p.action(body.actionId)
    expect(reverted).toMatchObject({ status: "reverted", revertedBy: compensation.actionId })
    // Each outcome's event carries the action as the API showed it then (written in the apply's own statement).
    expect((await eventOf("action.applied", body.actionId)).action).toEqual(applied)
    expect((await eventOf("action.applied", compensation.actionId)).action).toEqual(compensation)
    expect(await eventOf("action.reverted", body.actionId)).toEqual({ action: reverted, revertedBy: compensation.actionId })

    // NotRevertible is the 422 `not_revertible` envelope.
    expect(await revertRefusal(body.actionId)).toMatchObject({ _tag: "NotRevertible" })
    expect(await revertRefusal(compensation.actionId)).toMatchObject({ _tag: "NotRevertible" })
  })

  it("queues a 31% cut, and a raise without a target band, naming the rule", async () => {
    const campaign = freshCampaign()
    const prior = campaign.dailyBudgetMicros!
    const cut = await proposeBudget({ campaignId: campaign.campaignId, newDailyBudgetMicros: Math.floor(prior * 0.69), reason: "deep cut" })
    expect(cut).toMatchObject({ mode: "queued", riskTier: "review", status: "proposed" })
    expect(cut.policyReasons.join(" ")).toMatch(/outside the auto-apply set: budget cut of 31\.0% is beyond the 30%/)

    const raise = await proposeBudget({ campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(prior * 1.1), reason: "grow" })
    expect(raise).toMatchObject({ mode: "queued" })
    expect(raise.policyReasons.join(" ")).toMatch(/target band/)
  })

  it("auto-applies a raise of at most 30% only while the campaign's 30-day CPA is inside the band", async () => {
    const campaign = freshCampaign()
    const prior = campaign.dailyBudgetMicros!
    const wide = { minMicros: 0, maxMicros: 1_000_000_000_000 }
    const setTargets = (payload: Targets) =>
      p.api("key", (client) => client.actions.updateTargets({ path: { projectId: p.account.projectId }, payload }))
    expect(await setTargets({ cpaBand: wide, campaigns: {} })).toEqual({ cpaBand: wide, campaigns: {} })
    const inBody = await proposeBudget({ campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(prior * 1.2), reason: "grow" })
    // The evidence behind it (the rule's 30 days end yesterday; the demo's data does too).
    const [evidence] = await p.sql<{ installs: string; days: number }>(
      `SELECT coalesce(sum(installs), 0) AS installs, count(DISTINCT day)::int AS days FROM daily_metrics
       WHERE project_id = $1 AND level = 'campaigns' AND entity_key = $2 AND day >= current_date - 30 AND day < current_date`,
      [p.account.projectId, campaign.campaignId]
    )
    if (Number(evidence!.installs) >= 20 && evidence!.days >= 7) {
      expect(inBody.mode).toBe("auto_applied")
      expect(inBody.policyReasons.join(" ")).toMatch(/inside the target band/)
      expect((await p.settle(inBody.actionId)).status).toBe("applied")
    } else {
      expect(inBody.policyReasons.join(" ")).toMatch(/needs at least 7 complete days and 20 installs/)
    }

    // A campaign band outside the CPA wins over the account band.
    const other = freshCampaign()
    await setTargets({ cpaBand: wide, campaigns: { [other.campaignId]: { minMicros: 0, maxMicros: 1 } } })
    const outOfBand = await proposeBudget({
      campaignId: other.campaignId,
      newDailyBudgetMicros: Math.round(other.dailyBudgetMicros! * 1.2),
      reason: "grow"
    })
    expect(outOfBand).toMatchObject({ mode: "queued" })
    await setTargets({ cpaBand: null, campaigns: {} })
  })

  it("queues every key-proposed change, even one the policy would clear", async () => {
    const campaign = freshCampaign()
    const answer = await proposeBudget(
      { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.9), reason: "trim" },
      "key"
    )
    expect(answer).toMatchObject({ mode: "queued", riskTier: "safe", status: "proposed" })
    const reasons = answer.policyReasons
    expect(reasons[0]).toMatch(/API key/)
    expect(reasons.join(" ")).toMatch(/would auto-apply: budget cut of 10\.0%/)
  })

  it("refuses a budget above 3 × the warehouse value at proposal, recording the failed row, and takes exactly 3 ×", async () => {
    const campaign = freshCampaign()
    const prior = await warehouseBudget(campaign.campaignId)
    const capReason = /^hard cap: the new daily budget .* is more than 3 × the campaign's daily budget in the warehouse/

    // One micro over: the cap is named (beside the whole-cent rule the micro also breaks).
    const microError = await validationFailed({ campaignId: campaign.campaignId, newDailyBudgetMicros: 3 * prior + 1, reason: "x" })
    expect(microError.validation_errors).toEqual(expect.arrayContaining([expect.stringMatching(capReason)]))
    expect(await p.action(microError.action_id!)).toMatchObject({ kind: "budget_change", status: "failed" })

    // One cent over: the cap is the only reason, and the failed row keeps it.
    const centError = await validationFailed({ campaignId: campaign.campaignId, newDailyBudgetMicros: 3 * prior + 10_000, reason: "x" })
    expect(centError.validation_errors).toHaveLength(1)
    expect(centError.validation_errors[0]).toMatch(capReason)
    const failed = await p.action(centError.action_id!)
    expect(failed).toMatchObject({ kind: "budget_change", status: "failed", mode: null })
    expect(failed.failure?.message).toMatch(capReason)

    // Exactly 3 × is inside the cap: queued (a raise beyond 30%), and the apply worker's own cap lets it through.
    const exactly = await proposeBudget({ campaignId: campaign.campaignId, newDailyBudgetMicros: 3 * prior, reason: "x" })
    expect(exactly).toMatchObject({ mode: "queued", status: "proposed" })
    expect(exactly.policyReasons.join(" ")).toMatch(/budget raise of \+200\.0% is beyond the 30%/)
    const actionId = exactly.actionId
    // A raise past 25 % is high risk (docs/contract.md 3.3): two approvals, by two distinct roots.
    const first = await p.api("approver", (client) => client.actions.approveAction({ path: { projectId: p.account.projectId, actionId } }))
    expect(first).toMatchObject({ actionId, status: "proposed", approvals: [{ by: { kind: "key" } }] })
    await p.api("key", (client) => client.actions.approveAction({ path: { projectId: p.account.projectId, actionId } }))
    expect((await p.settle(actionId)).status).toBe("applied")
    expect(await upstreamBudget(campaign.campaignId)).toBe(3 * prior)

    // Its revert cuts the budget back (the last test of this file expects the campaign's budget as synced).
    expect((await p.settle((await revert(actionId)).actionId)).status).toBe("applied")
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
