/**
 * Webhook endpoints of an org (admin, org-level): created with a signing secret shown once and kept sealed
 * (db/SecretBox.ts; HMAC needs the secret itself), listed, deleted, pinged, re-enabled after they were
 * disabled, and their delivery log. Deliveries themselves are made by WebhookWorker.ts.
 */
import type { Delivery, Webhook } from "@acs/domain/Webhooks"
import type { CreateWebhookRequest } from "@acs/domain/Webhooks"
import { Conflict, NotFound, ValidationFailed } from "@acs/domain/Errors"
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import * as Crypto from "node:crypto"
import type { Granted } from "../auth/Access.ts"
import { newId } from "../db/Ids.ts"
import { SecretBox } from "../db/SecretBox.ts"
import { EVENTS_CHANNEL, EventSignal, notification } from "../events/EventSignal.ts"
import { EventsConfig } from "../events/Sequencer.ts"
import { resolvePublic, urlRefusal } from "./WebhookTargets.ts"
import { WebhookConfig } from "./WebhookWorker.ts"

interface WebhookRow {
  readonly webhookId: string
  readonly url: string
  readonly events: ReadonlyArray<Webhook["events"][number]>
  readonly description: string | null
  readonly format: "json" | "slack"
  readonly createdAt: Date
  readonly disabledAt: Date | null
  readonly disabledReason: string | null
}

interface DeliveryRow {
  readonly deliveryId: string
  readonly eventId: string
  readonly eventType: string
  readonly status: Delivery["status"]
  readonly attempts: number
  readonly lastStatusCode: number | null
  readonly lastDurationMs: number | null
  readonly lastError: string | null
  readonly lastResponse: string | null
  readonly lastAttemptAt: Date | null
  readonly runAt: Date
  readonly deliveredAt: Date | null
  readonly createdAt: Date
}

const iso = (value: Date | null) => (value === null ? null : new Date(value).toISOString())

const toWebhook = (row: WebhookRow): Webhook => ({
  webhookId: row.webhookId,
  url: row.url,
  events: row.events,
  description: row.description,
  format: row.format,
  createdAt: new Date(row.createdAt).toISOString(),
  disabledAt: iso(row.disabledAt),
  disabledReason: row.disabledReason
})

const toDelivery = (row: DeliveryRow): Delivery => ({
  deliveryId: row.deliveryId,
  eventId: row.eventId,
  eventType: row.eventType,
  status: row.status,
  attempts: row.attempts,
  lastStatusCode: row.lastStatusCode,
  lastDurationMs: row.lastDurationMs,
  lastError: row.lastError,
  lastResponse: row.lastResponse,
  lastAttemptAt: iso(row.lastAttemptAt),
  nextRetryAt: row.status === "pending" ? iso(row.runAt) : null,
  deliveredAt: iso(row.deliveredAt),
  createdAt: new Date(row.createdAt).toISOString()
})

const webhookColumns = "webhook_id, url, events, description, format, created_at, disabled_at, disabled_reason"
const deliveryColumns = "delivery_id, event_id, event_type, status, attempts, last_status_code, last_duration_ms, last_error, " +
  "last_response, last_attempt_at, run_at, delivered_at, created_at"

