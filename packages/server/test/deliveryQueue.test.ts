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
})
