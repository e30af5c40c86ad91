/**
 * Apple's recommendations (docs/contract.md 4.5) end to end: the server process syncs the simulator's demo org over
 * HTTP (v1) into a fresh PostgreSQL database and lists the recommendations with their expected effect and expiry; a
 * daily cap is applied within the spend envelope (and reverted to the prior budget), queued past the envelope and
 * held past the ceiling exactly as the same budget change is; a dismissal applies, and the queued apply of the
 * dismissed recommendation can then no longer be approved; an expired or used recommendation is a 422, an unknown one a 404;
 * one that expires between its approval and the worker fails there; a target CPA applies and reverts as a target CPA change.
 */
import { PolicyDocument, ProposalPreview } from "@acs/domain/Actions"
import { DEFAULT_GUARDRAILS, type GuardrailsSettings } from "@acs/domain/Guardrails"
import { RecommendationList, type RecommendationRow } from "@acs/domain/Recommendations"
import { SyncList } from "@acs/domain/Warehouse"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, proposalOf, startPipeline, validationFailureOf } from "./support/pipeline.ts"
import type { RunningServer } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

let p: Pipeline
let worker: RunningServer | undefined

/** The apply worker runs in a process of its own, so a test can hold an approved apply before it. */
const startWorker = async () => {
  worker ??= await p.startTwin({ WORKER_CONCURRENCY: "2", WORKER_LEASE_MS: "1500" })
}
const stopWorker = async () => {
  await worker?.stop()
  worker = undefined
}

const path = (rest: string) => `/accounts/${p.account.projectId}${rest}`

const putGuardrails = async (envelope: GuardrailsSettings["envelope"]) => {
  const answer = await p.as("person", "PUT", path("/guardrails"), {
    ...DEFAULT_GUARDRAILS,
    evidence: { minDays: 0, minInstalls: 0 },
    cooldownHours: { bid: 0, budget: 0, status: 0 },
    envelope
  })
  expect(answer.status, answer.text).toBe(200)
}

const BIG_ENVELOPE = { maxDailyBudgetIncreaseMicros24h: 1_000_000_000_000, maxTotalDailyBudgetMicros: null }

const list = async (query = "", projectId = p.account.projectId) => {
  const answer = await p.as("key", "GET", `/accounts/${projectId}/recommendations${query}`)
  expect(answer.status, answer.text).toBe(200)
  return Schema.decodeUnknownSync(RecommendationList)(answer.body)
}

const named = async (recommendationId: string) => (await list()).recommendations.find((r) => r.recommendationId === recommendationId)!

const budgetOf = async (campaignId: string) => (await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaignId))).dailyBudgetMicros!

/** Apple's daily cap recommendations still available in the account, soonest expiry first. */
let dailyCaps: Array<RecommendationRow>
let expired: RecommendationRow

/** An amount 10 or 20 % above the budget, in whole cents (the account's currency unit). */
const above = (budget: number, percent: number) => Math.round((budget * (100 + percent)) / 100 / 10_000) * 10_000

beforeAll(async () => {
  p = await startPipeline({ seed: 37, env: { WORKER_CONCURRENCY: "0", WORKER_LEASE_MS: "1500" } })
  await startWorker()
  // Any CPA is inside the band: a raise within 30 % auto-applies unless a guardrail holds it.
  const band = await p.as("person", "PUT", path("/targets"), { cpaBand: { minMicros: 0, maxMicros: 1_000_000_000_000 }, campaigns: {} })
  expect(band.status, band.text).toBe(200)
  await putGuardrails(BIG_ENVELOPE)
})

afterAll(async () => {
  await stopWorker()
  await p?.close()
})

