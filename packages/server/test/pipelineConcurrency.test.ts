/**
 * The pipeline under concurrency, on a real PostgreSQL with several server processes: the 24-hour auto-apply
 * cap holds across instances, one Idempotency-Key yields one action, 240 jobs over three instances are each
 * applied exactly once, accounts' jobs are taken in turn, and the ledger cursor never skips or repeats a row.
 */
import { type LedgerParams, ProposalResponse } from "@acs/domain/Actions"
import { ErrorBodies } from "@acs/domain/Errors"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { withApi } from "./support/apiClient.ts"
import { type Caller, type Pipeline, startPipeline } from "./support/pipeline.ts"
import { type Answer, BOOTSTRAP_KEY, call, errorCode, type RunningServer } from "./support/server.ts"
import { callsTo, KEYWORDS_BULK_UPDATE } from "./support/upstreamPaths.ts"
import { WAIT_MS, waitFor } from "./support/wait.ts"

let p: Pipeline
let twin: RunningServer
let cookie: string

/** The same call on one of the instances, round robin. */
const on = async (index: number, caller: Caller, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const server = instance(index)
  return call(`${server.api}${path}`, {
    method,
    body,
    ...(caller === "person" ? { headers: { ...headers, cookie } } : {
      key: caller === "key" ? BOOTSTRAP_KEY : await p.approverKey(),
      headers
    })
  })
}

/**
 * A proposal's answer (201, or 200 for a replay), decoded with the contract's schema: the typed REST client's
 * proposal endpoints are generated in a loop its types cannot follow, and these tests look at the wire too.
 */
const proposalOf = (answer: Answer) => Schema.decodeUnknownSync(ProposalResponse)(answer.body)

/** One instance, round robin, as in `on`. */
const instance = (index: number) => (index % 2 === 0 ? p.server : twin)

const chunked = async <A>(count: number, size: number, f: (index: number) => Promise<A>): Promise<Array<A>> => {
  const out: Array<A> = []
  for (let start = 0; start < count; start += size) {
    out.push(...await Promise.all(Array.from({ length: Math.min(size, count - start) }, (_, offset) => f(start + offset))))
  }
  return out
}

let campaignId: string
let budget: number

beforeAll(async () => {
  // No worker on either instance until the jobs test: proposals stay as the policy left them.
  // Fifty proposals at once wait for one account's lock, each holding a pooled connection: on a busy machine the
  // last waits long for its connection, so the pool's patience is minutes, not the default 10 s.
  p = await startPipeline({ seed: 44, env: { WORKER_CONCURRENCY: "0", DATABASE_CONNECT_TIMEOUT_MS: "120000" } })
  twin = await p.startTwin()
  const login = await call(`${p.server.api}/auth/login`, {
    method: "POST",
    body: { email: "admin@pipeline.example", password: "pipeline-password-0123456789" }
  })
  cookie = login.headers.getSetCookie().find((line) => line.startsWith("acs_session="))!.split(";")[0]!
  const campaign = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).find((c) => c.dailyBudgetMicros !== null)!
  campaignId = campaign.campaignId
  budget = campaign.dailyBudgetMicros!
})

afterAll(async () => {
  await twin?.stop()
  await p?.close()
})

/** A different one-cent-step cut per index (auto-eligible for a person). */
const cut = (index: number) => ({ campaignId, newDailyBudgetMicros: budget - 10_000 * (index + 1), reason: `cut ${index}` })

describe("the 24-hour auto-apply cap", () => {
  it("lets exactly 20 of 50 simultaneous auto-eligible person proposals on two instances auto-apply", async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, (_, index) =>
      on(index, "person", "POST", `/accounts/${p.account.projectId}/actions/budget-change`, cut(index))
    ))
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(201))
    const proposals = answers.map(proposalOf)
    expect(proposals.filter((a) => a.mode === "auto_applied")).toHaveLength(20)
    const queued = proposals.filter((a) => a.mode === "queued")
    expect(queued).toHaveLength(30)
    for (const proposal of queued) {
      expect(proposal.policyReasons[0]).toMatch(/daily cap: .* 20 auto-applies in the last 24 hours/)
    }
    const policy = await p.api("key", (client) => client.actions.getPolicy({ path: { projectId: p.account.projectId } }))
    expect(policy).toMatchObject({ autoApplies: { limitPer24h: 20, usedLast24h: 20, remaining: 0 } })
  })
})

