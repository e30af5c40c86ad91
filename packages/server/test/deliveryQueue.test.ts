/**
 * The webhook delivery queue's claim (queue/Deliveries.ts) in this process against the real test PostgreSQL:
 * it leases the oldest due deliveries of enabled endpoints, and answers in the same statement when the next
 * of the others is due, which is how long an idle worker sleeps. A disabled endpoint's backlog is neither
 * claimed nor counted as due: it would wake the workers at once, again and again, until an admin enables it.
 */
import { layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { expect } from "vitest"
import { databaseLayer } from "../src/db/Database.ts"
import { Deliveries } from "../src/queue/Deliveries.ts"
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

      const first = yield* deliveries.claim("worker_a", LEASE_MS, 2)
      expect(first.batch.map((d) => d.deliveryId)).toEqual(["dlv_due_1", "dlv_due_2"])
      expect(first.batch[0]).toMatchObject({ webhookId: "wh_enabled", attempts: 1, body: { eventId: "x" }, format: "json" })
      // One more is overdue already.
      expect(first.nextDueInMs).not.toBeNull()
      expect(first.nextDueInMs!).toBeLessThanOrEqual(0)

      const second = yield* deliveries.claim("worker_b", LEASE_MS, 10)
      expect(second.batch.map((d) => d.deliveryId)).toEqual(["dlv_due_3"])
      // Next: the one due in a minute (the leased ones come back after two); the disabled backlog does not count.
      expect(second.nextDueInMs!).toBeGreaterThan(50_000)
      expect(second.nextDueInMs!).toBeLessThanOrEqual(60_000)

      const idle = yield* deliveries.claim("worker_c", LEASE_MS, 10)
      expect(idle.batch).toEqual([])
      expect(idle.nextDueInMs!).toBeGreaterThan(50_000)
      expect(idle.nextDueInMs!).toBeLessThanOrEqual(60_000)

      // Delivered: only the disabled backlog is left, so nothing is due.
      yield* Effect.promise(() => query(url, "UPDATE webhook_deliveries SET status = 'delivered' WHERE webhook_id = 'wh_enabled'"))
      const none = yield* deliveries.claim("worker_c", LEASE_MS, 10)
      expect(none).toEqual({ batch: [], nextDueInMs: null })

      // Enabled again, its backlog is claimed, oldest first.
      yield* Effect.promise(() => query(url, "UPDATE webhooks SET disabled_at = NULL WHERE webhook_id = 'wh_disabled'"))
      const enabled = yield* deliveries.claim("worker_c", LEASE_MS, 10)
      expect(enabled).toMatchObject({ batch: [{ deliveryId: "dlv_disabled_1" }, { deliveryId: "dlv_disabled_2" }], nextDueInMs: null })
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
        // The fan-out queues a delivery that refers to the event (wh_reference subscribes to the type) ...
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
      })
      // The sequencer also fanned out the first test's events, never sequenced: this test's are the ones of evt_bytes.
      const batch = (yield* deliveries.claim("worker_bytes", LEASE_MS, 20)).batch.filter((d) => d.eventId === "evt_bytes")
      const reference = batch.find((d) => d.webhookId === "wh_reference")!
      const copy = batch.find((d) => d.webhookId === "wh_copy")!
      expect(batch).toHaveLength(2)
      expect((yield* Effect.promise(() => query<{ body: unknown }>(url, "SELECT body FROM webhook_deliveries WHERE delivery_id = $1", [reference.deliveryId])))[0]!.body)
        .toBeNull()
      expect(JSON.stringify(reference.body)).toBe(JSON.stringify(copy.body))
      expect(reference.body).toEqual({ eventId: "evt_bytes", type: "action.proposed", createdAt: expect.any(String), orgId: org, projectId: "prj_bytes", data })
      expect(reference.traceParent).toBe(traceParent)
    }))
})
