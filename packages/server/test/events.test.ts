/**
 * Events over HTTP (docs/contract.md 6), against the real server: GET /events (newest first, cursor paging, filters),
 * the SSE stream with a real client (resume with Last-Event-ID misses nothing and repeats nothing), the reach
 * of an account-bound key, and a revoked key's stream ending at its next heartbeat; approval expiry (the
 * sweep, its event and reason, 409 on approving it) and re-validation on approval (422).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
import { BOOTSTRAP_KEY, call } from "./support/server.ts"
import { openSse, type SseClient } from "./support/sse.ts"
import { waitFor } from "./support/wait.ts"

interface EventBody {
  readonly eventId: string
  readonly type: string
  readonly createdAt: string
  readonly orgId: string
  readonly projectId: string | null
  readonly data: { readonly action?: { readonly actionId: string; readonly status: string; readonly decisionReason?: string | null } }
}

let p: Pipeline
let campaign: { readonly campaignId: string; readonly dailyBudgetMicros: number }
let otherAccount: string
let budgetStep = 0

beforeAll(async () => {
  p = await startPipeline({
    env: { EVENTS_HEARTBEAT_MS: "300", EVENTS_POLL_MS: "200", APPROVAL_EXPIRY_SWEEP_SECONDS: "1", WORKER_CONCURRENCY: "0" }
  })
  const campaigns = await p.as("key", "GET", `/accounts/${p.account.projectId}/campaigns?limit=5`)
  campaign = (campaigns.body as { campaigns: Array<{ campaignId: string; dailyBudgetMicros: number }> }).campaigns
    .find((c) => c.dailyBudgetMicros > 0)!
  const accounts = (await p.as("key", "GET", "/accounts")).body as { accounts: Array<{ projectId: string; readOnly: boolean }> }
  otherAccount = accounts.accounts.find((a) => a.projectId !== p.account.projectId && !a.readOnly)!.projectId
}, 600_000)

afterAll(async () => {
  await p?.close()
})

/** A queued proposal (an API key's proposals always queue): its actionId. */
const queue = async (projectId = p.account.projectId): Promise<string> => {
  let body: Record<string, unknown>
  if (projectId === p.account.projectId) {
    budgetStep++
    body = { campaignId: campaign.campaignId, newDailyBudgetMicros: campaign.dailyBudgetMicros + budgetStep * 1_000_000, reason: "events test" }
  } else {
    const other = await p.as("key", "GET", `/accounts/${projectId}/campaigns?limit=1`)
    const c = (other.body as { campaigns: Array<{ campaignId: string; dailyBudgetMicros: number }> }).campaigns[0]!
    body = { campaignId: c.campaignId, newDailyBudgetMicros: c.dailyBudgetMicros + 1_000_000, reason: "events test" }
  }
  const answer = await p.propose("budget-change", body, { as: "key", projectId })
  expect(answer.status, answer.text).toBe(201)
  return (answer.body as { actionId: string }).actionId
}

const listEvents = async (query: string, key = BOOTSTRAP_KEY) => {
  const answer = await call(`${p.server.api}/events${query}`, { key })
  expect(answer.status, answer.text).toBe(200)
  return answer.body as { events: Array<EventBody>; nextAfter: string | null }
}

const proposedEventOf = (actionId: string) =>
  waitFor(`the action.proposed event of ${actionId}`, () => listEvents("?type=action.proposed&limit=50"), (page) =>
    page.events.some((e) => e.data.action?.actionId === actionId)).then((page) =>
      page.events.find((e) => e.data.action?.actionId === actionId)!)

const streamUrl = (query = "") => `${p.server.api}/events/stream${query}`

/** Waits until the stream delivered an event for each action (in any order), and answers the frames. */
const waitForActions = (client: SseClient, actionIds: ReadonlyArray<string>) =>
  waitFor(`the stream to deliver ${actionIds.join(", ")}`, () => Promise.resolve(client.frames.map((f) => JSON.parse(f.data) as EventBody)), (events) =>
    actionIds.every((id) => events.some((e) => e.data.action?.actionId === id)))

