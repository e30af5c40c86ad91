/**
 * The apply of an approved changeset (docs/contract.md 4.3): a key opens a changeset, proposes keyword bid
 * changes into it and submits it (a key's changeset queues), a person approves it by its plan hash, and a worker
 * instance applies the members in plan order under the changeset's one job. Upstream faults from the simulator
 * exercise each `onFailure` mode, a dependency's failure skips its dependants, and a worker killed mid-changeset
 * leaves a run that another worker resumes with every member applied once. The proposing instance runs no
 * worker: each test's apply is the worker instance's.
 */
import type { Changeset, ChangesetDetail, OnFailure } from "@acs/domain/Changesets"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
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

/** Keywords of manual-bid campaigns with a bid of their own, each used by one member of this file only. */
const take = (n: number): Array<Keyword> => {
  if (pool.length < n) throw new Error(`the demo account has too few keywords left (${pool.length} for ${n})`)
  return pool.splice(0, n)
}

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

const eventTypes = async (changesetId: string) =>
  (await p.sql<{ type: string }>("SELECT type FROM events WHERE type LIKE 'changeset.%' AND data->'changeset'->>'changesetId' = $1 ORDER BY seq", [
    changesetId
  ])).map((row) => row.type)

beforeAll(async () => {
  p = await startPipeline({ seed: 34, env: { WORKER_CONCURRENCY: "0", WORKER_LEASE_MS: "1500" } })
  projectId = p.account.projectId
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
  it("applies every member in plan order once a person approves the plan, and says so", async () => {
    const { changesetId } = await open("stop")
    const keywords = take(8)
    const members: Array<string> = []
    for (const keyword of keywords) members.push(await addMember(changesetId, keyword))
    const approved = await submitAndApprove(changesetId)
    expect(approved.status).toBe("approved")

    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("applied")
    expect(done.changeset.members).toEqual({ total: 8, applied: 8, failed: 0, skipped: 0, reverted: 0, pending: 0 })
    expect(done.changeset.appliedAt).not.toBeNull()
    expect(Object.values(statuses(done))).toEqual(Array(8).fill("applied"))
    expect(await appliedOrder(changesetId)).toEqual(done.changeset.plan!.order)
    for (const keyword of keywords) expect(await upstreamBid(keyword)).toBe(keyword.bidMicros + 10_000)
    expect(acceptedWrites(), "one upstream write per member").toHaveLength(8)
    // The job ended with the changeset.
    expect(await p.sql("SELECT 1 FROM jobs WHERE changeset_id = $1", [changesetId])).toHaveLength(0)
    expect(await eventTypes(changesetId)).toEqual(["changeset.submitted", "changeset.queued", "changeset.approved", "changeset.applied"])
    // Each member speaks for itself in the ledger as a single apply does.
    const applied = await p.sql<{ n: number }>(
      "SELECT count(*)::int AS n FROM events WHERE type = 'action.applied' AND data->'action'->>'changesetId' = $1",
      [changesetId]
    )
    expect(applied[0]!.n).toBe(8)
  })

  it("gives the job back on upstream_unavailable and resumes where it was, each member written once", async () => {
    const { changesetId } = await open("stop")
    const keywords = take(5)
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
    const keywords = take(5)
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
    const [a, b, c, d] = take(4)
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
    for (const keyword of take(2)) await addMember(changesetId, keyword)
    p.simulator.control.addFault({ kind: "status", status: 500, method: "POST", path: KEYWORD_WRITES, times: 2 })
    await submitAndApprove(changesetId)
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("failed")
    expect(done.changeset.members).toMatchObject({ failed: 2, applied: 0 })
    expect(await eventTypes(changesetId)).toContain("changeset.failed")
  })

  it("rollback: stops, compensates the applied members in reverse order at once, and ends failed", async () => {
    const { changesetId } = await open("rollback")
    const keywords = take(4)
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
})

describe("a member whose apply would be demoted", () => {
  it("fails, naming the drift, instead of waiting for a person inside the approved changeset", async () => {
    await stopWorker()
    const { changesetId } = await open("stop")
    const [moved, after] = take(2)
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
  it("SIGTERM: the member in hand finishes, the job is handed back between members, another worker finishes the run", async () => {
    const { changesetId } = await open("stop")
    for (const keyword of take(40)) await addMember(changesetId, keyword)
    // The 10th member's answer is held, so the stop arrives while that member is under way.
    p.simulator.control.addFault({ kind: "timeout", delayMs: 2_000, process: true, method: "POST", path: KEYWORD_WRITES, nth: 10 })
    await submitAndApprove(changesetId)
    await waitFor(
      "the held write to reach the upstream",
      () => Promise.resolve(p.simulator.control.listCalls({ method: "POST", path: new RegExp(KEYWORD_WRITES), since }).length),
      (n) => n >= 10,
      { intervalMs: 25 }
    )
    expect(await stopWorker()).toBe(0)
    const stopped = await detail(changesetId)
    expect(stopped.changeset.status).toBe("applying")
    expect(stopped.changeset.members.applied, "the member in hand finished").toBe(10)
    const [job] = await p.sql<{ locked_by: string | null }>("SELECT locked_by FROM jobs WHERE changeset_id = $1", [changesetId])
    expect(job, "handed back, not left to its lease").toEqual({ locked_by: null })

    await startWorker()
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("applied")
    expect(await appliedOrder(changesetId)).toEqual(done.changeset.plan!.order)
    expect(acceptedWrites()).toHaveLength(40)
  })

  it("SIGKILL during a rollback: another worker finishes the compensations, each written once", async () => {
    const { changesetId } = await open("rollback")
    const keywords = take(4)
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

  it("SIGKILL: another worker resumes the run after the lease, every member applied once, in plan order", async () => {
    const { changesetId } = await open("stop")
    const keywords = take(200)
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
    // The 60th member's write lands upstream but its answer is held: the worker dies waiting for it, its step unrecorded.
    p.simulator.control.addFault({ kind: "timeout", delayMs: 30_000, process: true, method: "POST", path: KEYWORD_WRITES, nth: 60 })
    await submitAndApprove(changesetId)
    await waitFor(
      "the 60th member's write to be under way",
      () => p.sql<{ n: number }>("SELECT count(*)::int AS n FROM actions WHERE changeset_id = $1 AND status = 'applied'", [changesetId]),
      (rows) => rows[0]!.n >= 59,
      { intervalMs: 50 }
    )
    await waitFor(
      "the held write to reach the upstream",
      () => Promise.resolve(p.simulator.control.listCalls({ method: "POST", path: new RegExp(KEYWORD_WRITES), since }).length),
      (n) => n >= 60,
      { intervalMs: 25 }
    )
    await stopWorker("SIGKILL")
    const killed = await detail(changesetId)
    expect(killed.changeset.status).toBe("applying")
    expect(killed.changeset.members.applied).toBe(59)

    await startWorker()
    const done = await settled(changesetId)
    expect(done.changeset.status).toBe("applied")
    expect(done.changeset.members).toEqual({ total: 200, applied: 200, failed: 0, skipped: 0, reverted: 0, pending: 0 })
    expect(await appliedOrder(changesetId)).toEqual(done.changeset.plan!.order)
    // The held write counted: the resumed run read the keyword before writing and found it done.
    expect(p.simulator.control.listCalls({ method: "POST", path: new RegExp(KEYWORD_WRITES), since }), "each member written once").toHaveLength(200)
    for (const keyword of [keywords[0]!, keywords[59]!, keywords[199]!]) expect(await upstreamBid(keyword)).toBe(keyword.bidMicros + 10_000)
  })
})
