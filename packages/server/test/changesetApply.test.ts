/**
 * The apply of an approved changeset (docs/contract.md 4.3): a key opens a changeset, proposes keyword bid
 * changes into it and submits it (a key's changeset queues), a person approves it by its plan hash, and a worker
 * instance applies the members in plan order under the changeset's one job, the members on one ad group in one
 * bulk update. Upstream faults from the simulator
 * exercise each `onFailure` mode, a dependency's failure skips its dependants, and a worker killed mid-changeset
 * leaves a run that another worker resumes with every member applied once. The proposing instance runs no
 * worker: each test's apply is the worker instance's.
 */
import type { Changeset, ChangesetDetail, OnFailure } from "@acs/domain/Changesets"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline, tolerateUpstreamFaults } from "./support/pipeline.ts"
import type { RunningServer } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

let p: Pipeline
let projectId: string
let worker: RunningServer | undefined
let pool: Array<Keyword>

const WORKER_ENV = { WORKER_CONCURRENCY: "1", WORKER_LEASE_MS: "1500", WORKER_POLL_MS: "100" }
/** The connection speaks the platform's v1 API: a keyword's bid is written by its bulk update. */
const KEYWORD_WRITES = "^/v1/keywords/bulk-update$"

interface Keyword {
  readonly keywordId: string
  readonly adGroupId: string
  readonly campaignId: string
  readonly bidMicros: number
}

/** Keywords of manual-bid campaigns with a bid of their own, each used by one member of this file only: the next `n`, ad group by ad group. */
const take = (n: number): Array<Keyword> => {
  if (pool.length < n) throw new Error(`the demo account has too few keywords left (${pool.length} for ${n})`)
  return pool.splice(0, n)
}

/** `n` keywords each on an ad group of its own: each member is then a bulk call of its own. */
const takeApart = (n: number): Array<Keyword> => {
  const taken: Array<Keyword> = []
  for (const keyword of [...pool]) {
    if (taken.length === n) break
    if (taken.some((k) => k.adGroupId === keyword.adGroupId)) continue
    taken.push(keyword)
    pool.splice(pool.indexOf(keyword), 1)
  }
  if (taken.length < n) throw new Error(`the demo account has too few ad groups left (${taken.length} for ${n})`)
  return taken
}

/** `perGroup` keywords on each of `groups` ad groups. */
const takeGrouped = (groups: number, perGroup: number): Array<Keyword> => {
  const byGroup = new Map<string, Array<Keyword>>()
  for (const keyword of pool) byGroup.set(keyword.adGroupId, [...(byGroup.get(keyword.adGroupId) ?? []), keyword])
  const chosen = [...byGroup.values()].filter((same) => same.length >= perGroup).slice(0, groups).map((same) => same.slice(0, perGroup))
  if (chosen.length < groups) throw new Error(`the demo account has too few ad groups with ${perGroup} keywords left`)
  const taken = chosen.flat()
  pool = pool.filter((keyword) => !taken.includes(keyword))
  return taken
}

/** The ad groups of `keywords`, each once, in order: the bulk calls their members make. */
const adGroupsOf = (keywords: ReadonlyArray<Keyword>) => [...new Set(keywords.map((k) => k.adGroupId))]

const startWorker = async () => {
  worker ??= await p.startTwin(WORKER_ENV)
}

/** Stops the worker instance; its exit code (undefined when none ran). */
const stopWorker = async (signal?: NodeJS.Signals) => {
  const code = await worker?.stop(signal)
  worker = undefined
  return code
}

const open = (onFailure: OnFailure) =>
  p.api("key", (client) => client.changesets.openChangeset({ path: { projectId }, payload: { title: `bids (${onFailure})`, onFailure } }))

/** The member raising `keyword`'s bid by a cent; its action id. */
const addMember = async (changesetId: string, keyword: Keyword, dependsOn: ReadonlyArray<string> = []) => {
  const answer = await p.propose("keyword-bid", {
    keywordIds: [keyword.keywordId],
    newBidMicros: keyword.bidMicros + 10_000,
    reason: "tune the bid",
    changesetId,
    ...(dependsOn.length === 0 ? {} : { dependsOn })
  }, { as: "key" })
  expect(answer.status, answer.text).toBe(201)
  expect(answer.body).toMatchObject({ status: "proposed" })
  return (answer.body as { actionId: string }).actionId
}