describe("Idempotency-Key", () => {
  it("turns 20 simultaneous identical requests on two instances into one action: one 201, nineteen replays", async () => {
    const body = cut(100)
    const answers = await Promise.all(Array.from({ length: 20 }, (_, index) =>
      on(index, "key", "POST", `/accounts/${p.account.projectId}/actions/budget-change`, body, { "idempotency-key": "twenty-at-once" })
    ))
    const statuses = answers.map((a) => a.status).sort()
    expect(statuses).toEqual([...Array(19).fill(200), 201])
    const ids = new Set(answers.map((a) => proposalOf(a).actionId))
    expect(ids.size).toBe(1)
    for (const replay of answers.filter((a) => a.status === 200)) {
      expect(replay.headers.get("idempotency-replay")).toBe("true")
      expect(replay.body).toMatchObject({ replayed: true })
    }
    const rows = await p.sql("SELECT action_id FROM actions WHERE reason = $1", [body.reason])
    expect(rows).toHaveLength(1)
  })

  it("answers 409 conflict to the same key with another body, 400 to a malformed key, and forgets keys after 24 hours", async () => {
    const path = `/accounts/${p.account.projectId}/actions/budget-change`
    const first = await p.as("key", "POST", path, cut(200), { "idempotency-key": "reused" })
    expect(first.status).toBe(201)
    const other = await p.as("key", "POST", path, cut(201), { "idempotency-key": "reused" })
    expect([other.status, errorCode(other)]).toEqual([409, "conflict"])
    expect(Schema.decodeUnknownSync(ErrorBodies.Conflict)(other.body).message).toMatch(/another request/)

    const tooLong = await p.as("key", "POST", path, cut(202), { "idempotency-key": "k".repeat(256) })
    expect([tooLong.status, errorCode(tooLong)]).toEqual([400, "invalid_request"])

    await p.sql("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE idempotency_key = 'reused'")
    const after = await p.as("key", "POST", path, cut(201), { "idempotency-key": "reused" })
    expect(after.status).toBe(201)
    expect(proposalOf(after).actionId).not.toBe(proposalOf(first).actionId)
  })

  it("replays a validation failure with the same failed ledger row", async () => {
    const path = `/accounts/${p.account.projectId}/actions/budget-change`
    const body = { campaignId: "404404", newDailyBudgetMicros: 1_000_000, reason: "missing" }
    const answers: Array<Answer> = []
    for (let i = 0; i < 2; i++) answers.push(await p.as("key", "POST", path, body, { "idempotency-key": "not-found-twice" }))
    expect(answers.map((a) => [a.status, errorCode(a)])).toEqual([[404, "not_found"], [404, "not_found"]])
  })
})

