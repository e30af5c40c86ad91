/**
 * The webhook delivery queue's claim (webhooks/Deliveries.ts) in this process against the real test PostgreSQL:
 * it leases the oldest due queued deliveries of enabled endpoints, and answers in the same statement when the
 * next of the others is due, which is how long an idle worker sleeps. A disabled endpoint's backlog is neither
 * claimed nor counted as due: it would wake the workers at once, again and again, until an admin enables it.
 * First attempts are leased as batches of an endpoint's events in position order, one batch out per endpoint,
 * and recorded once made (the delivered ones as one row for the batch); a batch whose lease ran out becomes queued deliveries, and its old owner
 * records nothing. An endpoint's queued deliveries go out as one group at a time; an endpoint given no answer backs
 * off (nothing of it claimed, its waiting deliveries due no earlier), then gives one delivery of each kind at a time
 * until one is answered; what a group did not send is due again with no attempt counted.
 */
import { layer } from "./support/layerBlock.ts"
import { ConfigProvider, Effect, Layer } from "effect"
import { expect } from "vitest"
import { databaseLayer } from "../src/db/Database.ts"
import { Deliveries } from "../src/webhooks/Deliveries.ts"
import { MAX_BACKOFF_MS } from "../src/webhooks/DeliveryOutcome.ts"
import { createDatabase, insertOrg, query } from "./support/database.ts"

const ORG = "org_delivery_queue"
const LEASE_MS = 120_000

let url = ""
const TestDatabase = Layer.unwrapEffect(Effect.promise(async () => {
  url = await createDatabase()
  await insertOrg(url, ORG)
  return databaseLayer("delivery queue test").pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url]]))))
  )
}))

const addWebhook = (webhookId: string, disabled: boolean) =>
  query(
    url,
    `INSERT INTO webhooks (webhook_id, org_id, url, events, format, secret_sealed, created_by, disabled_at)
     VALUES ($1, $2, 'https://hooks.example.com/acs', '["action.proposed"]', 'json', 'sealed', 'test', CASE WHEN $3 THEN now() END)`,
    [webhookId, ORG, disabled]
  )

/** A pending delivery of a new event, due `dueInSeconds` from now (negative: overdue), queued `order`-th. */
const addDelivery = (webhookId: string, deliveryId: string, dueInSeconds: number, order: number) =>
  query(
    url,
    `WITH event AS (
       INSERT INTO events (event_id, org_id, type, data) VALUES ('evt_' || $1, $2, 'action.proposed', '{}') RETURNING event_id)
     INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, body, run_at, give_up_at, created_at)
     SELECT $1, $3, $2, event_id, 'action.proposed', '{"eventId": "x"}', now() + make_interval(secs => $4), now() + interval '1 day',
       now() + make_interval(secs => $5)
     FROM event`,
    [deliveryId, ORG, webhookId, dueInSeconds, order / 1000]
  )