/** Submits (the key's changeset queues) and has the person approve the plan it was shown. */
const submitAndApprove = async (changesetId: string): Promise<Changeset> => {
  const submitted = await p.api("key", (client) => client.changesets.submitChangeset({ path: { projectId, changesetId }, urlParams: {} }))
  expect(submitted.status).toBe("queued")
  return p.api("person", (client) =>
    client.changesets.approveChangeset({ path: { projectId, changesetId }, payload: { planHash: submitted.planHash! } }))
}

const detail = (changesetId: string): Promise<ChangesetDetail> =>
  p.api("key", (client) => client.changesets.getChangeset({ path: { projectId, changesetId } }))

/** Waits for the changeset's apply to end; its detail then. */
const settled = (changesetId: string) =>
  waitFor(
    `changeset ${changesetId} to end its apply`,
    () => detail(changesetId),
    (got) => ["applied", "partially_applied", "failed"].includes(got.changeset.status),
    { intervalMs: 100, show: (got) => `${got.changeset.status} ${JSON.stringify(got.changeset.members)}\n${worker?.logs().slice(-3000) ?? ""}` }
  )

const statuses = (got: ChangesetDetail) => Object.fromEntries(got.memberActions.map((member) => [member.actionId, member.status]))

/** The keyword's bid upstream, as anyone else sees it. */
const upstreamBid = async (keyword: Keyword) => {
  const keywords = await p.run(p.upstream.keywords(p.account.upstreamAccountId, keyword.campaignId, keyword.adGroupId))
  return keywords.find((k) => k.keywordId === keyword.keywordId)?.bidMicros
}

let since = 0
/** Keyword bulk writes since the test began that the upstream accepted. */
const acceptedWrites = () =>
  p.simulator.control.listCalls({ method: "POST", path: new RegExp(KEYWORD_WRITES), since }).filter((call) => call.status === 200)

/** The members in the order they applied (the ledger's `applied_at`). */
const appliedOrder = async (changesetId: string) =>
  (await p.sql<{ action_id: string }>(
    "SELECT action_id FROM actions WHERE changeset_id = $1 AND applied_at IS NOT NULL ORDER BY applied_at",
    [changesetId]
  )).map((row) => row.action_id)

/**
 * The ad groups of members in the order given, each run of one ad group once: the members of one bulk call apply
 * in one statement (their order inside it is the statement's), the calls in plan order.
 */
const adGroupRuns = async (actionIds: ReadonlyArray<string>) => {
  const rows = await p.sql<{ action_id: string; ad_group_id: string }>(
    "SELECT action_id, payload->'keywords'->0->>'adGroupId' AS ad_group_id FROM actions WHERE action_id = ANY($1::text[])",
    [actionIds]
  )
  const adGroup = new Map(rows.map((row) => [row.action_id, row.ad_group_id]))
  return actionIds.map((id) => adGroup.get(id)).filter((group, i, all) => i === 0 || group !== all[i - 1])
}

const eventTypes = async (changesetId: string) =>
  (await p.sql<{ type: string }>("SELECT type FROM events WHERE type LIKE 'changeset.%' AND data->'changeset'->>'changesetId' = $1 ORDER BY seq", [
    changesetId
  ])).map((row) => row.type)

beforeAll(async () => {
  p = await startPipeline({ seed: 34, env: { WORKER_CONCURRENCY: "0", WORKER_LEASE_MS: "1500" } })
  projectId = p.account.projectId
  await tolerateUpstreamFaults(p)
  pool = (await p.sql<{ keyword_id: string; ad_group_id: string; campaign_id: string; bid_micros: string }>(
    `SELECT k.keyword_id, k.ad_group_id, k.campaign_id, k.bid_micros FROM keywords k
     JOIN campaigns c ON c.project_id = k.project_id AND c.campaign_id = k.campaign_id
     WHERE k.project_id = $1 AND k.bid_micros IS NOT NULL AND k.status = 'ACTIVE' AND c.bid_strategy <> 'MAX_CONVERSIONS'
     ORDER BY k.campaign_id, k.ad_group_id, k.keyword_id`,
    [projectId]
  )).map((row) => ({ keywordId: row.keyword_id, adGroupId: row.ad_group_id, campaignId: row.campaign_id, bidMicros: Number(row.bid_micros) }))
  await startWorker()
})

