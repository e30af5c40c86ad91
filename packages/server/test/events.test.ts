/**
 * Events over HTTP (docs/contract.md 6), against the real server: GET /events (newest first, cursor paging, filters),
 * the SSE stream with a real client (resume with Last-Event-ID misses nothing and repeats nothing), the reach
 * of an account-bound key, and a revoked key's stream ending at its next heartbeat; approval expiry (the
 * sweep, its event and reason, 409 on approving it) and re-validation on approval (422).
 */
import { AcsClient } from "@acs/domain/AcsClient"
import { ActionRecord, isProposalResponse } from "@acs/domain/Actions"
import { Event, type EventsParams } from "@acs/domain/Events"
import { Sync } from "@acs/domain/Warehouse"
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { withApi } from "./support/apiClient.ts"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
import { BOOTSTRAP_KEY, call } from "./support/server.ts"
import { openSse, type SseClient } from "./support/sse.ts"
import { waitFor } from "./support/wait.ts"

/** What an event carries, decoded with the contract's schemas: the action (as GET …/actions/{actionId}) or the sync. */
const EventData = Schema.Struct({ action: Schema.optional(ActionRecord), sync: Schema.optional(Sync) })
const dataOf = (event: Event) => Schema.decodeUnknownSync(EventData)(event.data)
const actionIdOf = (event: Event) => dataOf(event).action?.actionId
/** One SSE frame's data: an event, decoded. */
const frameEvent = Schema.decodeUnknownSync(Schema.parseJson(Event))

let p: Pipeline
let campaign: { readonly campaignId: string; readonly dailyBudgetMicros: number }
let otherAccount: string
let budgetStep = 0

/**
 * Proposes through the RPC client with the bootstrap key (an API key's proposals always queue): the REST
 * client's proposal endpoints are generated in a loop its types cannot follow.
 */
const proposeBudgetChange = (
  projectId: string,
  payload: { readonly campaignId: string; readonly newDailyBudgetMicros: number; readonly reason: string }
) =>
  Effect.runPromise(
    Effect.flatMap(AcsClient, (client) => client.proposeBudgetChange({ path: { projectId }, payload })).pipe(
      Effect.provide(AcsClient.layer({ url: p.server.baseUrl, key: BOOTSTRAP_KEY })),
      Effect.scoped
    )
  ).then((answer) => {
    if (!isProposalResponse(answer)) throw new Error(`a proposal answered a preview: ${JSON.stringify(answer)}`)
    return answer
  })

/** A campaign of the account with a daily budget to change. */
const budgetedCampaign = (projectId: string, limit: number) =>
  p.api("key", (client) => client.warehouse.listCampaigns({ path: { projectId }, urlParams: { limit } })).then(({ campaigns }) => {
    const found = campaigns.find((c) => c.dailyBudgetMicros !== null && c.dailyBudgetMicros > 0)
    if (found?.dailyBudgetMicros == null) throw new Error(`no campaign with a daily budget in ${projectId}`)
    return { campaignId: found.campaignId, dailyBudgetMicros: found.dailyBudgetMicros }
  })

beforeAll(async () => {
  p = await startPipeline({
    env: { EVENTS_HEARTBEAT_MS: "300", EVENTS_POLL_MS: "200", APPROVAL_EXPIRY_SWEEP_SECONDS: "1", WORKER_CONCURRENCY: "0" }
  })
  campaign = await budgetedCampaign(p.account.projectId, 5)
  const { accounts } = await p.api("key", (client) => client.accounts.listAccounts())
  otherAccount = accounts.find((a) => a.projectId !== p.account.projectId && !a.readOnly)!.projectId
}, 600_000)

afterAll(async () => {
  await p?.close()
})

/** A queued proposal (an API key's proposals always queue): its actionId. */
const queue = async (projectId = p.account.projectId): Promise<string> => {
  let payload: { readonly campaignId: string; readonly newDailyBudgetMicros: number; readonly reason: string }
  if (projectId === p.account.projectId) {
    budgetStep++
    payload = { campaignId: campaign.campaignId, newDailyBudgetMicros: campaign.dailyBudgetMicros + budgetStep * 1_000_000, reason: "events test" }
  } else {
    const c = await budgetedCampaign(projectId, 50)
    payload = { campaignId: c.campaignId, newDailyBudgetMicros: c.dailyBudgetMicros + 1_000_000, reason: "events test" }
  }
  const answer = await proposeBudgetChange(projectId, payload)
  expect(answer.status).toBe("proposed")
  return answer.actionId
}