layer(Deliveries.Default.pipe(Layer.provideMerge(TestDatabase)))("webhook delivery claims", (it) => {
  it.effect("claims the oldest due of enabled endpoints and answers when the next is due, disabled ones aside", () =>
    Effect.gen(function*() {
      const deliveries = yield* Deliveries
      yield* Effect.promise(async () => {
        await addWebhook("wh_enabled", false)
        await addWebhook("wh_disabled", true)
        await addDelivery("wh_disabled", "dlv_disabled_1", -120, 0)
        await addDelivery("wh_disabled", "dlv_disabled_2", -60, 1)
        await addDelivery("wh_enabled", "dlv_due_1", -30, 2)
        await addDelivery("wh_enabled", "dlv_due_2", -20, 3)
        await addDelivery("wh_enabled", "dlv_due_3", -10, 4)
        await addDelivery("wh_enabled", "dlv_later", 60, 5)
      })

      const first = yield* deliveries.claim("worker_a", ORG, LEASE_MS, 2)
      expect(first.batch.map((d) => d.deliveryId)).toEqual(["dlv_due_1", "dlv_due_2"])
      expect(first.batch[0]).toMatchObject({ webhookId: "wh_enabled", attempts: 1, body: { eventId: "x" }, format: "json" })
      // One more is overdue already.
      expect(first.nextDueInMs).not.toBeNull()
      expect(first.nextDueInMs!).toBeLessThanOrEqual(0)

      // One group of an endpoint's queued deliveries out at a time: the third waits for the first two's record
      // (at most the lease).
      const held = yield* deliveries.claim("worker_b", ORG, LEASE_MS, 10)
      expect(held.batch).toEqual([])
      expect(held.nextDueInMs!).toBeGreaterThan(LEASE_MS - 10_000)
      yield* deliveries.releaseRetries(ORG, "wh_enabled", "worker_a")

      const second = yield* deliveries.claim("worker_b", ORG, LEASE_MS, 10)
      expect(second.batch.map((d) => d.deliveryId)).toEqual(["dlv_due_3"])
      yield* deliveries.releaseRetries(ORG, "wh_enabled", "worker_b")

      // Next: the one due in a minute (the leased ones come back after two); the disabled backlog does not count.
      const idle = yield* deliveries.claim("worker_c", ORG, LEASE_MS, 10)
      expect(idle.batch).toEqual([])
      expect(idle.nextDueInMs!).toBeGreaterThan(50_000)
      expect(idle.nextDueInMs!).toBeLessThanOrEqual(60_000)

      // Delivered: only the disabled backlog is left, so nothing is due.
      yield* Effect.promise(() => query(url, "UPDATE webhook_deliveries SET status = 'delivered' WHERE webhook_id = 'wh_enabled'"))
      const none = yield* deliveries.claim("worker_c", ORG, LEASE_MS, 10)
      expect(none).toEqual({ batch: [], more: false, nextDueInMs: null })

      // Enabled again, its backlog is claimed, oldest first.
      yield* Effect.promise(() => query(url, "UPDATE webhooks SET disabled_at = NULL WHERE webhook_id = 'wh_disabled'"))
      const enabled = yield* deliveries.claim("worker_c", ORG, LEASE_MS, 10)
      expect(enabled).toMatchObject({ batch: [{ deliveryId: "dlv_disabled_1" }, { deliveryId: "dlv_disabled_2" }], more: false, nextDueInMs: null })
    }))

  it.effect("builds the body of an event's delivery from the event, the same bytes as a row's own copy", () =>
    Effect.gen(function*() {
      const deliveries = yield* Deliveries
      const org = "org_delivery_bytes"
      const traceParent = "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"
      const data = {
        action: {
          actionId: "act_bytes",
          created_at: "2026-11-26T22:00:00.123456Z",
          summary: "Budget — 120.00 € → 119.80 € \"quoted\" \\ back\nslash\ttab \u0001 \u2028 😀",
          payload: { newDailyBudgetMicros: 119_800_000, share: 0.125, cut: -1.5, flags: [true, false, null], nested: { b: 1, a: [1, "two"] } },
          result: null,
          warnings: []
        }
      }
      yield* Effect.promise(async () => {
        await insertOrg(url, org)
        await query(
          url,
          `INSERT INTO webhooks (webhook_id, org_id, url, events, format, secret_sealed, created_by)
           VALUES ('wh_reference', $1, 'https://hooks.example.com/acs', '["action.proposed"]', 'json', 'sealed', 'test'),
             ('wh_copy', $1, 'https://hooks.example.com/acs', '[]', 'json', 'sealed', 'test')`,
          [org]
        )
        await query(url, `INSERT INTO events (event_id, org_id, project_id, type, trace_parent, data) VALUES ('evt_bytes', $1, 'prj_bytes', 'action.proposed', $2, $3)`, [
          org,
          traceParent,
          JSON.stringify(data)
        ])
        // The sequencer marks the event for wh_reference (it subscribes to the type): a first attempt, built from
        // the event ...
        await query(url, "SELECT * FROM acs_sequence_events(1000, 86400, 'acs_events_test', 'test')")
        // ... and a row as migration 0018's fan-out made them, the body copied in, for the other endpoint.
        await query(
          url,
          `INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, body, give_up_at)
           SELECT 'dlv_copy', 'wh_copy', e.org_id, e.event_id, e.type,
             jsonb_build_object('eventId', e.event_id, 'type', e.type,
               'createdAt', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'orgId', e.org_id, 'projectId', e.project_id, 'data', e.data),
             now() + interval '1 day'
           FROM events e WHERE e.event_id = 'evt_bytes'`
        )
        // The first test's endpoints are out of the way (the sequencer marked wh_enabled for that test's events).
        await query(url, "UPDATE webhooks SET deleted_at = now() WHERE webhook_id NOT IN ('wh_reference', 'wh_copy')")
      })
      const batch = (yield* deliveries.claim("worker_bytes", org, LEASE_MS, 20)).batch
      const reference = batch.find((d) => d.webhookId === "wh_reference")!
      const copy = batch.find((d) => d.webhookId === "wh_copy")!
      expect(batch).toHaveLength(2)
      expect(reference.batchId).not.toBeNull()
      expect(copy.batchId).toBeNull()
      expect(JSON.stringify(reference.body)).toBe(JSON.stringify(copy.body))
      expect(reference.body).toEqual({ eventId: "evt_bytes", type: "action.proposed", createdAt: expect.any(String), orgId: org, projectId: "prj_bytes", data })
      expect(reference.traceParent).toBe(traceParent)
    }))

  it.effect("leases first attempts as batches in position order, one out per endpoint, records them, and rescues a batch whose lease ran out", () =>
    Effect.gen(function*() {
      const deliveries = yield* Deliveries
      const org = "org_delivery_batches"
      const rows = () =>
        query<{ eventId: string; status: string; attempts: number }>(
          url,
          `SELECT event_id AS "eventId", status, attempts FROM webhook_delivery_log WHERE webhook_id = 'wh_batches' ORDER BY event_id`
        )
      yield* Effect.promise(async () => {
        await query(url, "UPDATE webhooks SET deleted_at = now()")
        await insertOrg(url, org)
        await query(url, `INSERT INTO webhooks (webhook_id, org_id, url, events, format, secret_sealed, created_by)
          VALUES ('wh_batches', $1, 'https://hooks.example.com/acs', '["sync.succeeded"]', 'json', 'sealed', 'test')`, [org])
        await query(url, `INSERT INTO events (event_id, org_id, type, data)
          SELECT 'evt_batch_' || n, $1, CASE WHEN n = 3 THEN 'sync.failed' ELSE 'sync.succeeded' END, '{}' FROM generate_series(1, 6) n ORDER BY n`, [org])
        await query(url, "SELECT * FROM acs_sequence_events(1000, 86400, 'acs_events_test', 'test')")
      })

      // Five events the endpoint wants (not the sync.failed), three a batch. A full batch does not say more is
      // claimable: its endpoint is out until the batch is recorded (and that record wakes a worker at once).
      const first = yield* deliveries.claim("worker_a", org, LEASE_MS, 3)
      expect(first.batch.map((d) => d.eventId)).toEqual(["evt_batch_1", "evt_batch_2", "evt_batch_4"])
      expect(first.more).toBe(false)
      expect(new Set(first.batch.map((d) => d.batchId)).size).toBe(1)
      // One batch out per endpoint: the rest waits for it, and nothing else is claimable.
      expect(yield* deliveries.claim("worker_b", org, LEASE_MS, 3)).toEqual({ batch: [], more: false, nextDueInMs: null })

      // worker_a's instance dies: once its lease has run out, the next claim turns its batch into queued
      // deliveries, due at once, and takes the endpoint's next batch; the claim after leases the queued ones.
      yield* Effect.promise(() => query(url, "UPDATE webhook_batches SET lease_until = now() - interval '1 second' WHERE locked_by = 'worker_a'"))
      const second = yield* deliveries.claim("worker_b", org, LEASE_MS, 3)
      expect(second.batch.map((d) => d.eventId)).toEqual(["evt_batch_5", "evt_batch_6"])
      expect(second.more).toBe(true)
      const rescued = yield* deliveries.claim("worker_c", org, LEASE_MS, 3)
      expect(rescued.batch.map((d) => [d.eventId, d.attempts, d.batchId])).toEqual([
        ["evt_batch_1", 2, null],
        ["evt_batch_2", 2, null],
        ["evt_batch_4", 2, null]
      ])
      expect(yield* deliveries.claim("worker_c", org, LEASE_MS, 3)).toMatchObject({ batch: [], more: false })

      // An event comes while worker_b's batch is out: the claim it wakes skips the endpoint.
      const sequenced = (eventId: string) =>
        query(url, `INSERT INTO events (event_id, org_id, type, data) VALUES ($2, $1, 'sync.succeeded', '{}')`, [org, eventId])
          .then(() => query(url, "SELECT * FROM acs_sequence_events(1000, 86400, 'acs_events_test', 'test')"))
      yield* Effect.promise(() => sequenced("evt_batch_7"))
      expect(yield* deliveries.claim("worker_c", org, LEASE_MS, 3)).toMatchObject({ batch: [], more: false })

      // worker_b's attempts: one delivered, one to retry in a minute. Its record says the endpoint has more.
      const made = (delivered: boolean) => ({ delivered, statusCode: delivered ? 204 : 500, durationMs: 3, error: delivered ? null : "HTTP 500", response: null })
      const recorded = yield* deliveries.firstAttempts(second.batch[0]!.batchId!, org, "worker_b", [
        { delivery: second.batch[0]!, result: made(true), delayMs: 0 },
        { delivery: second.batch[1]!, result: made(false), delayMs: 60_000 }
      ])
      expect(recorded.recorded.size).toBe(2)
      expect(recorded.more).toBe(true)
      // worker_a, back from a long pause, records nothing: its deliveries are worker_c's now.
      const late = yield* deliveries.firstAttempts(first.batch[0]!.batchId!, org, "worker_a", first.batch.map((delivery) => ({ delivery, result: made(true), delayMs: 0 })))
      expect(late).toEqual({ recorded: new Set(), more: false })
      expect(yield* Effect.promise(rows)).toEqual([
        { eventId: "evt_batch_1", status: "pending", attempts: 2 },
        { eventId: "evt_batch_2", status: "pending", attempts: 2 },
        { eventId: "evt_batch_4", status: "pending", attempts: 2 },
        { eventId: "evt_batch_5", status: "delivered", attempts: 1 },
        { eventId: "evt_batch_6", status: "pending", attempts: 1 }
      ])
      // The delivered first attempt is its batch's row; only the one to retry is a row of the queue.
      expect(yield* Effect.promise(() =>
        query(url, `SELECT event_ids AS "eventIds", status_codes AS "statusCodes" FROM webhook_delivered_batches WHERE webhook_id = 'wh_batches'`)
      )).toEqual([{ eventIds: ["evt_batch_5"], statusCodes: [204] }])
      expect(yield* Effect.promise(() =>
        query(url, `SELECT event_id AS "eventId" FROM webhook_deliveries WHERE webhook_id = 'wh_batches' AND attempts = 1`)
      )).toEqual([{ eventId: "evt_batch_6" }])

      // An endpoint deleted while its first attempt was out: a failed attempt ends the delivery, with no retry
      // left waiting for an endpoint that will never be claimed again.
      // (evt_batch_7, claimed now that worker_b's batch is recorded, and evt_batch_8 behind it.)
      yield* Effect.promise(() => sequenced("evt_batch_8"))
      const last = (yield* deliveries.claim("worker_c", org, LEASE_MS, 1)).batch.filter((d) => d.batchId !== null)
      expect(last.map((d) => d.eventId)).toEqual(["evt_batch_7"])
      yield* Effect.promise(() => query(url, "UPDATE webhooks SET deleted_at = now() WHERE webhook_id = 'wh_batches'"))
      const ended = yield* deliveries.firstAttempts(last[0]!.batchId!, org, "worker_c", [{ delivery: last[0]!, result: made(false), delayMs: 60_000 }])
      expect(ended.more).toBe(false)
      expect((yield* Effect.promise(rows)).find((r) => r.eventId === "evt_batch_7")).toMatchObject({ status: "failed", attempts: 1 })
    }))

  it.effect("an endpoint disabled after its retry window keeps its events not yet claimed as queued deliveries that wait for it", () =>
    Effect.gen(function*() {
      const deliveries = yield* Deliveries
      const org = "org_delivery_disabled"
      const event = (id: string) =>
        query(url, `INSERT INTO events (event_id, org_id, type, data) VALUES ($1, $2, 'sync.succeeded', '{}')`, [id, org])
          .then(() => query(url, "SELECT * FROM acs_sequence_events(1000, 86400, 'acs_events_test', 'test')"))
      yield* Effect.promise(async () => {
        await query(url, "UPDATE webhooks SET deleted_at = now()")
        await insertOrg(url, org)
        await query(url, `INSERT INTO webhooks (webhook_id, org_id, url, events, format, secret_sealed, created_by)
          VALUES ('wh_failing', $1, 'https://hooks.example.com/acs', '["sync.succeeded"]', 'json', 'sealed', 'test')`, [org])
        await query(url, `INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, body, give_up_at)
          VALUES ('dlv_failing', 'wh_failing', $1, 'evt_failing', 'ping', '{"type": "ping"}', now() + interval '1 day')`, [org])
      })
      const failing = (yield* deliveries.claim("worker_d", org, LEASE_MS, 10)).batch
      expect(failing.map((d) => d.deliveryId)).toEqual(["dlv_failing"])
      // Two events for it arrive while its last attempt is out; the attempt fails for good.
      yield* Effect.promise(() => event("evt_waiting_1").then(() => event("evt_waiting_2")))
      const result = { delivered: false, statusCode: 503, durationMs: 2, error: "HTTP 503", response: null }
      expect(yield* deliveries.giveUp(failing[0]!, "worker_d", result)).toBe(true)
      const waiting = yield* Effect.promise(() =>
        query<{ eventId: string; status: string }>(url, `SELECT event_id AS "eventId", status FROM webhook_deliveries WHERE webhook_id = 'wh_failing' ORDER BY event_id`)
      )
      expect(waiting).toEqual([
        { eventId: "evt_failing", status: "failed" },
        { eventId: "evt_waiting_1", status: "pending" },
        { eventId: "evt_waiting_2", status: "pending" }
      ])
      // Disabled: nothing of it is claimed, its waiting deliveries included.
      expect((yield* deliveries.claim("worker_d", org, LEASE_MS, 10)).batch).toEqual([])
    }))

  it.effect("three workers claiming while events are sequenced lease every event once: none skipped, none twice", () =>
    Effect.gen(function*() {
      const deliveries = yield* Deliveries
      const org = "org_delivery_race"
      const total = 300
      yield* Effect.promise(async () => {
        await query(url, "UPDATE webhooks SET deleted_at = now()")
        await insertOrg(url, org)
        await query(url, `INSERT INTO webhooks (webhook_id, org_id, url, events, format, secret_sealed, created_by)
          VALUES ('wh_race', $1, 'https://hooks.example.com/acs', '["sync.succeeded"]', 'json', 'sealed', 'test')`, [org])
      })
      // Ten events at a time, each ten sequenced in a pass of their own, while the workers claim.
      const produce = Effect.forEach(Array.from({ length: total / 10 }, (_, i) => i), (i) =>
        Effect.promise(() =>
          query(url, `INSERT INTO events (event_id, org_id, type, data) SELECT 'evt_race_' || ($2 * 10 + n), $1, 'sync.succeeded', '{}' FROM generate_series(1, 10) n`, [org, i])
            .then(() => query(url, "SELECT * FROM acs_sequence_events(1000, 86400, 'acs_events_test', 'test')"))
        ), { discard: true })
      const leased: Array<string> = []
      const delivered = { delivered: true, statusCode: 204, durationMs: 1, error: null, response: null }
      const work = (workerId: string) =>
        Effect.gen(function*() {
          for (let claims = 0; leased.length < total && claims < 5_000; claims++) {
            const { batch } = yield* deliveries.claim(workerId, org, LEASE_MS, 7)
            const first = batch.filter((d) => d.batchId !== null)
            leased.push(...first.map((d) => d.eventId))
            if (first.length > 0) yield* deliveries.firstAttempts(first[0]!.batchId!, org, workerId, first.map((delivery) => ({ delivery, result: delivered, delayMs: 0 })))
            else yield* Effect.yieldNow()
          }
        })
      yield* Effect.all([produce, work("worker_x"), work("worker_y"), work("worker_z")], { concurrency: "unbounded", discard: true })
      expect(leased).toHaveLength(total)
      expect(new Set(leased).size).toBe(total)
      const recorded = yield* Effect.promise(() =>
        query<{ n: number }>(url, "SELECT count(*)::int AS n FROM webhook_delivery_log WHERE webhook_id = 'wh_race' AND status = 'delivered'")
      )
      expect(recorded[0]!.n).toBe(total)
    }), 60_000)

  it.effect("an endpoint given no answer backs off: nothing of it is claimed, then one delivery of each kind at a time until one is answered", () =>
    Effect.gen(function*() {
      const deliveries = yield* Deliveries
      const org = "org_delivery_backoff"
      const log = (webhookId: string) =>
        query<{ eventId: string; status: string; attempts: number; dueInS: number }>(
          url,
          `SELECT event_id AS "eventId", status, attempts, extract(epoch FROM run_at - now())::float8 AS "dueInS"
           FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY event_id`,
          [webhookId]
        )
      yield* Effect.promise(async () => {
        await query(url, "UPDATE webhooks SET deleted_at = now()")
        await insertOrg(url, org)
        await query(url, `INSERT INTO webhooks (webhook_id, org_id, url, events, format, secret_sealed, created_by)
          VALUES ('wh_dead', $1, 'https://dead.example.com/acs', '["sync.succeeded"]', 'json', 'sealed', 'test'),
            ('wh_alive', $1, 'https://alive.example.com/acs', '["sync.succeeded"]', 'json', 'sealed', 'test')`, [org])
        // Three retries of the dead endpoint and one of the live one, all due; six new events for both.
        for (const [webhookId, n] of [["wh_dead", 1], ["wh_dead", 2], ["wh_dead", 3], ["wh_alive", 4]] as const) {
          await query(url, `INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, body, run_at, give_up_at, attempts)
            VALUES ($1, $2, $3, $4, 'ping', '{"type": "ping"}', now() - make_interval(secs => 10 - $5), now() + interval '1 day', 1)`,
            [`dlv_retry_${n}`, webhookId, org, `evt_retry_${n}`, n])
        }
        await query(url, `INSERT INTO events (event_id, org_id, type, data)
          SELECT 'evt_new_' || n, $1, 'sync.succeeded', '{}' FROM generate_series(1, 6) n ORDER BY n`, [org])
        await query(url, "SELECT * FROM acs_sequence_events(1000, 86400, 'acs_events_test', 'test')")
      })

      // An attempt got no answer: a minute of back-off, its waiting deliveries due no earlier.
      const backoffMs = yield* deliveries.backOff(org, "wh_dead", 60_000, MAX_BACKOFF_MS)
      expect(backoffMs).toBeGreaterThan(50_000)
      expect(backoffMs).toBeLessThanOrEqual(60_000)
      for (const row of yield* Effect.promise(() => log("wh_dead"))) expect(row.dueInS).toBeGreaterThan(50)

      // Claims take the live endpoint's first attempts and retry, nothing of the dead one, and do not say
      // more is waiting (which would make the workers claim again and again).
      const claimed: Array<string> = []
      for (let i = 0; i < 3; i++) {
        const got = yield* deliveries.claim(`worker_${i}`, org, LEASE_MS, 10)
        claimed.push(...got.batch.map((d) => `${d.webhookId}:${d.eventId}`))
        for (const d of got.batch) if (d.batchId === null) yield* deliveries.releaseRetries(org, d.webhookId, `worker_${i}`)
      }
      expect(claimed.filter((c) => c.startsWith("wh_dead"))).toEqual([])
      expect(claimed.sort()).toEqual(["wh_alive:evt_new_1", "wh_alive:evt_new_2", "wh_alive:evt_new_3", "wh_alive:evt_new_4", "wh_alive:evt_new_5",
        "wh_alive:evt_new_6", "wh_alive:evt_retry_4"])
      expect(yield* deliveries.claim("worker_x", org, LEASE_MS, 10)).toMatchObject({ batch: [], more: false })

      // The back-off over: a probe of each kind, one first attempt and one retry, each out alone.
      yield* Effect.promise(() =>
        query(url, "UPDATE webhooks SET backoff_until = now() - interval '1 second' WHERE webhook_id = 'wh_dead'")
          .then(() => query(url, "UPDATE webhook_deliveries SET run_at = now() - interval '1 second' WHERE webhook_id = 'wh_dead'"))
      )
      const probes = [...(yield* deliveries.claim("worker_p", org, LEASE_MS, 10)).batch, ...(yield* deliveries.claim("worker_q", org, LEASE_MS, 10)).batch]
      expect(probes.map((d) => [d.eventId, d.endpointFailing])).toEqual([["evt_new_1", true], ["evt_retry_1", true]])
      expect((yield* deliveries.claim("worker_r", org, LEASE_MS, 10)).batch).toEqual([])

      // The first-attempt probe times out again; the retry probe is answered, and ends the back-off.
      const timedOut = { delivered: false, statusCode: null, durationMs: 10_000, error: "no answer within 10000 ms", response: null }
      yield* deliveries.firstAttempts(probes[0]!.batchId!, org, "worker_p", [{ delivery: probes[0]!, result: timedOut, delayMs: 5_000 }])
      yield* deliveries.delivered("worker_q", org, [{ deliveryId: probes[1]!.deliveryId, result: { delivered: true, statusCode: 204, durationMs: 3, error: null, response: null } }])
      yield* deliveries.recovered(org, "wh_dead")
      yield* deliveries.releaseRetries(org, "wh_dead", "worker_q")
      yield* Effect.promise(() => query(url, "UPDATE webhook_deliveries SET run_at = now() WHERE webhook_id = 'wh_dead' AND status = 'pending'"))
      const full = (yield* deliveries.claim("worker_s", org, LEASE_MS, 10)).batch
      expect(full.map((d) => d.eventId)).toEqual(["evt_new_2", "evt_new_3", "evt_new_4", "evt_new_5", "evt_new_6"])
      expect(full.every((d) => !d.endpointFailing)).toBe(true)
      const retries = (yield* deliveries.claim("worker_t", org, LEASE_MS, 10)).batch
      expect(retries.map((d) => d.eventId).sort()).toEqual(["evt_new_1", "evt_retry_2", "evt_retry_3"])

      // What a batch did not send (its endpoint backed off meanwhile) is due again with no attempt counted.
      yield* deliveries.firstAttempts(full[0]!.batchId!, org, "worker_s", full.map((delivery) => ({ delivery, result: null, delayMs: 30_000 })))
      const unsent = (yield* Effect.promise(() => log("wh_dead"))).filter((r) => full.some((d) => d.eventId === r.eventId))
      expect(unsent.map((r) => [r.eventId, r.status, r.attempts])).toEqual(["evt_new_2", "evt_new_3", "evt_new_4", "evt_new_5", "evt_new_6"]
        .map((eventId) => [eventId, "pending", 0]))
      for (const row of unsent) expect(row.dueInS).toBeGreaterThan(20)
      expect(yield* deliveries.notAttempted("worker_t", org, retries.map((d) => d.deliveryId), 0)).toEqual(new Set(retries.map((d) => d.deliveryId)))
      expect((yield* Effect.promise(() => log("wh_dead"))).filter((r) => r.eventId === "evt_retry_2")).toMatchObject([{ status: "pending", attempts: 1 }])
    }))
})