describe("Apple's recommendations", () => {
  it("are synced and listed with the campaign's last week, Apple's expected week and the expiry", async () => {
    const listed = await list()
    expect(listed.dataFreshness.lastSyncAt).not.toBeNull()
    expect(listed.total).toBe(listed.recommendations.length)
    dailyCaps = listed.recommendations.filter((r) => r.type === "daily_cap" && r.state === "available")
    expect(dailyCaps.length, JSON.stringify(listed.recommendations)).toBeGreaterThanOrEqual(2)
    const now = Date.now()
    for (const r of dailyCaps) {
      // Apple's current budget is the warehouse's, its suggestion half as much again, and a raise spends more.
      const campaigns = await p.sql<{ daily_budget_micros: string; adam_id: string }>(
        "SELECT daily_budget_micros::text, adam_id FROM campaigns WHERE project_id = $1 AND campaign_id = $2",
        [p.account.projectId, r.campaignId]
      )
      expect(r.currentMicros).toBe(Number(campaigns[0]!.daily_budget_micros))
      expect(r.adamId).toBe(campaigns[0]!.adam_id)
      expect(r.recommendedMicros).toBe(Math.round((r.currentMicros! * 1.5) / 10_000) * 10_000)
      expect(r.lastWeek.spendMicros).toBeGreaterThan(0)
      expect(r.expected.spendMicros).toBeGreaterThan(r.lastWeek.spendMicros)
      expect(r.expected.installs).toBeGreaterThanOrEqual(r.lastWeek.installs)
      expect(Date.parse(r.expiresAt)).toBeGreaterThan(now)
    }
    const stale = listed.recommendations.find((r) => r.state === "expired")
    expect(stale, "the simulator keeps one expired recommendation listed").toBeDefined()
    expired = stale!
    expect(Date.parse(expired.expiresAt)).toBeLessThan(now)
    const narrowed = await list(`?campaignId=${dailyCaps[0]!.campaignId}`)
    expect(narrowed.recommendations.length).toBeGreaterThan(0)
    expect(narrowed.recommendations.every((r) => r.campaignId === dailyCaps[0]!.campaignId)).toBe(true)
  })

  it("refuses an expired or mistyped one with 422 naming why, an unknown one with 404, to apply and to dismiss", async () => {
    for (const kind of ["apply-recommendation", "dismiss-recommendation"]) {
      const old = await p.propose(kind, { recommendationId: expired.recommendationId, reason: "too late" })
      expect(old.status, old.text).toBe(422)
      expect(validationFailureOf(old).validation_errors.join(" ")).toMatch(new RegExp(`recommendation ${expired.recommendationId} expired at `))
      const unknown = await p.propose(kind, { recommendationId: "rec-nothing", reason: "no such" })
      expect(unknown.status, unknown.text).toBe(404)
      expect(unknown.text).toContain("no recommendation rec-nothing in this account")
    }
    const wrongOverride = await p.propose("apply-recommendation", {
      recommendationId: dailyCaps[0]!.recommendationId,
      appliedTargetCpaMicros: 1_000_000,
      reason: "a target for a budget"
    })
    expect(wrongOverride.status, wrongOverride.text).toBe(422)
    expect(validationFailureOf(wrongOverride).validation_errors.join(" ")).toContain("takes appliedDailyBudgetMicros")
  })

  it("past the envelope queues, and past the ceiling nobody can approve it, exactly as the same budget change", async () => {
    const r = dailyCaps[1]!
    const budget = await budgetOf(r.campaignId)
    const amount = above(budget, 10)
    const sameBudgetChange = async () => {
      const preview = await p.as("person", "POST", path("/actions/budget-change?preview=true"), {
        campaignId: r.campaignId,
        newDailyBudgetMicros: amount,
        reason: "the same raise"
      })
      return preview
    }
    // Past the ceiling: recorded, queued with the ceiling's reason, and nobody can approve it (422).
    await putGuardrails({ maxDailyBudgetIncreaseMicros24h: BIG_ENVELOPE.maxDailyBudgetIncreaseMicros24h, maxTotalDailyBudgetMicros: 1_000_000 })
    const overCeiling = Schema.decodeUnknownSync(ProposalPreview)((await sameBudgetChange()).body)
    const held = proposalOf(await p.propose("apply-recommendation", { recommendationId: r.recommendationId, appliedDailyBudgetMicros: amount, reason: "grow" }))
    expect(held).toMatchObject({ mode: "queued", status: "proposed" })
    expect(overCeiling.mode).toBe("queued")
    expect(held.policyReasons).toEqual(overCeiling.policyReasons)
    expect(held.policyReasons[0]).toMatch(/^budget ceiling: /)
    const refused = await p.as("approver", "POST", path(`/approvals/${held.actionId}/approve`))
    expect(refused.status, refused.text).toBe(422)
    expect(validationFailureOf(refused).validation_errors.join(" ")).toMatch(/budget ceiling: /)
    const rejected = await p.as("approver", "POST", path(`/approvals/${held.actionId}/reject`), { reason: "over the ceiling" })
    expect(rejected.status, rejected.text).toBe(200)

    await putGuardrails({ maxDailyBudgetIncreaseMicros24h: 1_000_000, maxTotalDailyBudgetMicros: null })
    const preview = Schema.decodeUnknownSync(ProposalPreview)((await sameBudgetChange()).body)
    const queued = proposalOf(await p.propose("apply-recommendation", {
      recommendationId: r.recommendationId,
      appliedDailyBudgetMicros: amount,
      reason: "grow"
    }))
    expect(queued).toMatchObject({ kind: "apply_recommendation", mode: "queued", status: "proposed" })
    expect(preview.mode).toBe("queued")
    expect(queued.policyReasons.some((reason) => reason.startsWith("spend envelope: "))).toBe(true)
    expect(queued.policyReasons).toEqual(preview.policyReasons)
    // The queued raise reserves its increase in the envelope, as a budget change does.
    const policy = Schema.decodeUnknownSync(PolicyDocument)((await p.as("key", "GET", path("/policy"))).body)
    expect(policy.envelope.reserved).toBeGreaterThanOrEqual(amount - budget)
    expect(await budgetOf(r.campaignId)).toBe(budget)

    // Dismissed meanwhile: it applies at once; the queued apply can no longer be approved.
    await putGuardrails(BIG_ENVELOPE)
    const dismissal = proposalOf(await p.propose("dismiss-recommendation", { recommendationId: r.recommendationId, reason: "not now" }))
    expect(dismissal).toMatchObject({ kind: "dismiss_recommendation", mode: "auto_applied" })
    expect((await p.settle(dismissal.actionId)).status).toBe("applied")
    expect((await named(r.recommendationId)).state).toBe("dismissed")
    const again = await p.propose("dismiss-recommendation", { recommendationId: r.recommendationId, reason: "twice" })
    expect(again.status, again.text).toBe(422)
    expect(validationFailureOf(again).validation_errors.join(" ")).toContain(`recommendation ${r.recommendationId} was already dismissed`)
    const notRevertible = await p.as("person", "POST", path(`/actions/${dismissal.actionId}/revert`))
    expect(notRevertible.status, notRevertible.text).toBe(422)

    // The approval checks the kind again against the account as it is now: nothing reaches Apple.
    const approval = await p.as("approver", "POST", path(`/approvals/${queued.actionId}/approve`))
    expect(approval.status, approval.text).toBe(422)
    expect(validationFailureOf(approval).validation_errors).toEqual([`recommendationId: recommendation ${r.recommendationId} was already dismissed`])
    expect((await p.action(queued.actionId)).status).not.toBe("applied")
    expect(await budgetOf(r.campaignId)).toBe(budget)
  })

  it("applies within the envelope with the override, as Apple's apply, records the prior budget and reverts to it", async () => {
    const r = dailyCaps[0]!
    const budget = await budgetOf(r.campaignId)
    const amount = above(budget, 20)
    const applied = proposalOf(await p.propose("apply-recommendation", {
      recommendationId: r.recommendationId,
      appliedDailyBudgetMicros: amount,
      reason: "Apple says the campaign is capped"
    }))
    expect(applied).toMatchObject({ kind: "apply_recommendation", mode: "auto_applied" })
    expect(applied.policyReasons.join(" ")).toMatch(/budget raise of \+20\.0% is within 30%/)
    const record = await p.settle(applied.actionId)
    expect(record.status, JSON.stringify(record.failure)).toBe("applied")
    expect(record.payload).toMatchObject({
      recommendationId: r.recommendationId,
      type: "daily_cap",
      newDailyBudgetMicros: amount,
      priorDailyBudgetMicros: budget,
      recommendedMicros: r.recommendedMicros
    })
    expect(await budgetOf(r.campaignId)).toBe(amount)
    expect((await named(r.recommendationId)).state).toBe("applied")
    const twice = await p.propose("apply-recommendation", { recommendationId: r.recommendationId, reason: "again" })
    expect(twice.status, twice.text).toBe(422)
    expect(validationFailureOf(twice).validation_errors.join(" ")).toContain(`recommendation ${r.recommendationId} was already applied`)

    const revert = proposalOf(await p.as("person", "POST", path(`/actions/${applied.actionId}/revert`)))
    expect(revert.kind).toBe("budget_change")
    expect((await p.settle(revert.actionId)).status).toBe("applied")
    expect(await budgetOf(r.campaignId)).toBe(budget)
    expect((await p.action(applied.actionId)).revertedBy).toBe(revert.actionId)

    // The next sync reads Apple's change history: the apply and its revert were acs's own writes, not outside ones.
    const started = await p.as("key", "POST", path("/syncs"))
    expect(started.status, started.text).toBe(202)
    await waitFor(
      "the sync after the apply",
      async () => Schema.decodeUnknownSync(SyncList)((await p.as("key", "GET", path("/syncs"))).body).syncs[0]?.status,
      (status) => status === "succeeded"
    )
    // Apple lists it applied now: the synced state, not only acs's own record. The recommendations are read last
    // after a sync, after the change history.
    await waitFor(
      "the recommendations read after the sync",
      () => p.sql<{ state: string }>("SELECT state FROM recommendations WHERE project_id = $1 AND recommendation_id = $2", [
        p.account.projectId,
        r.recommendationId
      ]),
      (rows) => rows[0]?.state === "applied"
    )
    const outside = await p.sql("SELECT action_id FROM actions WHERE project_id = $1 AND kind = 'external_change'", [p.account.projectId])
    expect(outside).toEqual([])
  })
  it("checks again at apply: one that expired after its approval fails in the worker and nothing reaches Apple", async () => {
    const projectId = p.secondAccount.projectId
    const r = (await list("", projectId)).recommendations.find((x) => x.type === "daily_cap" && x.state === "available")!
    const budget = (await p.run(p.upstream.campaign(p.secondAccount.upstreamAccountId, r.campaignId))).dailyBudgetMicros
    await stopWorker()
    // The key's proposals never auto-apply; +20 % is under the two-people line, so one approval applies it.
    const queued = proposalOf(await p.propose("apply-recommendation", {
      recommendationId: r.recommendationId,
      appliedDailyBudgetMicros: above(budget!, 20),
      reason: "grow"
    }, { projectId, as: "key" }))
    expect(queued.mode).toBe("queued")
    const approved = await p.as("approver", "POST", `/accounts/${projectId}/approvals/${queued.actionId}/approve`)
    expect(approved.status, approved.text).toBe(200)
    // Seven days pass before a worker takes it: the recommendation's expiry is behind acs's clock now.
    await p.sql("UPDATE recommendations SET expires_at = now() - interval '1 minute' WHERE project_id = $1 AND recommendation_id = $2", [
      projectId,
      r.recommendationId
    ])
    await startWorker()
    const failed = await p.settle(queued.actionId, ["failed", "applied"], projectId)
    expect(failed.status).toBe("failed")
    expect(failed.failure?.message).toMatch(new RegExp(`^local validation at apply: recommendationId: recommendation ${r.recommendationId} expired at `))
    expect((await p.run(p.upstream.campaign(p.secondAccount.upstreamAccountId, r.campaignId))).dailyBudgetMicros).toBe(budget)
    expect((await list("", projectId)).recommendations.find((x) => x.recommendationId === r.recommendationId)?.state).toBe("expired")
  })

  it("applies a target CPA as a target CPA change and reverts it to the prior target", async () => {
    const accounts = [p.account, p.secondAccount]
    const found = (await Promise.all(accounts.map(async (account) => ({
      account,
      r: (await list("", account.projectId)).recommendations.find((x) => x.type === "target_cpa" && x.state === "available")
    })))).find((x) => x.r !== undefined)
    expect(found, "a target CPA recommendation in a writable account").toBeDefined()
    const { account, r } = found! as { account: typeof p.account; r: RecommendationRow }
    const target = async () => (await p.run(p.upstream.campaign(account.upstreamAccountId, r.campaignId))).targetCpaMicros
    const prior = await target()
    expect(prior).toBe(r.currentMicros)
    const proposal = proposalOf(await p.propose("apply-recommendation", { recommendationId: r.recommendationId, reason: "Apple's target" }, {
      projectId: account.projectId
    }))
    expect(proposal.policyReasons.join(" ")).toMatch(/target CPA step of /)
    if (proposal.mode === "queued") {
      const approved = await p.as("approver", "POST", `/accounts/${account.projectId}/approvals/${proposal.actionId}/approve`)
      expect(approved.status, approved.text).toBe(200)
    }
    expect((await p.settle(proposal.actionId, ["applied", "failed"], account.projectId)).status).toBe("applied")
    expect(await target()).toBe(r.recommendedMicros)
    const revert = proposalOf(await p.as("person", "POST", `/accounts/${account.projectId}/actions/${proposal.actionId}/revert`))
    expect(revert.kind).toBe("target_cpa_change")
    expect((await p.settle(revert.actionId, ["applied", "failed"], account.projectId)).status).toBe("applied")
    expect(await target()).toBe(prior)
  })
})
