/**
 * A changeset's revert (docs/contract.md 4.3): the revert plan from a three-way check per member (its prior state,
 * what acs wrote, what is upstream now), one compensating changeset applied at once and linked both ways, a member
 * changed outside acs since left alone (coverage partial) unless forced, and no second revert.
 */
import type { Changeset, ChangesetDetail, RevertPlan } from "@acs/domain/Changesets"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import { waitFor } from "./support/wait.ts"

let p: Pipeline
let campaigns: Array<UpstreamCampaign>
/** The first test's campaigns: reverted to what they were, so a later test may change them again. */
let restored: ReadonlyArray<UpstreamCampaign> = []

const path = () => ({ projectId: p.account.projectId })

const detail = (changesetId: string): Promise<ChangesetDetail> =>
  p.api("key", (client) => client.changesets.getChangeset({ path: { ...path(), changesetId } }))

const ended = (changesetId: string) =>
  waitFor(`changeset ${changesetId} to end its apply`, () => detail(changesetId), (got) =>
    ["applied", "partially_applied", "failed"].includes(got.changeset.status), {
    intervalMs: 100,
    show: (got) => `${got.changeset.status} ${JSON.stringify(got.changeset.members)}\n${p.server.logs().slice(-3000)}`
  })

/** A key's changeset cutting each campaign's budget by a tenth, approved by the person and applied. */
const appliedChangeset = async (targets: ReadonlyArray<UpstreamCampaign>): Promise<{ changeset: Changeset; members: Array<string> }> => {
  const opened = await p.api("key", (client) => client.changesets.openChangeset({ path: path(), payload: { title: "trim budgets" } }))
  const members: Array<string> = []
  for (const campaign of targets) {
    const answer = await p.propose("budget-change", {
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.9 / 10_000) * 10_000,
      reason: "trim",
      changesetId: opened.changesetId
    }, { as: "key" })
    members.push(proposalOf(answer).actionId)
  }
  const submitted = await p.api("key", (client) => client.changesets.submitChangeset({ path: { ...path(), changesetId: opened.changesetId }, urlParams: {} }))
  await p.api("person", (client) =>
    client.changesets.approveChangeset({ path: { ...path(), changesetId: opened.changesetId }, payload: { planHash: submitted.planHash! } }))
  const done = await ended(opened.changesetId)
  expect(done.changeset.status).toBe("applied")
  return { changeset: done.changeset, members }
}

const budgetUpstream = async (campaignId: string) =>
  (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).find((c) => c.campaignId === campaignId)?.dailyBudgetMicros

/** The revert plan (`?preview=true`): nothing written. */
const revertPlan = (changesetId: string): Promise<RevertPlan> =>
  p.api("person", (client) =>
    client.changesets.revertChangeset({ path: { ...path(), changesetId }, urlParams: { preview: true }, payload: {} })).then((answer) => {
    if ("changeset" in answer) throw new Error("a revert answered its preview")
    return answer
  })

const revert = (changesetId: string, force: ReadonlyArray<string> = []) =>
  p.api("person", (client) =>
    client.changesets.revertChangeset({ path: { ...path(), changesetId }, urlParams: {}, payload: force.length === 0 ? {} : { force } })).then(
    (answer) => {
      if (!("changeset" in answer)) throw new Error("a preview answered the revert")
      return answer
    }
  )

beforeAll(async () => {
  p = await startPipeline({ seed: 341, env: { CHANGE_HISTORY_POLL_SECONDS: "0" } })
  campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId)))
    .filter((c) => !c.deleted && c.dailyBudgetMicros !== null && c.status === "ENABLED")
})

afterAll(async () => {
  await p?.close()
})

