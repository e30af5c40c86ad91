/**
 * Changesets up to their decision (docs/contract.md 4.3): members recorded but not queued one by one, many in one
 * call with an answer per member, the frozen plan with its hash, impact and the policy's decision for the whole,
 * approval bound to the plan's hash and refused when the account moved under the plan, withdrawal, and the 24-hour
 * window counted exactly when two instances submit at once. The apply is changesetApply.test.ts's.
 *
 * Then a changeset's revert, in the same world's second account (its campaigns and 24-hour window are its own): the
 * revert plan from a three-way check per member (its prior state, what acs wrote, what is upstream now), one
 * compensating changeset applied at once and linked both ways, a member changed outside acs since left alone
 * (coverage partial) unless forced, and no second revert.
 */
import { isProposalResponse, type ProposalPreview, type ProposalResponse } from "@acs/domain/Actions"
import { DEFAULT_GUARDRAILS } from "@acs/domain/Guardrails"
import type { AddMembersRequest, Changeset, ChangesetDetail, RevertPlan } from "@acs/domain/Changesets"
import type { EventType } from "@acs/domain/Events"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Caller, type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import { withApi } from "./support/apiClient.ts"
import { BOOTSTRAP_KEY } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

let p: Pipeline
let campaigns: ReadonlyArray<UpstreamCampaign>
let next = 0

/** A campaign no other test in this file changes upstream (the tests whose members apply, or race another change). */
const freshCampaign = () => {
  const campaign = campaigns[next++]
  if (campaign === undefined) throw new Error("the demo account has too few campaigns for this file")
  return campaign
}

/** A campaign for members whose changeset is not approved in their test: any of them, as the warehouse has it. */
const someCampaign = (i: number) => campaigns[campaigns.length - 1 - (i % campaigns.length)]!

const path = () => ({ projectId: p.account.projectId })

const open = (caller: Caller, title: string, onFailure?: "stop" | "continue" | "rollback") =>
  p.api(caller, (client) => client.changesets.openChangeset({ path: path(), payload: onFailure === undefined ? { title } : { title, onFailure } }))

/** A proposal's answer, not its preview (no `?preview=true` was sent). */
const recorded = (answer: ProposalResponse | ProposalPreview): ProposalResponse => {
  if (!isProposalResponse(answer)) throw new Error("a preview answered a proposal")
  return answer
}

const budgetMember = (caller: Caller, changesetId: string, campaign: UpstreamCampaign, factor: number) =>
  p.api(caller, (client) =>
    client.proposals.proposeBudgetChange({
      path: path(),
      payload: {
        campaignId: campaign.campaignId,
        newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * factor),
        reason: "changeset test",
        changesetId
      },
      urlParams: {},
      headers: {}
    })).then(recorded)

const changeset = (caller: Caller, changesetId: string) =>
  p.api(caller, (client) => client.changesets.getChangeset({ path: { ...path(), changesetId } }))

const submit = (caller: Caller, changesetId: string, preview = false) =>
  p.api(caller, (client) => client.changesets.submitChangeset({ path: { ...path(), changesetId }, urlParams: preview ? { preview } : {} }))

const approve = (caller: Caller, changesetId: string, planHash: string) =>
  p.api(caller, (client) => Effect.either(client.changesets.approveChangeset({ path: { ...path(), changesetId }, payload: { planHash } })))

const eventsOf = (type: EventType, changesetId: string) =>
  p.api("key", (client) => client.events.listEvents({ urlParams: { type, limit: 100 } })).then((page) =>
    page.events.filter((event) => JSON.stringify(event.data).includes(changesetId))
  )

/** Negative keywords on a campaign: in the auto-apply set, so a person's members may auto-apply. */
const negatives = (campaignId: string, tag: string, n: number): AddMembersRequest => ({
  proposals: Array.from({ length: n }, (_, i) => ({
    kind: "add_negative_keywords" as const,
    body: { campaignId, keywords: [{ text: `${tag} negative ${i}`, matchType: "EXACT" }], reason: "window test" }
  }))
})

/**
 * The revert tests work in the second account, on its enabled campaigns with a budget (`revertCampaigns`, each
 * taken once): the tests above use up the first account's.
 */
let revertCampaigns: Array<UpstreamCampaign>
/** The first revert test's campaigns: reverted to what they were, so later tests may change them again. */
let restored: ReadonlyArray<UpstreamCampaign> = []

const revertPath = () => ({ projectId: p.secondAccount.projectId })

