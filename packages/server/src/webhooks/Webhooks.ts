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
import { decodeDeliveries, deliveryColumns, type DeliveryRow, deliveryStatements } from "./Deliveries.ts"
import { decodeWebhooks, endpointStatements, webhookColumns, type WebhookRow } from "./Endpoints.ts"
import { resolvePublic, urlRefusal } from "./WebhookTargets.ts"
import { WebhookConfig } from "./WebhookWorker.ts"
import { countOf } from "../db/Rows.ts"

const iso = (value: string | null) => (value === null ? null : new Date(value).toISOString())

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

export class Webhooks extends Effect.Service<Webhooks>()("acs/Webhooks", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox
    const signal = yield* EventSignal
    const { allowPrivate, maxEndpointsPerOrg } = yield* WebhookConfig
    const { retryWindowSeconds } = yield* EventsConfig
    const endpointRows = endpointStatements(sql)
    const queue = deliveryStatements(sql, retryWindowSeconds)

    const invalid = (error: string) => new ValidationFailed({ message: `the webhook cannot be saved: ${error}`, validation_errors: [error] })

    const create = (grant: Granted<"createWebhook">, request: CreateWebhookRequest) =>
      Effect.gen(function*() {
        const refused = urlRefusal(request.url, allowPrivate)
        if (refused !== undefined) return yield* invalid(refused)
        // Checked again at every delivery; refusing here tells the admin at once.
        yield* Effect.tryPromise({ try: () => resolvePublic(new URL(request.url).hostname, allowPrivate), catch: (e) => invalid(`url: ${String((e as Error).message)}`) })
        const secret = `whsec_${Crypto.randomBytes(32).toString("base64url")}`
        const rows = yield* sql.withTransaction(Effect.gen(function*() {
          // The org's row locked: two creations at once cannot both see room for one. Two statements: Citus
          // refuses a lock on a row of a reference table in a statement that also reads a distributed one.
          yield* sql`SELECT org_id FROM orgs WHERE org_id = ${grant.orgId} FOR NO KEY UPDATE`
          const endpoints = yield* sql`
            SELECT count(*)::int AS n FROM webhooks WHERE org_id = ${grant.orgId} AND deleted_at IS NULL`.pipe(Effect.flatMap(countOf))
          if (endpoints >= maxEndpointsPerOrg) {
            return yield* invalid(`this org has ${endpoints} webhook endpoints, the most it may have (${maxEndpointsPerOrg}): delete one first`)
          }
          return yield* endpointRows.create({
            webhookId: newId("whk"),
            orgId: grant.orgId,
            url: request.url,
            events: [...new Set(request.events)],
            description: request.description ?? null,
            format: request.format ?? "json",
            secretSealed: box.seal(secret),
            createdBy: `${grant.principal.kind}:${grant.principal.id}`
          })
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        yield* Effect.logInfo("webhook created").pipe(Effect.annotateLogs({ webhookId: rows[0]!.webhookId, by: grant.principal.id }))
        return { webhook: toWebhook(rows[0]!), secret }
      }).pipe(Effect.withSpan("Webhooks.create"))

    const list = (grant: Granted<"listWebhooks">) =>
      sql`SELECT ${sql.unsafe(webhookColumns)} FROM webhooks WHERE org_id = ${grant.orgId} AND deleted_at IS NULL
        ORDER BY created_at, webhook_id`.pipe(Effect.orDie, Effect.flatMap(decodeWebhooks), Effect.map((rows) => ({ webhooks: rows.map(toWebhook) })))

    const notFound = (webhookId: string) => new NotFound({ message: `no webhook ${webhookId} in this org` })

    const find = (orgId: string, webhookId: string) =>
      sql`SELECT ${sql.unsafe(webhookColumns)} FROM webhooks
        WHERE org_id = ${orgId} AND webhook_id = ${webhookId} AND deleted_at IS NULL`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeWebhooks),
        Effect.flatMap((rows) => rows[0] === undefined ? Effect.fail(notFound(webhookId)) : Effect.succeed(rows[0]))
      )

    /** Deleted: no further deliveries; its pending ones end as failed, and its log stays readable for none. */
    const remove = (grant: Granted<"deleteWebhook">, webhookId: string) =>
      sql.withTransaction(Effect.gen(function*() {
        if (!(yield* endpointRows.remove(grant.orgId, webhookId))) return yield* notFound(webhookId)
        yield* queue.failPendingOf(grant.orgId, webhookId)
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
        const rows = yield* queue.ping({ deliveryId: newId("dlv"), webhookId, orgId: grant.orgId, eventId, body }).pipe(Effect.orDie)
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
        const rows = yield* endpointRows.enable(grant.orgId, webhookId)
        if (rows[0] === undefined) return yield* notFound(webhookId)
        yield* queue.retryNowOf(grant.orgId, webhookId)
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
        const rows = yield* sql`
          (SELECT ${sql.unsafe(deliveryColumns)} FROM webhook_deliveries WHERE org_id = ${grant.orgId} AND webhook_id = ${webhookId} ORDER BY created_at DESC, delivery_id LIMIT ${n})
          UNION ALL
          (SELECT o.delivery_id, o.event_id, o.event_type, 'delivered', 1, o.status_code, o.duration_ms, NULL, o.response,
            b.delivered_at, b.delivered_at, b.delivered_at, b.delivered_at
          FROM (SELECT * FROM webhook_delivered_batches WHERE org_id = ${grant.orgId} AND webhook_id = ${webhookId} ORDER BY delivered_at DESC LIMIT ${n}) b
          CROSS JOIN LATERAL unnest(b.delivery_ids, b.event_ids, b.event_types, b.status_codes, b.durations_ms, b.responses)
            AS o (delivery_id, event_id, event_type, status_code, duration_ms, response))
          ORDER BY created_at DESC, delivery_id LIMIT ${n}`.pipe(Effect.orDie, Effect.flatMap(decodeDeliveries))
        return { deliveries: rows.map(toDelivery) }
      })

    return { create, list, remove, test, enable, deliveries } as const
  }),
  dependencies: [SecretBox.Default]
}) {}
