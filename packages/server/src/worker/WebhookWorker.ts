/**
 * The webhook delivery workers of this instance: WEBHOOK_CONCURRENCY fibers claiming deliveries from Postgres
 * (queue/Deliveries.ts) in batches of up to WEBHOOK_BATCH, attempted side by side; one waiting worker is woken
 * when deliveries are queued here or on another instance (EventSignal), gathers for a time that grows with the
 * rate of deliveries (DeliveryGather.ts) and claims what came meanwhile; each looks anyway when the next retry
 * is due, at most every EVENTS_POLL_MS. Each attempt is signed at the moment it is sent; a failed one is
 * retried with exponential backoff (from WEBHOOK_RETRY_BASE_MS, doubling, at most an hour apart) until the
 * retry window (24 h) ends, when the delivery fails and its endpoint is disabled.
 */
import { Cause, Clock, Config, Duration, Effect, Exit, FiberRef, Layer, Option, type Tracer } from "effect"
import * as Os from "node:os"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { SecretBox } from "../db/SecretBox.ts"
import { newId } from "../db/Ids.ts"
import { EventSignal } from "../events/EventSignal.ts"
import { slackMessage } from "../events/SlackMessage.ts"
import { type AttemptResult, send } from "../events/WebhookSender.ts"
import { type ClaimedDelivery, Deliveries } from "../queue/Deliveries.ts"
import { countWebhookDelivery } from "../telemetry/Metrics.ts"
import { linkTo } from "../telemetry/TraceContext.ts"
import { gatherMs, nextRate } from "./DeliveryGather.ts"
import { backoffMs, deliveryOutcome, type DeliveryOutcome } from "./DeliveryOutcome.ts"

export const WebhookConfig = Config.all({
  concurrency: Config.integer("WEBHOOK_CONCURRENCY").pipe(Config.withDefault(4)),
  // Deliveries one worker leases at once and attempts side by side (a batch costs a claim and a record whatever
  // its size): what a 200 ms gather takes at 900 events a second. Six waves of the connections the sender keeps
  // to one endpoint (WebhookSender.ts): 60 s when every answer takes the whole timeout, inside the lease.
  batch: Config.integer("WEBHOOK_BATCH").pipe(Config.withDefault(192)),
  timeoutMs: Config.integer("WEBHOOK_TIMEOUT_MS").pipe(Config.withDefault(10_000)),
  leaseMs: Config.integer("WEBHOOK_LEASE_MS").pipe(Config.withDefault(120_000)),
  retryBaseMs: Config.integer("WEBHOOK_RETRY_BASE_MS").pipe(Config.withDefault(5_000)),
  pollMs: Config.integer("EVENTS_POLL_MS").pipe(Config.withDefault(1_000)),
  allowPrivate: Config.boolean("WEBHOOK_ALLOW_PRIVATE_NETWORKS").pipe(Config.withDefault(false)),
  publicUrl: Config.string("PUBLIC_URL").pipe(Config.option)
})

/** An attempt made: its result, what becomes of the delivery, and the wait before the next one. */
interface Attempt {
  readonly delivery: ClaimedDelivery
  readonly result: AttemptResult
  readonly outcome: DeliveryOutcome
  readonly delayMs: number
}

/**
 * The attempt's span context, sent as `traceparent` so the receiver's trace continues from the attempt: what
 * telemetry/TraceContext.ts `currentTraceparent` answers inside the span, without providing the span to an
 * effect to ask (about 10 µs of CPU per delivery).
 */