/** A changeset's detail in the second account, as the key reads it. */
const detailOf = (changesetId: string): Promise<ChangesetDetail> =>
  p.api("key", (client) => client.changesets.getChangeset({ path: { ...revertPath(), changesetId } }))

const ended = (changesetId: string) =>
  waitFor(`changeset ${changesetId} to end its apply`, () => detailOf(changesetId), (got) =>
    ["applied", "partially_applied", "failed"].includes(got.changeset.status), {
    intervalMs: 100,
    show: (got) => `${got.changeset.status} ${JSON.stringify(got.changeset.members)}\n${p.server.logs().slice(-3000)}`
  })

/** A key's changeset cutting each campaign's budget by a tenth, approved by the person and applied. */
const appliedChangeset = async (targets: ReadonlyArray<UpstreamCampaign>): Promise<{ changeset: Changeset; members: Array<string> }> => {
  const opened = await p.api("key", (client) => client.changesets.openChangeset({ path: revertPath(), payload: { title: "trim budgets" } }))
  const members: Array<string> = []
  for (const campaign of targets) {
    const answer = await p.propose("budget-change", {
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.9 / 10_000) * 10_000,
      reason: "trim",
      changesetId: opened.changesetId
    }, { as: "key", projectId: p.secondAccount.projectId })
    members.push(proposalOf(answer).actionId)
  }
  const submitted = await p.api("key", (client) => client.changesets.submitChangeset({ path: { ...revertPath(), changesetId: opened.changesetId }, urlParams: {} }))
  await p.api("person", (client) =>
    client.changesets.approveChangeset({ path: { ...revertPath(), changesetId: opened.changesetId }, payload: { planHash: submitted.planHash! } }))
  const done = await ended(opened.changesetId)
  expect(done.changeset.status).toBe("applied")
  return { changeset: done.changeset, members }
}

const budgetUpstream = async (campaignId: string) =>
  (await p.run(p.upstream.campaigns(p.secondAccount.upstreamAccountId))).find((c) => c.campaignId === campaignId)?.dailyBudgetMicros

/** The revert plan (`?preview=true`): nothing written. */
const revertPlan = (changesetId: string): Promise<RevertPlan> =>
  p.api("person", (client) =>
    client.changesets.revertChangeset({ path: { ...revertPath(), changesetId }, urlParams: { preview: true }, payload: {} })).then((answer) => {
    if ("changeset" in answer) throw new Error("a revert answered its preview")
    return answer
  })

const revert = (changesetId: string, force: ReadonlyArray<string> = []) =>
  p.api("person", (client) =>
    client.changesets.revertChangeset({ path: { ...revertPath(), changesetId }, urlParams: {}, payload: force.length === 0 ? {} : { force } })).then(
    (answer) => {
      if (!("changeset" in answer)) throw new Error("a preview answered the revert")
      return answer
    }
  )

beforeAll(async () => {
  p = await startPipeline({ seed: 34, env: { CHANGE_HISTORY_POLL_SECONDS: "0" } })
  const budgeted = (c: UpstreamCampaign) => !c.deleted && c.dailyBudgetMicros !== null && c.status === "ENABLED"
  campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).filter(budgeted)
  revertCampaigns = (await p.run(p.upstream.campaigns(p.secondAccount.upstreamAccountId))).filter(budgeted)
})

afterAll(async () => {
  await p?.close()
})