beforeEach(() => {
  since = p.simulator.control.listCalls().at(-1)?.seq ?? 0
})

afterAll(async () => {
  await stopWorker()
  await p?.close()
})

describe("the apply of an approved changeset", () => {
  it("applies every member in plan order once a person approves the plan, one bulk call per ad group, and says so", async () => {
    const { changesetId } = await open("stop")
    const keywords = takeGrouped(3, 3)
    const members: Array<string> = []
    for (const keyword of keywords) members.push(await addMember(changesetId, keyword))
    const approved = await submitAndApprove(changesetId)
    expect(approved.status).toBe("approved")

    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("applied")
    expect(done.changeset.members).toEqual({ total: 9, applied: 9, failed: 0, skipped: 0, reverted: 0, pending: 0 })
    expect(done.changeset.appliedAt).not.toBeNull()
    expect(Object.values(statuses(done))).toEqual(Array(9).fill("applied"))
    expect(await adGroupRuns(await appliedOrder(changesetId))).toEqual(await adGroupRuns(done.changeset.plan!.order))
    expect(await adGroupRuns(done.changeset.plan!.order)).toEqual(adGroupsOf(keywords))
    for (const keyword of keywords) expect(await upstreamBid(keyword)).toBe(keyword.bidMicros + 10_000)
    expect(acceptedWrites(), "one bulk update per ad group").toHaveLength(3)
    // The job ended with the changeset.
    expect(await p.sql("SELECT 1 FROM jobs WHERE changeset_id = $1", [changesetId])).toHaveLength(0)
    expect(await eventTypes(changesetId)).toEqual(["changeset.submitted", "changeset.queued", "changeset.approved", "changeset.applied"])
    // Each member speaks for itself in the ledger as a single apply does.
    const applied = await p.sql<{ n: number }>(
      "SELECT count(*)::int AS n FROM events WHERE type = 'action.applied' AND data->'action'->>'changesetId' = $1",
      [changesetId]
    )
    expect(applied[0]!.n).toBe(9)
  })

  it("new keywords and negatives on one ad group: one bulk create each, each member keeping the ids of its own rows", async () => {
    const { changesetId } = await open("stop")
    const [keyword] = take(1)
    const { adGroupId, campaignId } = keyword!
    const added: Array<{ readonly actionId: string; readonly texts: ReadonlyArray<string> }> = []
    for (const n of [1, 2, 3]) {
      const texts = [`bulk create ${n} a`, `bulk create ${n} b`]
      const answer = await p.propose("add-keywords", {
        adGroupId,
        keywords: texts.map((text) => ({ text, matchType: "EXACT", bidMicros: 1_000_000 })),
        reason: "grow the ad group",
        changesetId
      }, { as: "key" })
      expect(answer.status, answer.text).toBe(201)
      added.push({ actionId: (answer.body as { actionId: string }).actionId, texts })
    }
    for (const n of [1, 2]) {
      const answer = await p.propose("add-negative-keywords", {
        campaignId,
        adGroupId,
        keywords: [{ text: `bulk negative ${n}`, matchType: "EXACT" }],
        reason: "keep the ad group clean",
        changesetId
      }, { as: "key" })
      expect(answer.status, answer.text).toBe(201)
    }
    await submitAndApprove(changesetId)
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("applied")
    expect(done.changeset.members).toMatchObject({ total: 5, applied: 5 })
    const creates = (path: RegExp) => p.simulator.control.listCalls({ method: "POST", path, since }).filter((call) => call.status === 200)
    expect(creates(/^\/v1\/keywords\/bulk-create$/), "one bulk create for the three members' six keywords").toHaveLength(1)
    expect(creates(/^\/v1\/negative-keywords\/bulk-create$/), "one for the two members' negatives").toHaveLength(1)
    // Each member's result names the keywords its own rows made, as a single apply's would (its revert removes them).
    const upstream = await p.run(p.upstream.keywords(p.account.upstreamAccountId, campaignId, adGroupId))
    for (const member of added) {
      const action = done.memberActions.find((m) => m.actionId === member.actionId)!
      const made = Object.values(action.result ?? {}).map((id) => upstream.find((k) => k.keywordId === id)?.text)
      expect(made.sort()).toEqual([...member.texts].sort())
    }
  })

  it("gives the job back on upstream_unavailable and resumes where it was, each member written once", async () => {
    const { changesetId } = await open("stop")
    const keywords = takeApart(5)
    for (const keyword of keywords) await addMember(changesetId, keyword)
    // The third member's write answers 503 twice: the run stops there, the job waits, the next attempt goes on.
    p.simulator.control.addFault({ kind: "status", status: 503, retryAfterSeconds: 0, method: "POST", path: KEYWORD_WRITES, nth: 3, times: 2 })
    await submitAndApprove(changesetId)
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("applied")
    expect(done.changeset.members.applied).toBe(5)
    expect(acceptedWrites()).toHaveLength(5)
    expect(p.simulator.control.listCalls({ method: "POST", path: new RegExp(KEYWORD_WRITES), since }).filter((c) => c.status === 503)).toHaveLength(2)
    expect(await appliedOrder(changesetId)).toEqual(done.changeset.plan!.order)
  })
})