export class Webhooks extends Effect.Service<Webhooks>()("acs/Webhooks", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox
    const signal = yield* EventSignal
    const { allowPrivate, maxEndpointsPerOrg } = yield* WebhookConfig
    const { retryWindowSeconds } = yield* EventsConfig

    const invalid = (error: string) => new ValidationFailed({ message: `the webhook cannot be saved: ${error}`, validation_errors: [error] })

    const create = (grant: Granted<"createWebhook">, request: CreateWebhookRequest) =>
      Effect.gen(function*() {
        const refused = urlRefusal(request.url, allowPrivate)
        if (refused !== undefined) return yield* invalid(refused)
        // Checked again at every delivery; refusing here tells the admin at once.
        yield* Effect.tryPromise({ try: () => resolvePublic(new URL(request.url).hostname, allowPrivate), catch: (e) => invalid(`url: ${String((e as Error).message)}`) })
        const secret = `whsec_${Crypto.randomBytes(32).toString("base64url")}`
        const rows = yield* sql.withTransaction(Effect.gen(function*() {
          // The org's row locked: two creations at once cannot both see room for one.
          const counted = yield* sql<{ readonly endpoints: number }>`
            SELECT (SELECT count(*)::int FROM webhooks WHERE org_id = o.org_id AND deleted_at IS NULL) AS endpoints
            FROM orgs o WHERE o.org_id = ${grant.orgId} FOR NO KEY UPDATE`
          const endpoints = counted[0]?.endpoints ?? 0
          if (endpoints >= maxEndpointsPerOrg) {
            return yield* invalid(`this org has ${endpoints} webhook endpoints, the most it may have (${maxEndpointsPerOrg}): delete one first`)
          }
          return yield* sql<WebhookRow>`
            INSERT INTO webhooks (webhook_id, org_id, url, events, description, format, secret_sealed, created_by)
            VALUES (${newId("whk")}, ${grant.orgId}, ${request.url}, ${JSON.stringify([...new Set(request.events)])}::jsonb,
              ${request.description ?? null}, ${request.format ?? "json"}, ${box.seal(secret)},
              ${`${grant.principal.kind}:${grant.principal.id}`})
            RETURNING ${sql.unsafe(webhookColumns)}`
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        yield* Effect.logInfo("webhook created").pipe(Effect.annotateLogs({ webhookId: rows[0]!.webhookId, by: grant.principal.id }))
        return { webhook: toWebhook(rows[0]!), secret }
      }).pipe(Effect.withSpan("Webhooks.create"))

    const list = (grant: Granted<"listWebhooks">) =>
      sql<WebhookRow>`SELECT ${sql.unsafe(webhookColumns)} FROM webhooks WHERE org_id = ${grant.orgId} AND deleted_at IS NULL
        ORDER BY created_at, webhook_id`.pipe(Effect.orDie, Effect.map((rows) => ({ webhooks: rows.map(toWebhook) })))

    const notFound = (webhookId: string) => new NotFound({ message: `no webhook ${webhookId} in this org` })

    const find = (orgId: string, webhookId: string) =>
      sql<WebhookRow>`SELECT ${sql.unsafe(webhookColumns)} FROM webhooks
        WHERE org_id = ${orgId} AND webhook_id = ${webhookId} AND deleted_at IS NULL`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => rows[0] === undefined ? Effect.fail(notFound(webhookId)) : Effect.succeed(rows[0]))
      )

    /** Deleted: no further deliveries; its pending ones end as failed, and its log stays readable for none. */
    const remove = (grant: Granted<"deleteWebhook">, webhookId: string) =>
      sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql`UPDATE webhooks SET deleted_at = clock_timestamp()
          WHERE org_id = ${grant.orgId} AND webhook_id = ${webhookId} AND deleted_at IS NULL RETURNING webhook_id`
        if (rows.length === 0) return yield* notFound(webhookId)
        yield* sql`UPDATE webhook_deliveries SET status = 'failed', last_error = 'the endpoint was deleted'
          WHERE webhook_id = ${webhookId} AND status = 'pending'`
      })).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Webhooks.delete"))

    /**
     * A `ping` event for this endpoint only, delivered (and logged) like any other; its first attempt is sent even
     * while the endpoint backs off (Deliveries.ts): an admin checking a fixed receiver is not kept waiting.
     */
    const test = (grant: Granted<"testWebhook">, webhookId: string) =>
      Effect.gen(function*() {
        const webhook = yield* find(grant.orgId, webhookId)
        if (webhook.disabledAt !== null) {
          return yield* new Conflict({ message: `webhook ${webhookId} is disabled: POST /webhooks/${webhookId}/enable first` })
        }
        const eventId = newId("evt")
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const body = { eventId, type: "ping", createdAt: now, orgId: grant.orgId, projectId: null, data: { webhookId } }
        const rows = yield* sql<DeliveryRow>`
          INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, body, give_up_at)
          VALUES (${newId("dlv")}, ${webhookId}, ${grant.orgId}, ${eventId}, 'ping', ${JSON.stringify(body)}::jsonb,
            clock_timestamp() + make_interval(secs => ${retryWindowSeconds}))
          RETURNING ${sql.unsafe(deliveryColumns)}`.pipe(Effect.orDie)
        yield* sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${notification("webhooks", true)})`.pipe(Effect.orDie)
        yield* signal.wake({ deliveries: true })
        return toDelivery(rows[0]!)
      }).pipe(Effect.withSpan("Webhooks.test"))

    /**
     * Back on after it was disabled; deliveries waiting for it get a fresh retry window. It starts at the current
     * position: the events of its disabled time are not sent (migration 0025).
     */
    const enable = (grant: Granted<"enableWebhook">, webhookId: string) =>
      sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql<WebhookRow>`UPDATE webhooks SET disabled_at = NULL, disabled_reason = NULL, unanswered = 0, backoff_until = NULL,
            claimed_through = CASE WHEN disabled_at IS NULL THEN claimed_through ELSE acs_last_position() END,
            queued_through = CASE WHEN disabled_at IS NULL THEN queued_through ELSE acs_last_position() END
          WHERE org_id = ${grant.orgId} AND webhook_id = ${webhookId} AND deleted_at IS NULL
          RETURNING ${sql.unsafe(webhookColumns)}`
        if (rows[0] === undefined) return yield* notFound(webhookId)
        yield* sql`UPDATE webhook_deliveries SET run_at = clock_timestamp(),
            give_up_at = clock_timestamp() + make_interval(secs => ${retryWindowSeconds})
          WHERE webhook_id = ${webhookId} AND status = 'pending'`
        yield* sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${notification("webhooks", true)})`
        yield* Effect.logInfo("webhook enabled").pipe(Effect.annotateLogs({ webhookId, by: grant.principal.id }))
        return toWebhook(rows[0])
      })).pipe(Effect.catchTag("SqlError", Effect.die), Effect.tap(() => signal.wake({ deliveries: true })), Effect.withSpan("Webhooks.enable"))

    /**
     * The newest `limit` attempts: the queue's rows and the delivered first attempts of recorded batches (migration
     * 0026), of which only the newest `limit` batches are expanded (each holds at least one).
     */
    const deliveries = (grant: Granted<"listWebhookDeliveries">, webhookId: string, limit: number) =>
      Effect.gen(function*() {
        yield* find(grant.orgId, webhookId)
        const n = Math.min(200, Math.max(1, limit))
        const rows = yield* sql<DeliveryRow>`
          (SELECT ${sql.unsafe(deliveryColumns)} FROM webhook_deliveries WHERE webhook_id = ${webhookId} ORDER BY created_at DESC, delivery_id LIMIT ${n})
          UNION ALL
          (SELECT o.delivery_id, o.event_id, o.event_type, 'delivered', 1, o.status_code, o.duration_ms, NULL, o.response,
            b.delivered_at, b.delivered_at, b.delivered_at, b.delivered_at
          FROM (SELECT * FROM webhook_delivered_batches WHERE webhook_id = ${webhookId} ORDER BY delivered_at DESC LIMIT ${n}) b
          CROSS JOIN LATERAL unnest(b.delivery_ids, b.event_ids, b.event_types, b.status_codes, b.durations_ms, b.responses)
            AS o (delivery_id, event_id, event_type, status_code, duration_ms, response))
          ORDER BY created_at DESC, delivery_id LIMIT ${n}`.pipe(Effect.orDie)
        return { deliveries: rows.map(toDelivery) }
      })

    return { create, list, remove, test, enable, deliveries } as const
  }),
  dependencies: [SecretBox.Default]
}) {}
