/**
 * The webhook delivery workers of this instance: WEBHOOK_CONCURRENCY fibers claiming deliveries from Postgres
 * (queue/Deliveries.ts), woken when events are sequenced here or on another instance (EventSignal) and by a
 * short poll. Each attempt is signed at the moment it is sent; a failed one is retried with exponential
 * backoff (from WEBHOOK_RETRY_BASE_MS, doubling, at most an hour apart) until the retry window (24 h) ends,
 * when the delivery fails and its endpoint is disabled.
 */
import { Cause, Clock, Config, Duration, Effect, Layer, Option } from "effect"
import * as Os from "node:os"
import { SecretBox } from "../db/SecretBox.ts"
import { newId } from "../db/Ids.ts"
import { EventSignal } from "../events/EventSignal.ts"
import { slackMessage } from "../events/SlackMessage.ts"
import { send } from "../events/WebhookSender.ts"
import { type ClaimedDelivery, Deliveries } from "../queue/Deliveries.ts"
import { countWebhookDelivery } from "../telemetry/Metrics.ts"
import { linkTo } from "../telemetry/TraceContext.ts"

export const WebhookConfig = Config.all({
  concurrency: Config.integer("WEBHOOK_CONCURRENCY").pipe(Config.withDefault(4)),
  timeoutMs: Config.integer("WEBHOOK_TIMEOUT_MS").pipe(Config.withDefault(10_000)),
  leaseMs: Config.integer("WEBHOOK_LEASE_MS").pipe(Config.withDefault(60_000)),
  retryBaseMs: Config.integer("WEBHOOK_RETRY_BASE_MS").pipe(Config.withDefault(5_000)),
  pollMs: Config.integer("EVENTS_POLL_MS").pipe(Config.withDefault(1_000)),
  allowPrivate: Config.boolean("WEBHOOK_ALLOW_PRIVATE_NETWORKS").pipe(Config.withDefault(false)),
  publicUrl: Config.string("PUBLIC_URL").pipe(Config.option)
})

/** The wait before attempt `attempts + 1`: base × 2^(attempts − 1), at most an hour. */
export const backoffMs = (attempts: number, baseMs: number): number => Math.min(3_600_000, baseMs * 2 ** Math.max(0, attempts - 1))

export const WebhookWorkerLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* WebhookConfig
    if (config.concurrency <= 0) return
    const deliveries = yield* Deliveries
    const box = yield* SecretBox
    const signal = yield* EventSignal
    const port = yield* Config.integer("PORT").pipe(Config.withDefault(3000))
    const publicUrl = Option.getOrElse(config.publicUrl, () => `http://127.0.0.1:${port}`)
    const instance = `${Os.hostname()}:${process.pid}:${newId("wh")}`

    const attempt = (delivery: ClaimedDelivery, workerId: string) =>
      Effect.gen(function*() {
        const secret = box.open(delivery.secretSealed)
        const rawBody = JSON.stringify(delivery.format === "slack" ? slackMessage(delivery.body, publicUrl) : delivery.body)
        const unixSeconds = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const result = Option.isNone(secret)
          ? { delivered: false, statusCode: null, durationMs: 0, error: "the signing secret cannot be opened with ACS_SECRETS_KEY", response: null }
          : yield* Effect.promise(() =>
            send({
              url: delivery.url,
              secret: secret.value,
              eventId: delivery.eventId,
              rawBody,
              unixSeconds,
              timeoutMs: config.timeoutMs,
              allowPrivate: config.allowPrivate
            })
          )
        const delayMs = backoffMs(delivery.attempts, config.retryBaseMs)
        const outcome = result.delivered ? "delivered" : delayMs >= delivery.windowLeftMs ? "gave_up" : "failed"
        yield* countWebhookDelivery(outcome)
        const recorded = outcome === "delivered"
          ? yield* deliveries.delivered(delivery.deliveryId, workerId, result)
          : outcome === "gave_up"
          ? yield* deliveries.giveUp(delivery, workerId, result)
          : yield* deliveries.retryLater(delivery.deliveryId, workerId, result, delayMs)
        if (!recorded) {
          yield* Effect.logWarning("webhook delivery lease lost before its outcome was recorded; the new owner records it").pipe(
            Effect.annotateLogs({ deliveryId: delivery.deliveryId })
          )
        }
      }).pipe(
        Effect.uninterruptible,
        // A trace per attempt; polling an empty queue is not traced (telemetry/TraceSampler.ts).
        Effect.withSpan("webhook.deliver", {
          root: true,
          kind: "producer",
          attributes: { deliveryId: delivery.deliveryId, eventId: delivery.eventId, attempt: delivery.attempts },
          // The change the event describes (a request, an apply), which may be in another process, hours ago.
          links: linkTo(delivery.traceParent, { "acs.link": "event" })
        })
      )

    const loop = (workerId: string) =>
      Effect.gen(function*() {
        const wakes = yield* signal.subscribe
        yield* Effect.gen(function*() {
          const delivery = yield* Effect.withTracerEnabled(deliveries.claim(workerId, config.leaseMs), false)
          if (delivery !== undefined) return yield* attempt(delivery, workerId)
          const dueInMs = yield* Effect.withTracerEnabled(deliveries.nextDueInMs, false)
          yield* wakes.next(Math.max(10, Math.min(config.pollMs, dueInMs ?? config.pollMs)))
        }).pipe(
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.interrupt
              : Effect.logError("webhook worker iteration failed", cause).pipe(Effect.zipRight(Effect.sleep(Duration.millis(config.pollMs))))
          ),
          Effect.forever
        )
      }).pipe(Effect.scoped)

    for (let index = 0; index < config.concurrency; index++) yield* Effect.forkScoped(loop(`${instance}#${index}`))
  })
)