describe("a member's failure", () => {
  it("stop (the default): the members after it are skipped and the changeset is partially applied", async () => {
    const { changesetId } = await open("stop")
    const keywords = takeApart(5)
    for (const keyword of keywords) await addMember(changesetId, keyword)
    p.simulator.control.addFault({ kind: "status", status: 500, method: "POST", path: KEYWORD_WRITES, nth: 3 })
    await submitAndApprove(changesetId)
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("partially_applied")
    expect(done.changeset.members).toEqual({ total: 5, applied: 2, failed: 1, skipped: 2, reverted: 0, pending: 0 })
    const order = done.changeset.plan!.order
    const byId = statuses(done)
    expect(order.map((id) => byId[id])).toEqual(["applied", "applied", "failed", "skipped", "skipped"])
    const failed = done.memberActions.find((member) => member.status === "failed")!
    expect(failed.failure?.message).toMatch(/upstream/i)
    const skipped = done.memberActions.filter((member) => member.status === "skipped")
    for (const member of skipped) expect(member.decisionReason).toContain(`member ${failed.actionId} failed`)
    expect(acceptedWrites()).toHaveLength(2)
    expect(await eventTypes(changesetId)).toContain("changeset.partially_applied")
  })

  it("continue: the run goes on, and only the members that depend on the failed one are skipped", async () => {
    const { changesetId } = await open("continue")
    const [a, b, c, d] = takeApart(4)
    const first = await addMember(changesetId, a!)
    const dependant = await addMember(changesetId, b!, [first])
    const independent = await addMember(changesetId, c!)
    // Depends on a skipped member: skipped too, naming it.
    const transitive = await addMember(changesetId, d!, [dependant])
    p.simulator.control.addFault({ kind: "status", status: 500, method: "POST", path: KEYWORD_WRITES, nth: 1 })
    await submitAndApprove(changesetId)
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("partially_applied")
    expect(statuses(done)).toEqual({ [first]: "failed", [dependant]: "skipped", [independent]: "applied", [transitive]: "skipped" })
    const reasons = Object.fromEntries(done.memberActions.map((member) => [member.actionId, member.decisionReason]))
    expect(reasons[dependant]).toBe(`not applied: it depends on ${first}, which failed`)
    expect(reasons[transitive]).toBe(`not applied: it depends on ${dependant}, which was skipped`)
    expect(await upstreamBid(c!)).toBe(c!.bidMicros + 10_000)
    expect(await upstreamBid(b!)).toBe(b!.bidMicros)
  })

  it("continue with every member failing: the changeset failed", async () => {
    const { changesetId } = await open("continue")
    for (const keyword of takeApart(2)) await addMember(changesetId, keyword)
    p.simulator.control.addFault({ kind: "status", status: 500, method: "POST", path: KEYWORD_WRITES, times: 2 })
    await submitAndApprove(changesetId)
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("failed")
    expect(done.changeset.members).toMatchObject({ failed: 2, applied: 0 })
    expect(await eventTypes(changesetId)).toContain("changeset.failed")
  })

  it("rollback: stops, compensates the applied members in reverse order at once, and ends failed", async () => {
    const { changesetId } = await open("rollback")
    const keywords = takeApart(4)
    for (const keyword of keywords) await addMember(changesetId, keyword)
    p.simulator.control.addFault({ kind: "status", status: 500, method: "POST", path: KEYWORD_WRITES, nth: 3 })
    await submitAndApprove(changesetId)
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("failed")
    const order = done.changeset.plan!.order
    const byId = statuses(done)
    expect(order.map((id) => byId[id])).toEqual(["reverted", "reverted", "failed", "skipped"])
    // Every keyword is back where it was upstream.
    for (const keyword of keywords) expect(await upstreamBid(keyword)).toBe(keyword.bidMicros)
    // The compensations: applied, each naming its member, the second member's first.
    const compensations = await p.sql<{ action_id: string; revert_of: string; status: string }>(
      "SELECT action_id, revert_of, status FROM actions WHERE revert_of = ANY($1::text[]) ORDER BY applied_at",
      [order]
    )
    expect(compensations.map((row) => [row.revert_of, row.status])).toEqual([[order[1], "applied"], [order[0], "applied"]])
    const reverted = done.memberActions.filter((member) => member.status === "reverted")
    expect(done.changeset.members).toMatchObject({ applied: 0, reverted: 2, failed: 1 })
    expect(reverted.map((member) => member.revertedBy).sort()).toEqual(compensations.map((row) => row.action_id).sort())
    // Two writes applied, one failed, two compensations.
    expect(acceptedWrites()).toHaveLength(4)
    expect(await eventTypes(changesetId)).toContain("changeset.failed")
  })

  it("two members on one keyword never share a bulk call: the later one, applied after the first, finds its bid moved", async () => {
    const { changesetId } = await open("continue")
    const [first, neighbour] = takeGrouped(1, 2)
    const raise = await addMember(changesetId, first!)
    const other = await addMember(changesetId, neighbour!)
    const again = await p.propose("keyword-bid", {
      keywordIds: [first!.keywordId],
      newBidMicros: first!.bidMicros + 50_000,
      reason: "tune it again",
      changesetId
    }, { as: "key" })
    expect(again.status, again.text).toBe(201)
    const second = (again.body as { actionId: string }).actionId
    await submitAndApprove(changesetId)
    const done = await settled(changesetId)
    expect(statuses(done)).toEqual({ [raise]: "applied", [other]: "applied", [second]: "failed" })
    expect(done.memberActions.find((member) => member.actionId === second)!.failure?.message).toMatch(/^not applied: drift: /)
    expect(await upstreamBid(first!), "the first member's bid, not overwritten in the same call").toBe(first!.bidMicros + 10_000)
    expect(acceptedWrites(), "the first two in one call; the third wrote nothing").toHaveLength(1)
  })

  it("a refused row fails only its member; the call's other rows land, and a stop skips the members after the call", async () => {
    const { changesetId } = await open("stop")
    const keywords = takeGrouped(2, 3)
    const members: Array<string> = []
    for (const keyword of keywords) members.push(await addMember(changesetId, keyword))
    // The first ad group's call refuses its second row.
    p.simulator.control.addFault({ kind: "bulkRows", rows: [1], message: "bid below the minimum", method: "POST", path: KEYWORD_WRITES, nth: 1 })
    await submitAndApprove(changesetId)
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("partially_applied")
    expect(statuses(done)).toEqual({
      [members[0]!]: "applied",
      [members[1]!]: "failed",
      [members[2]!]: "applied",
      [members[3]!]: "skipped",
      [members[4]!]: "skipped",
      [members[5]!]: "skipped"
    })
    expect(done.memberActions.find((member) => member.actionId === members[1])!.failure?.message).toContain("bid below the minimum")
    expect(acceptedWrites(), "the second ad group's call never made").toHaveLength(1)
    expect(await upstreamBid(keywords[0]!)).toBe(keywords[0]!.bidMicros + 10_000)
    expect(await upstreamBid(keywords[1]!)).toBe(keywords[1]!.bidMicros)
    expect(await upstreamBid(keywords[3]!)).toBe(keywords[3]!.bidMicros)
  })
})