describe("a changeset up to its decision", () => {
  it("records members without queueing them one by one, freezes a plan on submit and queues the whole with its reasons", async () => {
    const opened = await open("key", "trim two budgets")
    expect(opened).toMatchObject({ status: "open", title: "trim two budgets", onFailure: "stop", planHash: null, members: { total: 0 } })
    const [a, b] = [someCampaign(0), someCampaign(1)]
    const first = await budgetMember("key", opened.changesetId, a, 0.9)
    const second = await budgetMember("key", opened.changesetId, b, 1.1)
    // A member waits for its changeset: proposed, not in the approval queue, no action.proposed of its own.
    expect(first).toMatchObject({ status: "proposed", mode: "queued" })
    const queue = await p.api("person", (client) => client.actions.listApprovals({ path: path(), urlParams: {} }))
    expect(queue.approvals.map((x) => x.actionId)).not.toContain(first.actionId)
    expect((await p.action(first.actionId)).status).toBe("proposed")
    expect(await eventsOf("action.proposed", first.actionId)).toEqual([])
    const alone = await p.api("person", (client) => Effect.flip(client.actions.approveAction({ path: { ...path(), actionId: first.actionId } })))
    expect(alone).toMatchObject({ _tag: "Conflict", message: expect.stringMatching(/member of changeset .* decided with its changeset/) })

    const preview = await submit("key", opened.changesetId, true)
    expect(preview.status).toBe("open")
    expect(preview.plan?.order).toEqual([first.actionId, second.actionId])
    const delta = Math.round(a.dailyBudgetMicros! * 0.9) - a.dailyBudgetMicros! + Math.round(b.dailyBudgetMicros! * 1.1) - b.dailyBudgetMicros!
    expect(preview.impact).toMatchObject({ dailyBudgetDeltaMicros: delta, byKind: { budget_change: 2 } })
    // Each reason once, with the members it holds: the raise is also outside the auto-apply set.
    expect(preview.decision).toEqual({
      mode: "queued",
      riskTier: "review",
      policyReasons: [
        `2 members (${first.actionId}, ${second.actionId}): proposed with an API key: every key-proposed change queues for review`,
        `member (${second.actionId}): outside the auto-apply set: budget raises auto-apply only with a CPA target band set (PUT /targets); none is set`
      ]
    })
    expect((await changeset("key", opened.changesetId)).changeset.status).toBe("open")

    const submitted = await submit("key", opened.changesetId)
    expect(submitted).toMatchObject({ status: "queued", planHash: preview.planHash, decision: preview.decision, members: { total: 2, pending: 2 } })
    expect(submitted.planHash).toMatch(/^sha256:[0-9a-f]{64}$/)
    await waitFor("changeset.submitted and changeset.queued", async () =>
      [(await eventsOf("changeset.submitted", opened.changesetId)).length, (await eventsOf("changeset.queued", opened.changesetId)).length],
      ([s, q]) => s === 1 && q === 1)

    // Frozen: no more members.
    const late = await p.api("key", (client) =>
      Effect.flip(client.proposals.proposeBudgetChange({
        path: path(),
        payload: { campaignId: someCampaign(2).campaignId, newDailyBudgetMicros: 5_000_000, reason: "late", changesetId: opened.changesetId },
        urlParams: {},
        headers: {}
      })))
    expect(late).toMatchObject({ _tag: "Conflict", message: expect.stringMatching(/is queued: members are added only while it is open/) })

    const detail = await changeset("person", opened.changesetId)
    expect(detail.memberActions.map((m) => [m.actionId, m.changesetId])).toEqual([
      [first.actionId, opened.changesetId],
      [second.actionId, opened.changesetId]
    ])
  })

  it("adds many members in one call, answering each: recorded, malformed, or refused by validation with its failed row", async () => {
    const opened = await open("key", "bulk")
    const campaign = someCampaign(3)
    const answer = await p.api("key", (client) =>
      client.changesets.addChangesetMembers({
        path: { ...path(), changesetId: opened.changesetId },
        payload: {
          proposals: [
            { kind: "budget_change", body: { campaignId: campaign.campaignId, newDailyBudgetMicros: campaign.dailyBudgetMicros! - 1_000_000, reason: "ok" } },
            { kind: "budget_change", body: { campaignId: campaign.campaignId, reason: "no amount" } },
            { kind: "budget_change", body: { campaignId: campaign.campaignId, newDailyBudgetMicros: campaign.dailyBudgetMicros! * 4, reason: "too much" } },
            { kind: "campaign_status", body: { campaignId: campaign.campaignId, status: "PAUSED", reason: "after", dependsOn: ["act_elsewhere"] } }
          ]
        }
      }))
    expect(answer).toMatchObject({ changesetId: opened.changesetId, added: 1, refused: 3 })
    expect(answer.results[0]).toMatchObject({ index: 0, status: 201, kind: "budget_change", error: null })
    expect(answer.results[1]).toMatchObject({ index: 1, status: 400, actionId: null, error: { code: "invalid_request" } })
    expect(answer.results[1]!.error!.message).toMatch(/newDailyBudgetMicros/)
    expect(answer.results[2]).toMatchObject({ index: 2, status: 422, error: { code: "validation_failed" } })
    expect(answer.results[2]!.error!.validationErrors.join(" ")).toMatch(/hard cap/)
    expect(answer.results[3]).toMatchObject({
      index: 3,
      status: 422,
      actionId: null,
      error: { code: "validation_failed", validationErrors: [`dependsOn: act_elsewhere is not a member of changeset ${opened.changesetId}`] }
    })
    // A dependency outside a changeset means nothing: refused as malformed.
    const loose = await p.api("key", (client) =>
      Effect.flip(client.proposals.proposeCampaignStatus({
        path: path(),
        payload: { campaignId: campaign.campaignId, status: "PAUSED", reason: "loose", dependsOn: [answer.results[0]!.actionId!] },
        urlParams: {},
        headers: {}
      })))
    expect(loose).toMatchObject({ _tag: "InvalidRequest", message: "dependsOn names members of a changeset: send changesetId with it" })
    // The refused proposal is a failed row of the ledger, not a member.
    const failed = await p.action(answer.results[2]!.actionId!)
    expect(failed.status).toBe("failed")
    expect((await changeset("key", opened.changesetId)).changeset.members.total).toBe(1)
  })

  it("validates each keyword proposal of a members call against the warehouse on its own: unknown, automatic bids, already at the bid", async () => {
    const rows = await p.sql<{ keyword_id: string; bid_micros: string | null; bid_strategy: string }>(
      `SELECT k.keyword_id, k.bid_micros, c.bid_strategy FROM keywords k
       JOIN campaigns c ON c.project_id = k.project_id AND c.campaign_id = k.campaign_id
       WHERE k.project_id = $1 AND k.status = 'ACTIVE' ORDER BY k.keyword_id`,
      [p.account.projectId]
    )
    const manual = rows.filter((row) => row.bid_strategy === "MANUAL_CPT" && row.bid_micros !== null).slice(0, 2)
    const automatic = rows.find((row) => row.bid_strategy === "MAX_CONVERSIONS")
    expect(manual).toHaveLength(2)
    expect(automatic).toBeDefined()
    const opened = await open("key", "bids")
    const bid = (keywordId: string, newBidMicros: number) => ({ kind: "keyword_bid_change" as const, body: { keywordIds: [keywordId], newBidMicros, reason: "tune" } })
    const answer = await p.api("key", (client) =>
      client.changesets.addChangesetMembers({
        path: { ...path(), changesetId: opened.changesetId },
        payload: {
          proposals: [
            bid(manual[0]!.keyword_id, Number(manual[0]!.bid_micros) + 10_000),
            bid("999999999", 500_000),
            bid(automatic!.keyword_id, 500_000),
            bid(manual[1]!.keyword_id, Number(manual[1]!.bid_micros)),
            bid(manual[1]!.keyword_id, Number(manual[1]!.bid_micros) + 30_000)
          ]
        }
      }))
    expect(answer.results.map((r) => [r.status, r.error?.code ?? null])).toEqual([
      [201, null],
      [404, "not_found"],
      [422, "bid_strategy_conflict"],
      [409, "no_op"],
      [201, null]
    ])
    expect(answer.results[1]!.error!.message).toMatch(/no keyword 999999999/)
    const members = (await changeset("key", opened.changesetId)).memberActions
    // Each member keeps the prior bid the warehouse held, which its revert restores.
    expect(members.map((m) => m.payload)).toMatchObject([
      { keywords: [{ keywordId: manual[0]!.keyword_id, priorBidMicros: Number(manual[0]!.bid_micros) }] },
      { keywords: [{ keywordId: manual[1]!.keyword_id, priorBidMicros: Number(manual[1]!.bid_micros) }] }
    ])
  })

  it("approves only the plan reviewed, refuses a plan the account moved under, and applies a resubmitted one's approval", async () => {
    const opened = await open("key", "stale plan")
    const [a, b] = [freshCampaign(), freshCampaign()]
    const first = await budgetMember("key", opened.changesetId, a, 0.95)
    // Set in the web UI below: a tenth lower, so the member still holds against it.
    const outsideBudget = Math.round(a.dailyBudgetMicros! * 0.9 / 10_000) * 10_000
    await budgetMember("key", opened.changesetId, b, 0.95)
    const submitted = await submit("key", opened.changesetId)

    const wrongHash = await approve("person", opened.changesetId, "sha256:not-the-plan")
    expect(wrongHash).toMatchObject({ _tag: "Left", left: { _tag: "Conflict", message: expect.stringMatching(/submitted again since that plan/) } })

    // Someone changes the first member's campaign in the web UI; the change history brings it into the ledger.
    p.setBudgetOutsideAcs(a.campaignId, outsideBudget)
    await p.api("key", (client) => client.warehouse.startSync({ path: path() }))
    await waitFor("the outside change in the ledger", () =>
      p.sql<{ n: string }>("SELECT count(*) AS n FROM actions WHERE kind = 'external_change' AND payload->'entity'->>'id' = $1", [a.campaignId]),
      (rows) => Number(rows[0]!.n) > 0, { intervalMs: 250 })

    const stale = await approve("person", opened.changesetId, submitted.planHash!)
    expect(stale._tag).toBe("Left")
    if (stale._tag === "Left") {
      expect(stale.left).toMatchObject({ _tag: "Conflict", reason: "state_changed_since_proposal" })
      if (stale.left._tag === "Conflict") {
        expect(stale.left.members).toEqual([{ actionId: first.actionId, why: expect.stringMatching(/changed outside acs by web-ui-user@example.com/) }])
      }
    }
    expect((await changeset("key", opened.changesetId)).changeset.status).toBe("queued")

    // Resubmitting reads the prior state again: a new hash, then the approval holds.
    const resubmitted = await submit("key", opened.changesetId)
    expect(resubmitted.planHash).not.toBe(submitted.planHash)
    const refreshed = await p.action(first.actionId)
    expect(refreshed.payload["priorDailyBudgetMicros"]).toBe(outsideBudget)
    const approved = await approve("person", opened.changesetId, resubmitted.planHash!)
    expect(approved._tag).toBe("Right")
    if (approved._tag === "Right") expect(approved.right).toMatchObject({ decidedBy: { kind: "person" }, members: { total: 2 } })
    expect(["approved", "applying", "applied"]).toContain((await changeset("key", opened.changesetId)).changeset.status)
    await waitFor("changeset.approved", () => eventsOf("changeset.approved", opened.changesetId), (events) => events.length === 1)
  })

  it("refuses a plan another acs action changed since, naming that action", async () => {
    const opened = await open("key", "raced")
    const campaign = freshCampaign()
    const member = await budgetMember("key", opened.changesetId, campaign, 0.9)
    const submitted = await submit("key", opened.changesetId)
    // The person's own cut auto-applies on the same campaign.
    const own = await p.api("person", (client) =>
      client.proposals.proposeBudgetChange({
        path: path(),
        payload: { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.8), reason: "mine" },
        urlParams: {},
        headers: {}
      })).then(recorded)
    expect((await p.settle(own.actionId)).status).toBe("applied")
    const stale = await approve("person", opened.changesetId, submitted.planHash!)
    expect(stale).toMatchObject({
      _tag: "Left",
      left: {
        reason: "state_changed_since_proposal",
        members: [{ actionId: member.actionId, why: expect.stringContaining(`another acs action, ${own.actionId} (budget_change)`) }]
      }
    })
  })

  it("lets the opener withdraw it, and refuses a person approving their own changeset", async () => {
    const mine = await open("person", "my own")
    await budgetMember("person", mine.changesetId, someCampaign(4), 1.5)
    const submitted = await submit("person", mine.changesetId)
    expect(submitted.status).toBe("queued")
    const own = await approve("person", mine.changesetId, submitted.planHash!)
    expect(own).toMatchObject({ _tag: "Left", left: { _tag: "ForbiddenScope", required_grant: "second_approver" } })

    const withdrawn = await p.api("person", (client) =>
      client.changesets.rejectChangeset({ path: { ...path(), changesetId: mine.changesetId }, payload: { reason: "changed my mind" } }))
    expect(withdrawn).toMatchObject({ status: "rejected", decisionReason: "changed my mind", members: { total: 1, pending: 0 } })
    const detail = await changeset("person", mine.changesetId)
    expect(detail.memberActions.map((m) => m.status)).toEqual(["rejected"])
    await waitFor("changeset.rejected", () => eventsOf("changeset.rejected", mine.changesetId), (events) => events.length === 1)
  })

  it("expires a queued changeset past the org's approvalTtlHours with its members; approving it then is 409", async () => {
    const opened = await open("key", "too late")
    await budgetMember("key", opened.changesetId, someCampaign(6), 0.9)
    const submitted = await submit("key", opened.changesetId)
    // Submitted 73 hours ago: past the default 72-hour TTL.
    await p.sql("UPDATE changesets SET submitted_at = now() - interval '73 hours' WHERE changeset_id = $1", [opened.changesetId])
    const late = await approve("person", opened.changesetId, submitted.planHash!)
    expect(late).toMatchObject({ _tag: "Left", left: { _tag: "Conflict", message: expect.stringMatching(/is expired: only a queued changeset/) } })
    const detail = await changeset("key", opened.changesetId)
    expect(detail.changeset).toMatchObject({ status: "expired", decisionReason: expect.stringMatching(/within 72 hours/) })
    expect(detail.memberActions.map((m) => m.status)).toEqual(["expired"])
    await waitFor("changeset.expired", () => eventsOf("changeset.expired", opened.changesetId), (events) => events.length === 1)
  })

  it("counts every member in the 24-hour window exactly: of two changesets submitted at once on two instances, one fits", async () => {
    const twin = await p.startTwin({ WORKER_CONCURRENCY: "0" })
    const campaign = someCampaign(5)
    const usedNow = async () => (await p.api("key", (client) => client.actions.getPolicy({ path: path() }))).autoApplies.usedLast24h
    // The person's cut above auto-applied: what is left must still hold one changeset of 12, never two.
    const before = await usedNow()
    expect(before + 12).toBeLessThanOrEqual(20)
    const both = await Promise.all(["left", "right"].map(async (tag) => {
      const opened = await open("person", `window ${tag}`)
      const added = await p.api("person", (client) =>
        client.changesets.addChangesetMembers({ path: { ...path(), changesetId: opened.changesetId }, payload: negatives(campaign.campaignId, tag, 12) }))
      expect(added.added).toBe(12)
      return opened.changesetId
    }))
    const decided = await Promise.all([
      submit("person", both[0]!),
      // The other instance, by the bootstrap key: the members' own decisions (a person's) decide, not the submitter.
      withApi(twin.baseUrl, BOOTSTRAP_KEY, (client) =>
        client.changesets.submitChangeset({ path: { ...path(), changesetId: both[1]! }, urlParams: {} }))
    ])
    const modes = decided.map((c) => c.decision?.mode).sort()
    expect(modes).toEqual(["auto_applied", "queued"])
    const held = decided.find((c) => c.decision?.mode === "queued")!
    expect(held.decision?.policyReasons).toEqual([
      `24-hour window: the changeset's 12 members would need 12 auto-applies; the account has ${20 - before - 12} left ` +
      `(${before + 12} of 20 used)`
    ])
    expect(await usedNow()).toBe(before + 12)
    await twin.stop()
  })
})

