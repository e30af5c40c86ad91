/**
 * The webhook delivery workers of this instance: WEBHOOK_CONCURRENCY fibers claiming deliveries from Postgres
 * (Deliveries.ts) in batches of up to WEBHOOK_BATCH; one waiting worker is woken when deliveries are
 * queued here or on another instance (EventSignal), gathers for a time that grows with the rate of deliveries
 * (DeliveryGather.ts) and claims what came meanwhile; each looks anyway when the next retry is due, at most every
 * EVENTS_POLL_MS. A worker never waits for an answer: it hands each claimed group to its endpoint's lane
 * (EndpointLanes.ts: the endpoint's own connections, WEBHOOK_ENDPOINT_CONCURRENCY at once, a group's time
 * bounded by WEBHOOK_ENDPOINT_BUDGET_MS) and goes back to claiming; a fiber per group records it once its
 * attempts have ended. Each attempt is signed at the moment it is sent; a failed one is retried with
 * exponential backoff (from WEBHOOK_RETRY_BASE_MS, doubling, at most an hour apart) until the retry window
 * (24 h) ends, when the delivery fails and its endpoint is disabled. An attempt given no answer backs its
 * endpoint off (the same doubling): nothing of it is claimed meanwhile, then one delivery at a time until one is
 * answered.
 */
import { Cause, Clock, Config, Effect, Exit, FiberRef, FiberSet, Layer, Option, type Tracer } from "effect"
import * as Os from "node:os"
import type { Dispatcher } from "undici"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { SecretBox } from "../db/SecretBox.ts"
import { newId } from "../db/Ids.ts"
import { EventSignal } from "../events/EventSignal.ts"
import { SlackAppFacts } from "./SlackAppFacts.ts"
import { NO_FACTS, type SlackAppFacts as Facts, slackAppMessage } from "./SlackAppMessage.ts"
import { slackMessage } from "./SlackMessage.ts"
import { type AttemptResult, endpointDispatcher, send, SOCKETS } from "./WebhookSender.ts"
import { type ClaimedDelivery, Deliveries, type FirstAttempt } from "./Deliveries.ts"
import { countWebhookDelivery } from "../telemetry/Metrics.ts"
import { linkTo } from "../telemetry/TraceContext.ts"
import { gatherMs, nextRate } from "./DeliveryGather.ts"
import { backoffMs as backoffMsOf, deliveryOutcome, type DeliveryOutcome, MAX_BACKOFF_MS } from "./DeliveryOutcome.ts"
import { EndpointLanes, type SkipReason } from "./EndpointLanes.ts"

export const WebhookConfig = Config.all({
  concurrency: Config.integer("WEBHOOK_CONCURRENCY").pipe(Config.withDefault(4)),
  // Deliveries one worker leases at once and attempts side by side (a batch costs a claim and a record whatever
  // its size): what a 200 ms gather takes at 900 events a second. Six waves of the connections the sender keeps
  // to one endpoint (WebhookSender.ts): 60 s when every answer takes the whole timeout, inside the lease.
  batch: Config.integer("WEBHOOK_BATCH").pipe(Config.withDefault(192)),
  timeoutMs: Config.integer("WEBHOOK_TIMEOUT_MS").pipe(Config.withDefault(10_000)),
  // Attempts in flight at once to one endpoint from this instance, over connections of its own (EndpointLanes.ts).
  endpointConcurrency: Config.integer("WEBHOOK_ENDPOINT_CONCURRENCY").pipe(Config.withDefault(SOCKETS), Config.validate({
    message: "WEBHOOK_ENDPOINT_CONCURRENCY must be at least 1",
    validation: (n) => n >= 1
  })),
  // A claimed group's in-flight time: no attempt of it starts that could run past this (at most the lease less a
  // timeout); six waves of timeouts by default, what a full batch over the endpoint's connections takes.
  endpointBudgetMs: Config.integer("WEBHOOK_ENDPOINT_BUDGET_MS").pipe(Config.withDefault(60_000)),
  // Endpoints an org may have (disabled ones count; deleted ones do not): Webhooks.ts.
  maxEndpointsPerOrg: Config.integer("WEBHOOK_MAX_ENDPOINTS_PER_ORG").pipe(Config.withDefault(20)),
  leaseMs: Config.integer("WEBHOOK_LEASE_MS").pipe(Config.withDefault(120_000)),
  retryBaseMs: Config.integer("WEBHOOK_RETRY_BASE_MS").pipe(Config.withDefault(5_000)),
  pollMs: Config.integer("EVENTS_POLL_MS").pipe(Config.withDefault(1_000)),
  allowPrivate: Config.boolean("WEBHOOK_ALLOW_PRIVATE_NETWORKS").pipe(Config.withDefault(false)),
  publicUrl: Config.string("PUBLIC_URL").pipe(Config.option)
})