describe("a member whose apply would be demoted", () => {
  it("fails, naming the drift, instead of waiting for a person inside the approved changeset", async () => {
    await stopWorker()
    const { changesetId } = await open("stop")
    // Two members on one ad group: the moved one comes first, so the bulk call leaves it to the one-member apply.
    const [moved, after] = takeGrouped(1, 2)
    const first = await addMember(changesetId, moved!)
    const second = await addMember(changesetId, after!)
    await submitAndApprove(changesetId)
    // Someone changes the keyword's bid in the web UI after the approval, before the apply.
    const outside = moved!.bidMicros + 70_000
    await p.run(p.upstream.updateKeywords(p.account.upstreamAccountId, moved!.campaignId, moved!.adGroupId, [
      { keywordId: moved!.keywordId, bidMicros: outside }
    ]))
    await startWorker()
    const done = await settled(changesetId)
    expect(statuses(done)).toEqual({ [first]: "failed", [second]: "skipped" })
    expect(done.changeset.status).toBe("failed")
    const failed = done.memberActions.find((member) => member.actionId === first)!
    expect(failed.failure?.message).toMatch(/^not applied: drift: /)
    expect(await upstreamBid(moved!), "the outside change is kept").toBe(outside)
  })
})

describe("an auto-applied changeset", () => {
  it("fails its members with the policy's reasons when the kill switch was turned off after the submit", async () => {
    await stopWorker()
    const campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId)))
      .filter((c) => !c.deleted && c.dailyBudgetMicros !== null && c.status === "ENABLED")
      .slice(0, 2)
    expect(campaigns).toHaveLength(2)
    const { changesetId } = await p.api("person", (client) =>
      client.changesets.openChangeset({ path: { projectId }, payload: { title: "trim budgets" } }))
    for (const campaign of campaigns) {
      const answer = await p.propose("budget-change", {
        campaignId: campaign.campaignId,
        newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 0.9 / 10_000) * 10_000,
        reason: "trim",
        changesetId
      })
      expect(answer.status, answer.text).toBe(201)
    }
    // A person's budget cuts clear the policy: the changeset is approved by its submit, with no decision to wait for.
    const submitted = await p.api("person", (client) => client.changesets.submitChangeset({ path: { projectId, changesetId }, urlParams: {} }))
    expect(submitted.status).toBe("approved")
    expect((await p.as("key", "PUT", "/settings", { platformAutoApply: false })).status).toBe(200)
    try {
      await startWorker()
      const done = await settled(changesetId)
      expect(done.changeset.status).toBe("failed")
      const [first, second] = done.memberActions
      expect(first!.status).toBe("failed")
      expect(first!.failure?.message).toMatch(/^not applied: .*kill switch platformAutoApply was turned off/)
      expect(second!.status).toBe("skipped")
      for (const campaign of campaigns) {
        expect((await p.run(p.upstream.campaign(p.account.upstreamAccountId, campaign.campaignId))).dailyBudgetMicros).toBe(campaign.dailyBudgetMicros)
      }
    } finally {
      await p.as("key", "PUT", "/settings", { platformAutoApply: true })
    }
  })
})