const listEvents = (urlParams: typeof EventsParams.Type, key = BOOTSTRAP_KEY) =>
  withApi(p.server.baseUrl, key, (client) => client.events.listEvents({ urlParams }))

const proposedEventOf = (actionId: string) =>
  waitFor(`the action.proposed event of ${actionId}`, () => listEvents({ type: "action.proposed", limit: 50 }), (page) =>
    page.events.some((e) => actionIdOf(e) === actionId)).then((page) =>
      page.events.find((e) => actionIdOf(e) === actionId)!)

const streamUrl = (query = "") => `${p.server.api}/events/stream${query}`

/** Waits until the stream delivered an event for each action (in any order), and answers the frames. */
const waitForActions = (client: SseClient, actionIds: ReadonlyArray<string>) =>
  waitFor(`the stream to deliver ${actionIds.join(", ")}`, () => Promise.resolve(client.frames.map((f) => frameEvent(f.data))), (events) =>
    actionIds.every((id) => events.some((e) => actionIdOf(e) === id)))

describe("GET /events", () => {
  it("shows a queued proposal as action.proposed, with the action as the API shows it, newest first and paged", async () => {
    const first = await queue()
    const second = await queue()
    const event = await proposedEventOf(second)
    const action = await p.api("key", (client) => client.actions.getAction({ path: { projectId: p.account.projectId, actionId: second } }))
    expect(event).toMatchObject({ type: "action.proposed", projectId: p.account.projectId })
    // The event's action as it came (not decoded): exactly the record GET …/actions/{actionId} answers.
    expect(event.data["action"]).toEqual(action)
    expect(event.eventId).toMatch(/^evt_/)

    const page1 = await listEvents({ type: "action.proposed", limit: 1 })
    expect(page1.events.map(actionIdOf)).toEqual([second])
    expect(page1.nextAfter).toBe(page1.events[0]!.eventId)
    const page2 = await listEvents({ type: "action.proposed", limit: 1, after: page1.nextAfter! })
    expect(page2.events.map(actionIdOf)).toEqual([first])

    const unknown = await p.api("key", (client) => Effect.flip(client.events.listEvents({ urlParams: { after: "evt_nope" } })))
    expect(unknown).toMatchObject({ _tag: "InvalidRequest" })
  })

  it("a finished sync is its event: sync.succeeded with the sync as GET …/syncs shows it", async () => {
    const { syncs } = await p.api("key", (client) => client.warehouse.listSyncs({ path: { projectId: p.account.projectId }, urlParams: {} }))
    const latest = syncs.find((s) => s.status === "succeeded")!
    const syncIdOf = (e: Event) => dataOf(e).sync?.syncId
    const page = await waitFor("the sync.succeeded event", () => listEvents({ type: "sync.succeeded", projectId: p.account.projectId, limit: 50 }), (page) =>
      page.events.some((e) => syncIdOf(e) === latest.syncId))
    const event = page.events.find((e) => syncIdOf(e) === latest.syncId)!
    expect(event).toMatchObject({ type: "sync.succeeded", orgId: expect.any(String), projectId: p.account.projectId })
    // As it came (not decoded): exactly the sync GET …/syncs answers.
    expect(event.data["sync"]).toEqual(latest)
  })

  it("an account-bound key sees only its account's events, and another account is 403 account_mismatch", async () => {
    const { secret: bound } = await p.api("key", (client) =>
      client.keys.createAccountKey({ path: { projectId: p.account.projectId }, payload: { name: "bound reader", scope: "read" } }))
    const here = await queue()
    const there = await queue(otherAccount)
    await proposedEventOf(there)
    await proposedEventOf(here)
    const seen = await listEvents({ limit: 500 }, bound)
    expect(seen.events.some((e) => actionIdOf(e) === here)).toBe(true)
    expect(seen.events.every((e) => e.projectId === p.account.projectId)).toBe(true)
    const refused = await withApi(p.server.baseUrl, bound, (client) => Effect.flip(client.events.listEvents({ urlParams: { projectId: otherAccount } })))
    expect(refused).toMatchObject({ _tag: "AccountMismatch" })
  })
})