/** At most this long between two reads of which orgs have deliveries due while orgs keep their turns. */
const REREAD_MS = 50

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

    const slackFacts = yield* SlackAppFacts

    /** The body sent: the event as the claim built it, or the Slack message made from it (`facts`: a `slack_app` one's). */
    const rawBodyOf = (delivery: ClaimedDelivery, facts: Facts | undefined) =>
      JSON.stringify(
        delivery.format === "slack"
          ? slackMessage(delivery.body, publicUrl)
          : delivery.format === "slack_app"
          ? slackAppMessage(delivery.body, publicUrl, facts ?? NO_FACTS)
          : delivery.body
      )

    /**
     * One attempt under `span`, which ends when the answer is in (at the span clock's time, when the tracer
     * keeps timing); resolves with the attempt's result.
     */
    const sendUnder = (
      delivery: ClaimedDelivery,
      span: Tracer.Span,
      unixSeconds: number,
      timing: boolean,
      clock: Clock.Clock,
      dispatcher: Dispatcher,
      facts: Facts | undefined
    ): Promise<AttemptResult> => {
      const secret = secretOf(delivery.secretSealed)
      const sent: Promise<AttemptResult> = Option.isNone(secret)
        ? Promise.resolve({ delivered: false, statusCode: null, durationMs: 0, error: "the signing secret cannot be opened with ACS_SECRETS_KEY", response: null })
        : send({
          url: delivery.url,
          secret: secret.value,
          eventId: delivery.eventId,
          rawBody: rawBodyOf(delivery, facts),
          unixSeconds,
          timeoutMs: config.timeoutMs,
          allowPrivate: config.allowPrivate,
          traceParent: traceparentOf(span),
          dispatcher
        })
      return sent.then((result) => {
        span.end(timing ? clock.unsafeCurrentTimeNanos() : BigInt(0), Exit.succeed(result))
        return result
      })
    }

    // Each endpoint's lane: its own connections and its attempts in flight, apart from every other endpoint's.
    const clock = yield* Effect.clock
    const lanes = new EndpointLanes({
      concurrency: config.endpointConcurrency,
      // Within the lease whatever is configured: a batch that outlived it would be sent again by its rescuer.
      budgetMs: Math.max(config.timeoutMs, Math.min(config.endpointBudgetMs, config.leaseMs - config.timeoutMs)),
      timeoutMs: config.timeoutMs,
      now: () => clock.unsafeCurrentTimeMillis(),
      connect: (connections) => endpointDispatcher(config.allowPrivate, connections)
    })
    yield* Effect.addFinalizer(() => Effect.promise(() => lanes.close()))

    /**
     * A claimed group (a batch of an endpoint's first attempts, or its queued deliveries) sent through its
     * endpoint's lane, each attempt under a span of its own (a trace per attempt; polling an empty queue is not
     * traced: telemetry/TraceSampler.ts), then recorded: an attempt given no answer backs the endpoint off first,
     * so what was not sent and what failed wait for it; an answer ends a back-off. The attempts are promises,
     * not a fiber each: forking a fiber per attempt, and joining it (its FiberRefs merged back), cost CPU per
     * delivery for nothing an attempt needs.
     */
    const attemptGroup = (group: ReadonlyArray<ClaimedDelivery>, workerId: string) =>
      Effect.gen(function*() {
        const { webhookId, orgId } = group[0]!
        const timing = yield* FiberRef.get(FiberRef.currentTracerTimingEnabled)
        const unixSeconds = Math.floor(clock.unsafeCurrentTimeMillis() / 1000)
        const items: Array<{ readonly delivery: ClaimedDelivery; readonly span: Tracer.Span }> = []
        for (const delivery of group) {
          const span = yield* Effect.makeSpan("webhook.deliver", {
            ...HOT_SPAN,
            root: true,
            kind: "producer",
            attributes: { deliveryId: delivery.deliveryId, eventId: delivery.eventId, attempt: delivery.attempts },
            // The change the event describes (a request, an apply), which may be in another process, hours ago.
            links: linkTo(delivery.traceParent, { "acs.link": "event" })
          })
          items.push({ delivery, span })
        }
        // A Slack app's message names the account and the expiry: read for the whole group (an endpoint has one format).
        const facts = group[0]!.format === "slack_app"
          ? new Map((yield* slackFacts.forBodies(group.map((d) => d.body))).map((f, i) => [group[i]!.deliveryId, f]))
          : undefined
        const outcomes = yield* Effect.promise(() =>
          lanes.run(webhookId, items, ({ delivery, span }, dispatcher) =>
            sendUnder(delivery, span, unixSeconds, timing, clock, dispatcher, facts?.get(delivery.deliveryId)))
        )
        const unanswered = outcomes.some((o) => o.result !== null && o.result.statusCode === null)
        const answered = outcomes.some((o) => o.result !== null && o.result.statusCode !== null)
        // Backed off first: its waiting deliveries are then due no earlier than its next try, and so are these.
        const backoffMs = unanswered ? ((yield* deliveries.backOff(orgId, webhookId, config.retryBaseMs, MAX_BACKOFF_MS)) ?? 0) : 0
        if (!unanswered && answered && group[0]!.endpointFailing) {
          yield* deliveries.recovered(orgId, webhookId)
          yield* signal.wakeDeliveries
        }
        // Not sent because another group's attempt got no answer: the back-off it records keeps the endpoint from
        // being claimed; these wait the shortest retry meanwhile.
        const skippedDelayMs = (reason: SkipReason) => reason === "backoff" ? Math.max(backoffMs, config.retryBaseMs) : 0
        const attempts: Array<Attempt> = []
        const skipped: Array<{ readonly delivery: ClaimedDelivery; readonly delayMs: number }> = []
        for (const o of outcomes) {
          const { delivery, span } = o.item
          if (o.result === null) {
            span.attribute("acs.skipped", o.skipped)
            span.end(timing ? clock.unsafeCurrentTimeNanos() : BigInt(0), Exit.void)
            skipped.push({ delivery, delayMs: skippedDelayMs(o.skipped) })
            continue
          }
          const delayMs = Math.max(backoffMs, backoffMsOf(delivery.attempts, config.retryBaseMs))
          const outcome = deliveryOutcome({ delivered: o.result.delivered, firstOfBatch: delivery.batchId !== null, delayMs, windowLeftMs: delivery.windowLeftMs })
          yield* countWebhookDelivery(outcome)
          attempts.push({ delivery, result: o.result, outcome, delayMs })
        }
        let lost = 0
        const batchId = group[0]!.batchId
        if (batchId !== null) {
          // First attempts (a claim leases one batch of them) are recorded with their batch, the unsent ones too.
          const first: Array<FirstAttempt> = [...attempts, ...skipped.map((s) => ({ ...s, result: null }))]
          const { recorded, more } = yield* deliveries.firstAttempts(batchId, orgId, workerId, first)
          lost += first.length - recorded.size
          // Its events that came while the batch was out were skipped by the claims they woke: wake one for them,
          // to claim at once when the batch was full (a backlog: the worker that claimed it used to re-claim as
          // soon as it had sent it, and a gather would now hold the backlog back by its length).
          if (more) yield* (group.length >= config.batch ? signal.hurryDeliveries : signal.wakeDeliveries)
        } else {
          // Queued deliveries one by one (the delivered ones in one statement), then the endpoint's hold released.
          const deliveredOnes = attempts.filter((a) => a.outcome === "delivered")
          const recorded = yield* deliveries.delivered(workerId, orgId, deliveredOnes.map((a) => ({ deliveryId: a.delivery.deliveryId, result: a.result })))
          lost += deliveredOnes.filter((a) => !recorded.has(a.delivery.deliveryId)).length
          for (const a of attempts) {
            if (a.outcome === "delivered") continue
            const kept = a.outcome === "gave_up"
              ? yield* deliveries.giveUp(a.delivery, workerId, a.result)
              : yield* deliveries.retryLater(a.delivery, workerId, a.result, a.delayMs)
            if (!kept) lost++
          }
          for (const delayMs of new Set(skipped.map((s) => s.delayMs))) {
            const ids = skipped.filter((s) => s.delayMs === delayMs).map((s) => s.delivery.deliveryId)
            lost += ids.length - (yield* deliveries.notAttempted(workerId, orgId, ids, delayMs)).size
          }
          yield* deliveries.releaseRetries(orgId, webhookId, workerId)
          // The endpoint's next group, if it has one due, is claimable now.
          yield* (group.length >= config.batch ? signal.hurryDeliveries : signal.wakeDeliveries)
        }
        if (lost > 0) {
          yield* Effect.logWarning("webhook delivery lease lost before its outcome was recorded; the new owner records it").pipe(
            Effect.annotateLogs({ deliveries: lost })
          )
        }
      }).pipe(
        Effect.uninterruptible,
        Effect.catchAllCause((cause) => Effect.logError("webhook delivery group failed; its lease runs out and it is sent again", cause))
      )

    // The groups out, each recorded by a fiber of its own; the workers never wait for them. At shutdown (the
    // finalizers run last first) no attempt starts any more, then the groups end and are recorded.
    const out = yield* FiberSet.make()
    yield* Effect.addFinalizer(() => Effect.sync(() => lanes.stop()))

    /** The claim's groups: its batch of first attempts, and its queued deliveries by endpoint. */
    const dispatch = (batch: ReadonlyArray<ClaimedDelivery>, workerId: string) => {
      const groups = new Map<string, Array<ClaimedDelivery>>()
      for (const delivery of batch) {
        const key = delivery.batchId ?? delivery.webhookId
        const group = groups.get(key)
        if (group === undefined) groups.set(key, [delivery])
        else group.push(delivery)
      }
      return Effect.forEach(groups.values(), (group) => FiberSet.run(out, attemptGroup(group, workerId)), { discard: true })
    }

    // Deliveries a second this instance's workers claim (DeliveryGather.ts), as of `rateAt`.
    let rate = 0
    let rateAt = 0

    // The orgs this instance's workers claim from next, in turn (docs/decisions/events-and-webhooks.md "Deliveries are
    // claimed per org, in turn"): those a read of the queue found ready, and an org whose claim saw more of its
    // deliveries waiting, at the back, so a flooded org gets one claim a turn like any other. Insertion order is the
    // turn order; an org is in it once.
    const turns = new Set<string>()
    // When the queue was last read (ms since the epoch), and when the first of the orgs it found not ready is due
    // (null: none was).
    let readAt = Number.NEGATIVE_INFINITY
    let laterDueAt: number | null = null
    const nextOrg = () => {
      const first = turns.values().next()
      if (first.done === true) return undefined
      turns.delete(first.value)
      return first.value
    }

    const loop = (workerId: string) => {
      // How long to wait for a wake before the next claim (undefined: claim at once).
      let waitMs: number | undefined
      return Effect.gen(function*() {
        let woken = false
        if (waitMs !== undefined) {
          woken = yield* signal.nextDelivery(waitMs)
          waitMs = undefined
          // Woken, most often by one commit: the commits of the gather join its batch (and wake no other worker), so
          // a busy org's deliveries share their claim and their record instead of paying both for each event.
          if (woken) yield* signal.gatherDeliveries(gatherMs(nextRate(rate, (yield* Clock.currentTimeMillis) - rateAt, 0), config.batch))
        }
        // The queue is read when a wake says there is new work (wakes name no org), when no org is in turn, and
        // while orgs keep their turns at least every REREAD_MS: an org that has just got work waits no longer
        // than that for its turn, whatever another's flood.
        if (woken || turns.size === 0 || (yield* Clock.currentTimeMillis) - readAt >= REREAD_MS) {
          const found = yield* Effect.withTracerEnabled(deliveries.readyOrgs, false)
          readAt = yield* Clock.currentTimeMillis
          laterDueAt = found.nextDueInMs === null ? null : readAt + found.nextDueInMs
          for (const org of found.ready) turns.add(org)
        }
        const orgId = nextOrg()
        if (orgId === undefined) {
          waitMs = Math.max(10, Math.min(config.pollMs, laterDueAt === null ? config.pollMs : laterDueAt - (yield* Clock.currentTimeMillis)))
          return
        }
        const claimedAt = yield* Clock.currentTimeMillis
        const { batch, more, nextDueInMs } = yield* Effect.withTracerEnabled(deliveries.claim(workerId, orgId, config.leaseMs, config.batch), false)
        // Workers' claims may end out of order: the estimate stays as of the latest.
        rate = nextRate(rate, claimedAt - rateAt, batch.length)
        rateAt = Math.max(rateAt, claimedAt)
        if (more) turns.add(orgId)
        // More is due: another waiting worker starts on it while this one sends.
        if (turns.size > 0) yield* signal.wakeDeliveries
        if (batch.length > 0) yield* dispatch(batch, workerId)
        if (turns.size > 0) return
        // Nothing else was due at the claim: wait for a wake, or for the next one due (a retry, a lease running
        // out), at most the poll.
        const now = yield* Clock.currentTimeMillis
        const dues = [nextDueInMs === null ? null : claimedAt + nextDueInMs, laterDueAt].filter((at): at is number => at !== null)
        waitMs = Math.max(10, Math.min(config.pollMs, ...dues.map((at) => at - now)))
      }).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.interrupt
            : Effect.logError("webhook worker iteration failed", cause).pipe(Effect.zipRight(Effect.sync(() => {
              waitMs = config.pollMs
            })))
        ),
        Effect.forever
      )
    }

    for (let index = 0; index < config.concurrency; index++) yield* Effect.forkScoped(loop(`${instance}#${index}`))
  })
)