describe("a worker stopped or killed mid-changeset", () => {
  it("SIGTERM: the bulk call in hand finishes, the job is handed back between calls, another worker finishes the run", async () => {
    const { changesetId } = await open("stop")
    const keywords = takeGrouped(4, 5)
    for (const keyword of keywords) await addMember(changesetId, keyword)
    // The second ad group's bulk update is held, so the stop arrives while that call is under way.
    p.simulator.control.addFault({ kind: "timeout", delayMs: 2_000, process: true, method: "POST", path: KEYWORD_WRITES, nth: 2 })
    await submitAndApprove(changesetId)
    await waitFor(
      "the held write to reach the upstream",
      () => Promise.resolve(p.simulator.control.listCalls({ method: "POST", path: new RegExp(KEYWORD_WRITES), since }).length),
      (n) => n >= 2,
      { intervalMs: 25 }
    )
    expect(await stopWorker()).toBe(0)
    const stopped = await detail(changesetId)
    expect(stopped.changeset.status).toBe("applying")
    expect(stopped.changeset.members.applied, "the call in hand finished: two ad groups' members").toBe(10)
    const [job] = await p.sql<{ locked_by: string | null }>("SELECT locked_by FROM jobs WHERE changeset_id = $1", [changesetId])
    expect(job, "handed back, not left to its lease").toEqual({ locked_by: null })

    await startWorker()
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("applied")
    expect(await adGroupRuns(await appliedOrder(changesetId))).toEqual(adGroupsOf(keywords))
    expect(acceptedWrites(), "one bulk update per ad group").toHaveLength(4)
  })

  it("SIGKILL during a rollback: another worker finishes the compensations, each written once", async () => {
    const { changesetId } = await open("rollback")
    const keywords = takeApart(4)
    for (const keyword of keywords) await addMember(changesetId, keyword)
    // The third member fails; the first compensation's write (the fourth write) lands but its answer is held.
    p.simulator.control.addFault({ kind: "status", status: 500, method: "POST", path: KEYWORD_WRITES, nth: 3 })
    p.simulator.control.addFault({ kind: "timeout", delayMs: 30_000, process: true, method: "POST", path: KEYWORD_WRITES, nth: 4 })
    await submitAndApprove(changesetId)
    await waitFor(
      "the first compensation's write to reach the upstream",
      () => Promise.resolve(p.simulator.control.listCalls({ method: "POST", path: new RegExp(KEYWORD_WRITES), since }).length),
      (n) => n >= 4,
      { intervalMs: 25 }
    )
    await stopWorker("SIGKILL")
    expect((await detail(changesetId)).changeset.status).toBe("applying")

    await startWorker()
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("failed")
    const byId = statuses(done)
    expect(done.changeset.plan!.order.map((id) => byId[id])).toEqual(["reverted", "reverted", "failed", "skipped"])
    for (const keyword of keywords) expect(await upstreamBid(keyword)).toBe(keyword.bidMicros)
    // Two members, one failure, two compensations: the held one not written again.
    expect(p.simulator.control.listCalls({ method: "POST", path: new RegExp(KEYWORD_WRITES), since })).toHaveLength(5)
    const compensations = await p.sql<{ n: number }>("SELECT count(*)::int AS n FROM actions WHERE revert_of = ANY($1::text[])", [
      done.changeset.plan!.order
    ])
    expect(compensations[0]!.n, "one compensation per applied member").toBe(2)
  })

  it("SIGKILL: another worker resumes the run after the lease, every member applied once, in plan order, no bulk call repeated", async () => {
    const { changesetId } = await open("stop")
    const keywords = take(200)
    const adGroups = adGroupsOf(keywords)
    expect(adGroups.length, "the members span several ad groups").toBeGreaterThanOrEqual(4)
    const added = await p.api("key", (client) =>
      client.changesets.addChangesetMembers({
        path: { projectId, changesetId },
        payload: {
          proposals: keywords.map((keyword) => ({
            kind: "keyword_bid_change" as const,
            body: { keywordIds: [keyword.keywordId], newBidMicros: keyword.bidMicros + 10_000, reason: "tune the bid" }
          }))
        }
      }))
    expect(added.added, JSON.stringify(added.results.filter((r) => r.status !== 201).slice(0, 3))).toBe(200)
    // The third ad group's bulk update lands upstream but its answer is held: the worker dies waiting for it, its
    // members' steps under way and unfinished.
    const beforeHeld = keywords.filter((k) => k.adGroupId === adGroups[0] || k.adGroupId === adGroups[1]).length
    p.simulator.control.addFault({ kind: "timeout", delayMs: 30_000, process: true, method: "POST", path: KEYWORD_WRITES, nth: 3 })
    await submitAndApprove(changesetId)
    await waitFor(
      "the held write to reach the upstream",
      () => Promise.resolve(p.simulator.control.listCalls({ method: "POST", path: new RegExp(KEYWORD_WRITES), since }).length),
      (n) => n >= 3,
      { intervalMs: 25 }
    )
    await stopWorker("SIGKILL")
    const killed = await detail(changesetId)
    expect(killed.changeset.status).toBe("applying")
    expect(killed.changeset.members.applied).toBe(beforeHeld)

    await startWorker()
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("applied")
    expect(done.changeset.members).toEqual({ total: 200, applied: 200, failed: 0, skipped: 0, reverted: 0, pending: 0 })
    expect(await adGroupRuns(await appliedOrder(changesetId))).toEqual(adGroups)
    // The held call counted: the resumed run read its rows before writing and found them done.
    expect(p.simulator.control.listCalls({ method: "POST", path: new RegExp(KEYWORD_WRITES), since }), "one bulk update per ad group, none repeated")
      .toHaveLength(adGroups.length)
    for (const keyword of keywords) expect(await upstreamBid(keyword)).toBe(keyword.bidMicros + 10_000)
  })
})