const traceparentOf = (span: Tracer.Span): string => `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

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

    // Each endpoint's secret opened once, not at every attempt (a burst is many attempts to few endpoints).
    const opened = new Map<string, Option.Option<string>>()
    const secretOf = (sealed: string) => {
      const known = opened.get(sealed)
      if (known !== undefined) return known
      if (opened.size >= 1_000) opened.clear()
      const secret = box.open(sealed)
      opened.set(sealed, secret)
      return secret
    }

    /** The body sent: the event as the claim built it, or the Slack message made from it. */
    const rawBodyOf = (delivery: ClaimedDelivery) =>
      JSON.stringify(delivery.format === "slack" ? slackMessage(delivery.body, publicUrl) : delivery.body)

    /**
     * One attempt under `span`, which ends when the answer is in (at the span clock's time, when the tracer
     * keeps timing); resolves with the attempt's result.
     */
    const sendUnder = (delivery: ClaimedDelivery, span: Tracer.Span, traceParent: string | null, unixSeconds: number, timing: boolean, clock: Clock.Clock) => {
      const secret = secretOf(delivery.secretSealed)
      const sent: Promise<AttemptResult> = Option.isNone(secret)
        ? Promise.resolve({ delivered: false, statusCode: null, durationMs: 0, error: "the signing secret cannot be opened with ACS_SECRETS_KEY", response: null })
        : send({
          url: delivery.url,
          secret: secret.value,
          eventId: delivery.eventId,
          rawBody: rawBodyOf(delivery),
          unixSeconds,
          timeoutMs: config.timeoutMs,
          allowPrivate: config.allowPrivate,
          traceParent
        })
      return sent.then((result) => {
        span.end(timing ? clock.unsafeCurrentTimeNanos() : BigInt(0), Exit.succeed(result))
        return { delivery, result }
      })
    }

    /**
     * A claimed batch, every attempt at once, each under a span of its own (a trace per attempt; polling an
     * empty queue is not traced: telemetry/TraceSampler.ts), then the outcomes (the delivered ones in one
     * statement). The attempts are promises awaited together, not a fiber each: forking a fiber per attempt,
     * and joining it (its FiberRefs merged back), cost CPU per delivery for nothing an attempt needs.
     */
    const attemptAll = (batch: ReadonlyArray<ClaimedDelivery>, workerId: string) =>
      Effect.gen(function*() {
        const clock = yield* Effect.clock
        const timing = yield* FiberRef.get(FiberRef.currentTracerTimingEnabled)
        const unixSeconds = Math.floor(clock.unsafeCurrentTimeMillis() / 1000)
        const sending: Array<ReturnType<typeof sendUnder>> = []
        for (const delivery of batch) {
          const span = yield* Effect.makeSpan("webhook.deliver", {
            ...HOT_SPAN,
            root: true,
            kind: "producer",
            attributes: { deliveryId: delivery.deliveryId, eventId: delivery.eventId, attempt: delivery.attempts },
            // The change the event describes (a request, an apply), which may be in another process, hours ago.
            links: linkTo(delivery.traceParent, { "acs.link": "event" })
          })
          sending.push(sendUnder(delivery, span, traceparentOf(span), unixSeconds, timing, clock))
        }
        const attempts: Array<Attempt> = []
        for (const { delivery, result } of yield* Effect.promise(() => Promise.all(sending))) {
          const delayMs = backoffMs(delivery.attempts, config.retryBaseMs)
          const outcome = deliveryOutcome({ delivered: result.delivered, firstOfBatch: delivery.batchId !== null, delayMs, windowLeftMs: delivery.windowLeftMs })
          yield* countWebhookDelivery(outcome)
          attempts.push({ delivery, result, outcome, delayMs })
        }
        // First attempts (a claim leases one batch of them) are recorded with their batch; the others one by one.
        const first = attempts.filter((a) => a.delivery.batchId !== null)
        const queued = attempts.filter((a) => a.delivery.batchId === null)
        let lost = 0
        if (first.length > 0) {
          const { recorded, more } = yield* deliveries.firstAttempts(first[0]!.delivery.batchId!, workerId, first)
          lost += first.length - recorded.size
          // Its events that came while the batch was out were skipped by the claims they woke: wake one for them.
          if (more) yield* signal.wakeDeliveries
        }
        const deliveredOnes = queued.filter((a) => a.outcome === "delivered")
        const recorded = yield* deliveries.delivered(workerId, deliveredOnes.map((a) => ({ deliveryId: a.delivery.deliveryId, result: a.result })))
        lost += deliveredOnes.filter((a) => !recorded.has(a.delivery.deliveryId)).length
        for (const a of queued) {
          if (a.outcome === "delivered") continue
          const kept = a.outcome === "gave_up"
            ? yield* deliveries.giveUp(a.delivery, workerId, a.result)
            : yield* deliveries.retryLater(a.delivery.deliveryId, workerId, a.result, a.delayMs)
          if (!kept) lost++
        }
        if (lost > 0) {
          yield* Effect.logWarning("webhook delivery lease lost before its outcome was recorded; the new owner records it").pipe(
            Effect.annotateLogs({ deliveries: lost })
          )
        }
      }).pipe(Effect.uninterruptible)

    // Deliveries a second this instance's workers claim (worker/DeliveryGather.ts), as of `rateAt`.
    let rate = 0
    let rateAt = 0

    const loop = (workerId: string) =>
      Effect.gen(function*() {
        const claimedAt = yield* Clock.currentTimeMillis
        const { batch, more, nextDueInMs } = yield* Effect.withTracerEnabled(deliveries.claim(workerId, config.leaseMs, config.batch), false)
        // Workers' claims may end out of order: the estimate stays as of the latest.
        rate = nextRate(rate, claimedAt - rateAt, batch.length)
        rateAt = Math.max(rateAt, claimedAt)
        // More is due: another waiting worker starts on it while this one sends.
        if (more) yield* signal.wakeDeliveries
        if (batch.length > 0) yield* attemptAll(batch, workerId)
        if (more) return
        // Nothing else was due at the claim: wait for a wake, or for the next one due (a retry, a lease running
        // out), at most the poll.
        const dueInMs = nextDueInMs === null ? config.pollMs : claimedAt + nextDueInMs - (yield* Clock.currentTimeMillis)
        const woken = yield* signal.nextDelivery(Math.max(10, Math.min(config.pollMs, dueInMs)))
        // Woken, most often by one commit: the commits of the gather join its batch (and wake no other worker), so
        // a busy org's deliveries share their claim and their record instead of paying both for each event.
        if (woken) yield* signal.gatherDeliveries(gatherMs(nextRate(rate, (yield* Clock.currentTimeMillis) - rateAt, 0), config.batch))
      }).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.interrupt
            : Effect.logError("webhook worker iteration failed", cause).pipe(Effect.zipRight(Effect.sleep(Duration.millis(config.pollMs))))
        ),
        Effect.forever
      )

    for (let index = 0; index < config.concurrency; index++) yield* Effect.forkScoped(loop(`${instance}#${index}`))
  })
)