describe("a changeset and the guardrails", () => {
  it("needs two people when its members raise one campaign past the high-risk line together: the first approval keeps it queued", async () => {
    const opened = await open("key", "two raises of one campaign")
    const campaign = freshCampaign()
    // Each raise is 15 %, under the 25 % line; together they raise the campaign 30 %.
    await budgetMember("key", opened.changesetId, campaign, 1.15)
    await budgetMember("key", opened.changesetId, campaign, 1.15)
    const submitted = await submit("key", opened.changesetId)
    expect(submitted.decision).toMatchObject({ mode: "queued", riskTier: "high" })
    expect(submitted.decision?.policyReasons).toContainEqual(
      `two people: the changeset's members raise campaign ${campaign.campaignId}'s budget by 30.0% together, past the 25% high-risk line`
    )

    const first = await approve("approver", opened.changesetId, submitted.planHash!)
    expect(first._tag).toBe("Right")
    if (first._tag === "Right") {
      expect(first.right).toMatchObject({ status: "queued", approvals: [{ by: { kind: "key", id: "key_second_approver" } }] })
    }
    const again = await approve("approver", opened.changesetId, submitted.planHash!)
    expect(again).toMatchObject({ _tag: "Left", left: { _tag: "ForbiddenScope", required_grant: "second_approver", message: expect.stringMatching(/^two people: /) } })
    expect((await changeset("key", opened.changesetId)).changeset.status).toBe("queued")

    const second = await approve("person", opened.changesetId, submitted.planHash!)
    expect(second._tag).toBe("Right")
    if (second._tag === "Right") {
      expect(second.right.approvals.map((a) => a.by.kind)).toEqual(["key", "person"])
      expect(second.right.decidedBy).toMatchObject({ kind: "person" })
    }
    await waitFor("changeset.approved", () => eventsOf("changeset.approved", opened.changesetId), (events) => events.length === 1)
  })

  it("says at submit when its raises together do not fit the account's spend envelope", async () => {
    const rails = async (envelope: { maxDailyBudgetIncreaseMicros24h: number | null; maxTotalDailyBudgetMicros: null }) => {
      const answer = await p.as("person", "PUT", `/accounts/${p.account.projectId}/guardrails`, { ...DEFAULT_GUARDRAILS, envelope })
      expect(answer.status, answer.text).toBe(200)
    }
    await rails({ maxDailyBudgetIncreaseMicros24h: 1_000_000, maxTotalDailyBudgetMicros: null })
    try {
      const opened = await open("key", "raises past the envelope")
      await budgetMember("key", opened.changesetId, someCampaign(1), 1.05)
      await budgetMember("key", opened.changesetId, someCampaign(2), 1.05)
      const submitted = await submit("key", opened.changesetId)
      expect(submitted.decision?.mode).toBe("queued")
      expect(submitted.decision?.policyReasons.at(-1)).toMatch(
        /^spend envelope: this raise of [\d.]+ USD would bring the net increase of daily budgets in 24 hours to [\d.]+ USD, past the envelope of 1(\.00)? USD/
      )
      const rejected = await p.api("key", (client) => client.changesets.rejectChangeset({ path: { ...path(), changesetId: opened.changesetId }, payload: {} }))
      expect(rejected.status).toBe("rejected")
    } finally {
      await rails({ maxDailyBudgetIncreaseMicros24h: null, maxTotalDailyBudgetMicros: null })
    }
  })
})