describe("GET /events", () => {
  it("shows a queued proposal as action.proposed, with the action as the API shows it, newest first and paged", async () => {
    const first = await queue()
    const second = await queue()
    const event = await proposedEventOf(second)
    const action = await p.action(second)
    expect(event).toMatchObject({ type: "action.proposed", projectId: p.account.projectId })
    expect(event.data.action).toEqual(action)
    expect(event.eventId).toMatch(/^evt_/)

    const page1 = await listEvents("?type=action.proposed&limit=1")
    expect(page1.events.map((e) => e.data.action?.actionId)).toEqual([second])
    expect(page1.nextAfter).toBe(page1.events[0]!.eventId)
    const page2 = await listEvents(`?type=action.proposed&limit=1&after=${page1.nextAfter}`)
    expect(page2.events.map((e) => e.data.action?.actionId)).toEqual([first])

    const unknown = await call(`${p.server.api}/events?after=evt_nope`, { key: BOOTSTRAP_KEY })
    expect(unknown.status).toBe(400)
  })

  it("a finished sync is its event: sync.succeeded with the sync as GET …/syncs shows it", async () => {
    const syncs = await p.as("key", "GET", `/accounts/${p.account.projectId}/syncs`)
    const latest = (syncs.body as { syncs: Array<{ syncId: string; status: string }> }).syncs.find((s) => s.status === "succeeded")!
    const page = await waitFor("the sync.succeeded event", () => listEvents(`?type=sync.succeeded&projectId=${p.account.projectId}&limit=50`), (page) =>
      page.events.some((e) => (e.data as { sync?: { syncId: string } }).sync?.syncId === latest.syncId))
    const event = page.events.find((e) => (e.data as { sync?: { syncId: string } }).sync?.syncId === latest.syncId)!
    expect(event).toMatchObject({ type: "sync.succeeded", orgId: expect.any(String), projectId: p.account.projectId })
    expect((event.data as { sync: unknown }).sync).toEqual(latest)
  })

  it("an account-bound key sees only its account's events, and another account is 403 account_mismatch", async () => {
    const created = await p.as("key", "POST", `/accounts/${p.account.projectId}/keys`, { name: "bound reader", scope: "read" })
    const bound = (created.body as { secret: string }).secret
    const here = await queue()
    const there = await queue(otherAccount)
    await proposedEventOf(there)
    await proposedEventOf(here)
    const seen = await listEvents("?limit=500", bound)
    expect(seen.events.some((e) => e.data.action?.actionId === here)).toBe(true)
    expect(seen.events.every((e) => e.projectId === p.account.projectId)).toBe(true)
    const refused = await call(`${p.server.api}/events?projectId=${otherAccount}`, { key: bound })
    expect(refused.status).toBe(403)
    expect((refused.body as { error: { code: string } }).error.code).toBe("account_mismatch")
  })
})

describe("GET /events/stream", () => {
  it("streams events live; a client resuming with Last-Event-ID gets every later event once", async () => {
    const client = await openSse(streamUrl("?type=action.proposed"), { authorization: `Bearer ${BOOTSTRAP_KEY}` })
    expect(client.status).toBe(200)
    expect(client.contentType).toContain("text/event-stream")
    const firstBatch = [await queue(), await queue(), await queue()]
    await waitForActions(client, firstBatch)
    const frames = client.frames.map((f) => ({ id: f.id, event: JSON.parse(f.data) as EventBody }))
    expect(frames.map((f) => f.event.data.action?.actionId)).toEqual(firstBatch)
    expect(frames.every((f) => f.id === f.event.eventId)).toBe(true)
    client.close()

    // While no one listens, more happens; the resumed stream starts right after the event it names.
    const secondBatch = [await queue(), await queue()]
    const resumed = await openSse(streamUrl("?type=action.proposed"), {
      authorization: `Bearer ${BOOTSTRAP_KEY}`,
      "last-event-id": frames[0]!.id!
    })
    await waitForActions(resumed, secondBatch)
    const third = await queue()
    await waitForActions(resumed, [third])
    expect(resumed.frames.map((f) => (JSON.parse(f.data) as EventBody).data.action?.actionId)).toEqual([
      ...firstBatch.slice(1),
      ...secondBatch,
      third
    ])
    resumed.close()
  })

  it("sends heartbeats, keeps an account-bound key to its account, and ends a revoked key's stream", async () => {
    const created = await p.as("key", "POST", `/accounts/${p.account.projectId}/keys`, { name: "bound streamer", scope: "read" })
    const { secret, key } = created.body as { secret: string; key: { keyId: string } }
    const client = await openSse(streamUrl(), { authorization: `Bearer ${secret}` })
    expect(client.status).toBe(200)
    const there = await queue(otherAccount)
    const here = await queue()
    await waitForActions(client, [here])
    await waitFor("a heartbeat", () => Promise.resolve(client.heartbeats()), (n) => n > 0)
    const seen = client.frames.map((f) => JSON.parse(f.data) as EventBody)
    expect(seen.some((e) => e.data.action?.actionId === there)).toBe(false)
    expect(seen.every((e) => e.projectId === p.account.projectId)).toBe(true)

    const other = await call(streamUrl(`?projectId=${otherAccount}`), { key: secret })
    expect(other.status).toBe(403)

    const revoked = await p.as("key", "DELETE", `/keys/${key.keyId}`)
    expect(revoked.status).toBe(204)
    await waitFor("the revoked key's stream to end", () => Promise.resolve(client.isEnded()), (ended) => ended)
  })

  it("idle streams cost one watch a second per instance, not a query each; the watch brings an event whose wake was lost", async () => {
    // An instance whose streams never beat within the test: only a wake or the watch makes them look. Twenty
    // streams of one key: the per-key cap is streamLimits.test.ts's.
    const twin = await p.startTwin({ EVENTS_HEARTBEAT_MS: "600000", EVENTS_POLL_MS: "200", EVENTS_MAX_STREAMS_PER_PRINCIPAL: "20" })
    await p.sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    const calls = async () => {
      const rows = await p.sql<{ watch: string; reads: string }>(`SELECT
          coalesce(sum(calls) FILTER (WHERE query LIKE '%FROM event_sequencer WHERE id%'), 0)::text AS watch,
          coalesce(sum(calls) FILTER (WHERE query LIKE '%FROM events e%e.position > $%::bigint%'), 0)::text AS reads
        FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`)
      return { watch: Number(rows[0]!.watch), reads: Number(rows[0]!.reads) }
    }
    const streams = await Promise.all(
      Array.from({ length: 20 }, () => openSse(`${twin.api}/events/stream?type=sync.failed`, { authorization: `Bearer ${BOOTSTRAP_KEY}` }))
    )
    expect(streams.map((s) => s.status)).toEqual(streams.map(() => 200))
    try {
      const opened = await calls()
      const quiet = await waitFor("two readings of the watch", calls, (c) => c.watch >= opened.watch + 2)
      const idle = await waitFor("five more readings of the watch", calls, (c) => c.watch >= quiet.watch + 5)
      // A poll per stream would have read 100 times in five polls; one wake of all twenty (a stray one) is 20.
      expect(idle.reads - quiet.reads).toBeLessThan(40)

      // Sequenced as another instance would, whose NOTIFY this instance never heard (its LISTEN reconnecting).
      const [account] = await p.sql<{ orgId: string }>("SELECT org_id AS \"orgId\" FROM accounts WHERE project_id = $1", [p.account.projectId])
      await p.sql(`DO $$ DECLARE n int; BEGIN
        INSERT INTO events (event_id, org_id, project_id, type, data)
          VALUES ('evt_lost_wake', '${account!.orgId}', '${p.account.projectId}', 'sync.failed', '{"note": "sequenced elsewhere"}');
        LOOP
          SELECT events INTO n FROM acs_sequence_events(1000, 86400, 'acs_events_unheard', 'elsewhere');
          EXIT WHEN n >= 0;
          PERFORM pg_sleep(0.01);
        END LOOP;
      END $$`)
      for (const stream of streams) {
        await waitFor("the event on every idle stream", () => Promise.resolve(stream.frames.map((f) => f.id)), (ids) => ids.includes("evt_lost_wake"))
      }
    } finally {
      streams.forEach((s) => s.close())
      await twin.stop()
    }
  })
})