describe("the ledger cursor", () => {
  it("pages newest first through rows created in the same milliseconds without skipping or repeating one", async () => {
    await Promise.all(Array.from({ length: 60 }, (_, index) =>
      on(index, "key", "POST", `/accounts/${p.account.projectId}/actions/budget-change`, cut(300 + index))
    ))
    // A burst faster than one per millisecond, as a busy account would see: 40 rows in one millisecond.
    await p.sql(
      `INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, summary, reason, payload, proposed_by,
         created_at)
       SELECT 'act_burst_' || i, org_id, project_id, 'budget_change', 'queued', 'proposed', 'review', 'burst', 'burst', '{}',
         '{"kind":"key","id":"key_burst","name":"burst"}', date_trunc('milliseconds', now()) + i * interval '1 microsecond'
       FROM accounts, generate_series(1, 40) AS i WHERE project_id = $1`,
      [p.account.projectId]
    )
    const all = await p.sql<{ action_id: string }>(
      "SELECT action_id FROM actions WHERE project_id = $1 ORDER BY created_at DESC",
      [p.account.projectId]
    )
    const seen: Array<string> = []
    let before: string | null = null
    for (let page = 0; page < 100; page++) {
      const urlParams: typeof LedgerParams.Type = before === null ? { limit: 7 } : { limit: 7, before }
      const body = await p.api("key", (client) => client.actions.listActions({ path: { projectId: p.account.projectId }, urlParams }))
      seen.push(...body.actions.map((a) => a.actionId))
      for (const action of body.actions) expect(action.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
      before = body.nextBefore
      if (before === null) break
    }
    expect(seen).toEqual(all.map((row) => row.action_id))
    const sharing = await p.sql<{ n: string }>(
      `SELECT count(*) AS n FROM (SELECT date_trunc('milliseconds', created_at) FROM actions WHERE project_id = $1
       GROUP BY 1 HAVING count(*) > 1) shared`,
      [p.account.projectId]
    )
    expect(Number(sharing[0]!.n), "some rows share a millisecond").toBeGreaterThan(0)
  })

  it("filters by status and kind and refuses a malformed cursor", async () => {
    const { actions } = await p.api("key", (client) =>
      client.actions.listActions({ path: { projectId: p.account.projectId }, urlParams: { status: "proposed", kind: "budget_change", limit: 500 } }))
    expect(actions.length).toBeGreaterThan(0)
    expect(new Set(actions.map((a) => `${a.status}/${a.kind}`))).toEqual(new Set(["proposed/budget_change"]))
    const bad = await p.as("key", "GET", `/accounts/${p.account.projectId}/actions?before=yesterday`)
    expect([bad.status, errorCode(bad)]).toEqual([400, "invalid_request"])
  })
})

describe("the apply queue", () => {
  it("applies 240 jobs over three instances, each exactly once", async () => {
    const keywords = await p.sql<{ keyword_id: string }>(
      `SELECT k.keyword_id FROM keywords k JOIN campaigns c USING (project_id, campaign_id)
       WHERE k.project_id = $1 AND k.status = 'ACTIVE' ORDER BY k.keyword_id LIMIT 240`,
      [p.account.projectId]
    )
    expect(keywords).toHaveLength(240)
    const path = `/accounts/${p.account.projectId}/actions/keyword-status`
    const proposed = await chunked(240, 24, (index) =>
      on(index, "key", "POST", path, { keywordIds: [keywords[index]!.keyword_id], status: "PAUSED", reason: "queue test" })
    )
    const actionIds = proposed.map((answer) => {
      expect(answer.status, answer.text).toBe(201)
      return proposalOf(answer).actionId
    })
    const approver = await p.approverKey()
    const approved = await chunked(240, 24, (index) =>
      withApi(instance(index).baseUrl, approver, (client) =>
        client.actions.approveAction({ path: { projectId: p.account.projectId, actionId: actionIds[index]! } }))
    )
    expect(approved.filter((a) => a.status !== "approved")).toEqual([])
    const since = p.simulator.control.listCalls().at(-1)?.seq ?? 0
    const workers = await Promise.all([0, 1, 2].map(() => p.startTwin({ WORKER_CONCURRENCY: "3" })))
    try {
      // 240 applies over three instances: minutes on a loaded machine, so a long deadline (a hang detector).
      await waitFor(
        "240 approved actions to settle",
        async () =>
          Number((await p.sql<{ n: string }>(
            "SELECT count(*) AS n FROM actions WHERE action_id = ANY($1) AND status IN ('applied', 'failed')",
            [actionIds]
          ))[0]!.n),
        (done) => done === 240,
        { timeoutMs: 2 * WAIT_MS, intervalMs: 250 }
      )
      const statuses = await p.sql<{ status: string; n: string }>(
        "SELECT status, count(*) AS n FROM actions WHERE action_id = ANY($1) GROUP BY status",
        [actionIds]
      )
      expect(statuses.map((r) => [r.status, Number(r.n)])).toEqual([["applied", 240]])
      const steps = await p.sql<{ action_id: string; n: string }>(
        "SELECT action_id, count(*) AS n FROM action_steps WHERE action_id = ANY($1) AND phase = 'apply' GROUP BY action_id",
        [actionIds]
      )
      expect(steps.filter((r) => Number(r.n) !== 1)).toEqual([])
      const writes = callsTo(p.simulator.control, KEYWORDS_BULK_UPDATE, since)
      expect(writes.filter((c) => c.status === 200), "one upstream write per action").toHaveLength(240)
      expect(await p.sql("SELECT 1 FROM jobs WHERE action_id = ANY($1)", [actionIds])).toHaveLength(0)
    } finally {
      await Promise.all(workers.map((w) => w.stop()))
    }
  }, 15 * 60_000)

  it("takes accounts in turn: a job of another account waits for one of a busy account's, not all of them", async () => {
    /** Approved keyword pauses in `projectId`, one per ACTIVE keyword, `count` of them; their action ids. */
    const approvedPauses = async (projectId: string, count: number) => {
      const keywords = await p.sql<{ keyword_id: string }>(
        `SELECT keyword_id FROM keywords WHERE project_id = $1 AND status = 'ACTIVE' ORDER BY keyword_id DESC LIMIT $2`,
        [projectId, count]
      )
      expect(keywords).toHaveLength(count)
      const approver = await p.approverKey()
      const actionIds: Array<string> = []
      for (const { keyword_id } of keywords) {
        const answer = await call(`${p.server.api}/accounts/${projectId}/actions/keyword-status`, {
          method: "POST",
          key: BOOTSTRAP_KEY,
          body: { keywordIds: [keyword_id], status: "PAUSED", reason: "turns" }
        })
        expect(answer.status, answer.text).toBe(201)
        const { actionId } = proposalOf(answer)
        await withApi(p.server.baseUrl, approver, (client) => client.actions.approveAction({ path: { projectId, actionId } }))
        actionIds.push(actionId)
      }
      return actionIds
    }
    const busy = await approvedPauses(p.account.projectId, 12)
    const [other] = await approvedPauses(p.secondAccount.projectId, 1)
    // One worker, one fiber: the order of the applies is the order of the claims.
    const worker = await p.startTwin({ WORKER_CONCURRENCY: "1" })
    try {
      const settled = () =>
        p.sql<{ action_id: string; applied_at: string | null }>(
          "SELECT action_id, applied_at FROM actions WHERE action_id = ANY($1) AND status = 'applied'",
          [[...busy, other!]]
        )
      await waitFor("the 13 jobs to apply", settled, (rows) => rows.length === 13, { timeoutMs: 2 * WAIT_MS, intervalMs: 250 })
      const rows = await settled()
      const otherAt = Date.parse(rows.find((r) => r.action_id === other)!.applied_at!)
      const busyBefore = rows.filter((r) => r.action_id !== other && Date.parse(r.applied_at!) < otherAt).length
      // Queued last, applied second: the busy account's oldest job, then the other account's turn.
      expect(busyBefore).toBeLessThanOrEqual(1)
    } finally {
      await worker.stop()
    }
  }, 15 * 60_000)
})