describe("reverting a changeset", () => {
  it("undoes every member at once as one compensating changeset, linked both ways, after a plan that says so", async () => {
    const targets = revertCampaigns.splice(0, 2)
    restored = targets
    const { changeset, members } = await appliedChangeset(targets)
    const plan = await revertPlan(changeset.changesetId)
    expect(plan.coverage).toBe("full")
    // Children first: the revert plan is the apply order reversed.
    expect(plan.members.map((m) => [m.actionId, m.verdict, m.compensation?.kind])).toEqual([
      [members[1], "revertible", "budget_change"],
      [members[0], "revertible", "budget_change"]
    ])

    const { changeset: compensating } = await revert(changeset.changesetId)
    expect(compensating).toMatchObject({ revertOf: changeset.changesetId, members: { total: 2 } })
    expect((await ended(compensating.changesetId)).changeset.status).toBe("applied")
    const original = await detailOf(changeset.changesetId)
    expect(original.changeset).toMatchObject({ status: "reverted", revertedBy: compensating.changesetId })
    expect(original.memberActions.map((m) => m.status)).toEqual(["reverted", "reverted"])
    for (const campaign of targets) expect(await budgetUpstream(campaign.campaignId)).toBe(campaign.dailyBudgetMicros)
    await waitFor("changeset.reverted", () =>
      p.api("key", (client) => client.events.listEvents({ urlParams: { type: "changeset.reverted", limit: 50 } })), (page) =>
      page.events.some((event) => JSON.stringify(event.data).includes(changeset.changesetId)))

    const again = await p.api("person", (client) =>
      Effect.flip(client.changesets.revertChangeset({ path: { ...revertPath(), changesetId: changeset.changesetId }, urlParams: {}, payload: {} })))
    expect(again).toMatchObject({ _tag: "NotRevertible", message: expect.stringMatching(/already reverted/) })
  })

  it("leaves a member changed outside acs since alone (coverage partial) unless it is forced", async () => {
    // The account has three campaigns to spare: the second is one the first test put back as it was.
    const targets = [...revertCampaigns.splice(0, 1), restored[1]!]
    expect(targets).toHaveLength(2)
    const { changeset, members } = await appliedChangeset(targets)
    // Someone sets the second campaign's budget in the web UI after acs wrote it.
    p.setBudgetOutsideAcs(targets[1]!.campaignId, 61_000_000, p.secondAccount)

    const plan = await revertPlan(changeset.changesetId)
    expect(plan.coverage).toBe("partial")
    const byId = new Map(plan.members.map((m) => [m.actionId, m]))
    expect(byId.get(members[0]!)?.verdict).toBe("revertible")
    expect(byId.get(members[1]!)).toMatchObject({ verdict: "conflicted", why: expect.stringMatching(/changed upstream since acs wrote it/) })

    const { changeset: compensating } = await revert(changeset.changesetId)
    expect(compensating.members.total).toBe(1)
    await ended(compensating.changesetId)
    expect(await budgetUpstream(targets[0]!.campaignId)).toBe(targets[0]!.dailyBudgetMicros)
    // The change made outside acs stays.
    expect(await budgetUpstream(targets[1]!.campaignId)).toBe(61_000_000)
    const original = await detailOf(changeset.changesetId)
    expect(original.changeset.status).toBe("reverted")
    expect(Object.fromEntries(original.memberActions.map((m) => [m.actionId, m.status]))).toEqual({
      [members[0]!]: "reverted",
      [members[1]!]: "applied"
    })
  })

  it("checks the members of one ad group with one upstream read of it, and records a compensation for each", async () => {
    // Three keywords in each of two ad groups, their bids raised in one changeset by a `members` call.
    const rows = await p.sql<{ keyword_id: string; ad_group_id: string; campaign_id: string; bid_micros: string }>(
      `SELECT k.keyword_id, k.ad_group_id, k.campaign_id, k.bid_micros FROM keywords k
       JOIN campaigns c ON c.project_id = k.project_id AND c.campaign_id = k.campaign_id
       WHERE k.project_id = $1 AND k.bid_micros IS NOT NULL AND k.status = 'ACTIVE' AND c.bid_strategy <> 'MAX_CONVERSIONS'
       ORDER BY k.ad_group_id, k.keyword_id`,
      [p.secondAccount.projectId]
    )
    const adGroups = [...new Set(rows.map((row) => row.ad_group_id))].slice(0, 2)
    const keywords = adGroups.flatMap((adGroupId) => rows.filter((row) => row.ad_group_id === adGroupId).slice(0, 3))
    expect(keywords).toHaveLength(6)
    const opened = await p.api("key", (client) => client.changesets.openChangeset({ path: revertPath(), payload: { title: "raise bids" } }))
    const added = await p.api("key", (client) =>
      client.changesets.addChangesetMembers({
        path: { ...revertPath(), changesetId: opened.changesetId },
        payload: {
          proposals: keywords.map((k) => ({
            kind: "keyword_bid_change" as const,
            body: { keywordIds: [k.keyword_id], newBidMicros: Number(k.bid_micros) + 20_000, reason: "raise" }
          }))
        }
      }))
    expect(added.added).toBe(6)
    const submitted = await p.api("key", (client) => client.changesets.submitChangeset({ path: { ...revertPath(), changesetId: opened.changesetId }, urlParams: {} }))
    await p.api("person", (client) =>
      client.changesets.approveChangeset({ path: { ...revertPath(), changesetId: opened.changesetId }, payload: { planHash: submitted.planHash! } }))
    expect((await ended(opened.changesetId)).changeset.status).toBe("applied")

    const since = p.simulator.control.listCalls().at(-1)?.seq ?? 0
    const plan = await revertPlan(opened.changesetId)
    expect(plan.coverage).toBe("full")
    expect(plan.members.map((m) => m.verdict)).toEqual(Array(6).fill("revertible"))
    expect(p.simulator.control.listCalls({ path: /^\/v1\/keywords\/query$/, since }), "one read per ad group").toHaveLength(2)

    const { changeset: compensating } = await revert(opened.changesetId)
    expect(compensating.members.total).toBe(6)
    expect((await ended(compensating.changesetId)).changeset.status).toBe("applied")
    const undone = await detailOf(compensating.changesetId)
    const original = await detailOf(opened.changesetId)
    expect(original.memberActions.map((m) => m.status)).toEqual(Array(6).fill("reverted"))
    // Each original names its own compensation, and each compensation its original.
    expect(new Map(original.memberActions.map((m) => [m.actionId, m.revertedBy]))).toEqual(
      new Map(undone.memberActions.map((m) => [m.revertOf, m.actionId]))
    )
    for (const k of keywords) {
      const upstream = await p.run(p.upstream.keywords(p.secondAccount.upstreamAccountId, k.campaign_id, k.ad_group_id))
      expect(upstream.find((u) => u.keywordId === k.keyword_id)?.bidMicros).toBe(Number(k.bid_micros))
    }
  })

  it("writes over what moved a conflicted member when the person forces it", async () => {
    const targets = restored.slice(0, 1)
    expect(targets).toHaveLength(1)
    const { changeset, members } = await appliedChangeset(targets)
    p.setBudgetOutsideAcs(targets[0]!.campaignId, 62_000_000, p.secondAccount)
    expect((await revertPlan(changeset.changesetId)).coverage).toBe("none")
    const refused = await p.api("person", (client) =>
      Effect.flip(client.changesets.revertChangeset({ path: { ...revertPath(), changesetId: changeset.changesetId }, urlParams: {}, payload: {} })))
    expect(refused).toMatchObject({ _tag: "NotRevertible", message: expect.stringMatching(/coverage none/) })

    const { changeset: compensating } = await revert(changeset.changesetId, [members[0]!])
    expect((await ended(compensating.changesetId)).changeset.status).toBe("applied")
    expect(await budgetUpstream(targets[0]!.campaignId)).toBe(targets[0]!.dailyBudgetMicros)
  })
})