describe("approval expiry", () => {
  it("a queued action past the org's approvalTtlHours expires with a reason and an event; approving it is 409", async () => {
    const settings = await p.as("key", "PUT", "/settings", { approvalTtlHours: 1 })
    expect(settings.status, settings.text).toBe(200)
    expect((settings.body as { approvalTtlHours: number }).approvalTtlHours).toBe(1)
    const actionId = await queue()
    const fresh = await queue()
    // Queued two hours ago (arranged): past the one-hour TTL; the fresh one is not.
    await p.sql(`UPDATE actions SET created_at = now() - interval '2 hours' WHERE action_id = $1`, [actionId])
    const expired = await p.settle(actionId, ["expired"])
    expect(expired.status).toBe("expired")
    const event = await waitFor("the action.expired event", () => listEvents("?type=action.expired"), (page) =>
      page.events.some((e) => e.data.action?.actionId === actionId))
    expect(event.events.find((e) => e.data.action?.actionId === actionId)!.data.action!.decisionReason).toMatch(/within 1 hours/)
    expect((await p.action(fresh)).status).toBe("proposed")

    const approve = await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)
    expect(approve.status).toBe(409)
    expect((approve.body as { error: { code: string } }).error.code).toBe("conflict")
    await p.as("key", "PUT", "/settings", { approvalTtlHours: 72 })
  })

  it("approving a queued action that still holds approves it at once, with its action.approved event", async () => {
    const actionId = await queue()
    const approve = await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)
    expect(approve.status, approve.text).toBe(200)
    expect((approve.body as { status: string }).status).toBe("approved")
    await waitFor("the action.approved event", () => listEvents("?type=action.approved"), (page) =>
      page.events.some((e) => e.data.action?.actionId === actionId))
  })

  it("approving re-runs local validation at once: 422 when the account changed so the change no longer holds", async () => {
    const raise = await p.propose("budget-change", {
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: campaign.dailyBudgetMicros * 2,
      reason: "double it"
    }, { as: "key" })
    expect(raise.status, raise.text).toBe(201)
    const actionId = (raise.body as { actionId: string }).actionId
    // A sync saw the budget cut to a third: doubling the old value is now over the 3x hard cap.
    await p.sql(`UPDATE campaigns SET daily_budget_micros = $1 WHERE project_id = $2 AND campaign_id = $3`, [
      Math.floor(campaign.dailyBudgetMicros / 3),
      p.account.projectId,
      campaign.campaignId
    ])
    const approve = await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)
    expect(approve.status, approve.text).toBe(422)
    expect(approve.body).toMatchObject({ error: { code: "validation_failed", action_id: actionId } })
    expect((await p.action(actionId)).status).toBe("proposed")
    await p.sql(`UPDATE campaigns SET daily_budget_micros = $1 WHERE project_id = $2 AND campaign_id = $3`, [
      campaign.dailyBudgetMicros,
      p.account.projectId,
      campaign.campaignId
    ])
  })
})