describe("GET /events/stream", () => {
  it("streams events live; a client resuming with Last-Event-ID gets every later event once", async () => {
    const client = await openSse(streamUrl("?type=action.proposed"), { authorization: `Bearer ${BOOTSTRAP_KEY}` })
    expect(client.status).toBe(200)
    expect(client.contentType).toContain("text/event-stream")
    const firstBatch = [await queue(), await queue(), await queue()]
    await waitForActions(client, firstBatch)
    const frames = client.frames.map((f) => ({ id: f.id, event: frameEvent(f.data) }))
    expect(frames.map((f) => actionIdOf(f.event))).toEqual(firstBatch)
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
    expect(resumed.frames.map((f) => actionIdOf(frameEvent(f.data)))).toEqual([
      ...firstBatch.slice(1),
      ...secondBatch,
      third
    ])
    resumed.close()
  })

  it("sends heartbeats, keeps an account-bound key to its account, and ends a revoked key's stream", async () => {
    const { secret, key } = await p.api("key", (client) =>
      client.keys.createAccountKey({ path: { projectId: p.account.projectId }, payload: { name: "bound streamer", scope: "read" } }))
    const client = await openSse(streamUrl(), { authorization: `Bearer ${secret}` })
    expect(client.status).toBe(200)
    const there = await queue(otherAccount)
    const here = await queue()
    await waitForActions(client, [here])
    await waitFor("a heartbeat", () => Promise.resolve(client.heartbeats()), (n) => n > 0)
    const seen = client.frames.map((f) => frameEvent(f.data))
    expect(seen.some((e) => actionIdOf(e) === there)).toBe(false)
    expect(seen.every((e) => e.projectId === p.account.projectId)).toBe(true)

    const other = await call(streamUrl(`?projectId=${otherAccount}`), { key: secret })
    expect(other.status).toBe(403)

    await p.api("key", (client) => client.keys.revokeKey({ path: { keyId: key.keyId } }))
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
    const settings = await p.api("key", (client) => client.settings.updateSettings({ payload: { approvalTtlHours: 1 } }))
    expect(settings.approvalTtlHours).toBe(1)
    const actionId = await queue()
    const fresh = await queue()
    // Queued two hours ago (arranged): past the one-hour TTL; the fresh one is not.
    await p.sql(`UPDATE actions SET created_at = now() - interval '2 hours' WHERE action_id = $1`, [actionId])
    const expired = await p.settle(actionId, ["expired"])
    expect(expired.status).toBe("expired")
    const event = await waitFor("the action.expired event", () => listEvents({ type: "action.expired" }), (page) =>
      page.events.some((e) => actionIdOf(e) === actionId))
    expect(dataOf(event.events.find((e) => actionIdOf(e) === actionId)!).action!.decisionReason).toMatch(/within 1 hours/)
    expect((await p.action(fresh)).status).toBe("proposed")

    const approve = await p.api("approver", (client) => Effect.flip(client.actions.approveAction({ path: { projectId: p.account.projectId, actionId } })))
    expect(approve).toMatchObject({ _tag: "Conflict" })
    await p.api("key", (client) => client.settings.updateSettings({ payload: { approvalTtlHours: 72 } }))
  })

  it("approving a queued action that still holds approves it at once, with its action.approved event", async () => {
    const actionId = await queue()
    const approve = await p.api("approver", (client) => client.actions.approveAction({ path: { projectId: p.account.projectId, actionId } }))
    expect(approve.status).toBe("approved")
    await waitFor("the action.approved event", () => listEvents({ type: "action.approved" }), (page) =>
      page.events.some((e) => actionIdOf(e) === actionId))
  })

  it("approving re-runs local validation at once: 422 when the account changed so the change no longer holds", async () => {
    const { actionId } = await proposeBudgetChange(p.account.projectId, {
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: campaign.dailyBudgetMicros * 2,
      reason: "double it"
    })
    // A sync saw the budget cut to a third: doubling the old value is now over the 3x hard cap.
    await p.sql(`UPDATE campaigns SET daily_budget_micros = $1 WHERE project_id = $2 AND campaign_id = $3`, [
      Math.floor(campaign.dailyBudgetMicros / 3),
      p.account.projectId,
      campaign.campaignId
    ])
    const approve = await p.api("approver", (client) => Effect.flip(client.actions.approveAction({ path: { projectId: p.account.projectId, actionId } })))
    expect(approve).toMatchObject({ _tag: "ValidationFailed", action_id: actionId })
    expect((await p.action(actionId)).status).toBe("proposed")
    await p.sql(`UPDATE campaigns SET daily_budget_micros = $1 WHERE project_id = $2 AND campaign_id = $3`, [
      campaign.dailyBudgetMicros,
      p.account.projectId,
      campaign.campaignId
    ])
  })
})