describe("reverting a changeset", () => {
  it("undoes every member at once as one compensating changeset, linked both ways, after a plan that says so", async () => {
    const targets = campaigns.splice(0, 2)
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
    const original = await detail(changeset.changesetId)
    expect(original.changeset).toMatchObject({ status: "reverted", revertedBy: compensating.changesetId })
    expect(original.memberActions.map((m) => m.status)).toEqual(["reverted", "reverted"])
    for (const campaign of targets) expect(await budgetUpstream(campaign.campaignId)).toBe(campaign.dailyBudgetMicros)
    await waitFor("changeset.reverted", () =>
      p.api("key", (client) => client.events.listEvents({ urlParams: { type: "changeset.reverted", limit: 50 } })), (page) =>
      page.events.some((event) => JSON.stringify(event.data).includes(changeset.changesetId)))

    const again = await p.api("person", (client) =>
      Effect.flip(client.changesets.revertChangeset({ path: { ...path(), changesetId: changeset.changesetId }, urlParams: {}, payload: {} })))
    expect(again).toMatchObject({ _tag: "NotRevertible", message: expect.stringMatching(/already reverted/) })
  })

  it("leaves a member changed outside acs since alone (coverage partial) unless it is forced", async () => {
    const targets = campaigns.splice(0, 2)
    const { changeset, members } = await appliedChangeset(targets)
    // Someone sets the second campaign's budget in the web UI after acs wrote it.
    p.setBudgetOutsideAcs(targets[1]!.campaignId, 61_000_000)

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
    const original = await detail(changeset.changesetId)
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
      [p.account.projectId]
    )
    const adGroups = [...new Set(rows.map((row) => row.ad_group_id))].slice(0, 2)
    const keywords = adGroups.flatMap((adGroupId) => rows.filter((row) => row.ad_group_id === adGroupId).slice(0, 3))
    expect(keywords).toHaveLength(6)
    const opened = await p.api("key", (client) => client.changesets.openChangeset({ path: path(), payload: { title: "raise bids" } }))
    const added = await p.api("key", (client) =>
      client.changesets.addChangesetMembers({
        path: { ...path(), changesetId: opened.changesetId },
        payload: {
          proposals: keywords.map((k) => ({
            kind: "keyword_bid_change" as const,
            body: { keywordIds: [k.keyword_id], newBidMicros: Number(k.bid_micros) + 20_000, reason: "raise" }
          }))
        }
      }))
    expect(added.added).toBe(6)
    const submitted = await p.api("key", (client) => client.changesets.submitChangeset({ path: { ...path(), changesetId: opened.changesetId }, urlParams: {} }))
    await p.api("person", (client) =>
      client.changesets.approveChangeset({ path: { ...path(), changesetId: opened.changesetId }, payload: { planHash: submitted.planHash! } }))
    expect((await ended(opened.changesetId)).changeset.status).toBe("applied")

    const since = p.simulator.control.listCalls().at(-1)?.seq ?? 0
    const plan = await revertPlan(opened.changesetId)
    expect(plan.coverage).toBe("full")
    expect(plan.members.map((m) => m.verdict)).toEqual(Array(6).fill("revertible"))
    expect(p.simulator.control.listCalls({ path: /^\/v1\/keywords\/query$/, since }), "one read per ad group").toHaveLength(2)

    const { changeset: compensating } = await revert(opened.changesetId)
    expect(compensating.members.total).toBe(6)
    expect((await ended(compensating.changesetId)).changeset.status).toBe("applied")
    const undone = await detail(compensating.changesetId)
    const original = await detail(opened.changesetId)
    expect(original.memberActions.map((m) => m.status)).toEqual(Array(6).fill("reverted"))
    // Each original names its own compensation, and each compensation its original.
    expect(new Map(original.memberActions.map((m) => [m.actionId, m.revertedBy]))).toEqual(
      new Map(undone.memberActions.map((m) => [m.revertOf, m.actionId]))
    )
    for (const k of keywords) {
      const upstream = await p.run(p.upstream.keywords(p.account.upstreamAccountId, k.campaign_id, k.ad_group_id))
      expect(upstream.find((u) => u.keywordId === k.keyword_id)?.bidMicros).toBe(Number(k.bid_micros))
    }
  })

  it("writes over what moved a conflicted member when the person forces it", async () => {
    const targets = restored.slice(0, 1)
    expect(targets).toHaveLength(1)
    const { changeset, members } = await appliedChangeset(targets)
    p.setBudgetOutsideAcs(targets[0]!.campaignId, 62_000_000)
    expect((await revertPlan(changeset.changesetId)).coverage).toBe("none")
    const refused = await p.api("person", (client) =>
      Effect.flip(client.changesets.revertChangeset({ path: { ...path(), changesetId: changeset.changesetId }, urlParams: {}, payload: {} })))
    expect(refused).toMatchObject({ _tag: "NotRevertible", message: expect.stringMatching(/coverage none/) })

    const { changeset: compensating } = await revert(changeset.changesetId, [members[0]!])
    expect((await ended(compensating.changesetId)).changeset.status).toBe("applied")
    expect(await budgetUpstream(targets[0]!.campaignId)).toBe(targets[0]!.dailyBudgetMicros)
  })
})
