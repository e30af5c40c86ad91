/**
 * Every metric acs exposes (docs/operations.md), as Effect metrics: the places that count call the one-line
 * helpers below. They are always recorded (an in-memory add); `/metrics` serves them only when enabled
 * (telemetry/MetricsExposition.ts). Labels hold bounded sets only: operation names, kinds, statuses.
 */
import { countUpstreamRequest, upstreamRequests } from "@acs/upstream/UpstreamMetrics"
import { Effect, Metric, MetricBoundaries, MetricLabel } from "effect"

export { countUpstreamRequest, upstreamRequests }

/**
 * The tagged metrics made so far, by metric and labels. Effect finds a tagged metric's hook by the identity of
 * its label array: a tagged metric made anew on every request would hash its labels and look them up in the
 * registry each time. Label sets are bounded, so this stays small.
 */
const tagged = new Map<string, unknown>()
/** A number per metric object, for the tagged metrics' keys. */
const metricIds = new Map<unknown, number>()

/** The metric with these labels (data-first: the piped form loses the metric's input type). */
const labelled = <Type, In, Out>(metric: Metric.Metric<Type, In, Out>, labels: Readonly<Record<string, string>>) => {
  let key = ""
  for (const name in labels) key += `${name}=${labels[name]};`
  const made = metricIds.get(metric) ?? metricIds.set(metric, metricIds.size).get(metric)!
  key = `${made}|${key}`
  const found = tagged.get(key) as Metric.Metric<Type, In, Out> | undefined
  if (found !== undefined) return found
  const metricWithLabels = Metric.taggedWithLabels(metric, Object.entries(labels).map(([name, value]) => MetricLabel.make(name, value)))
  tagged.set(key, metricWithLabels)
  return metricWithLabels
}

const seconds = (bounds: ReadonlyArray<number>) => MetricBoundaries.fromIterable(bounds)

export const httpRequests = Metric.counter("acs_http_requests_total", {
  description: "HTTP requests answered, by operation (the operation table's name, or none) and status code",
  incremental: true
})

export const httpRequestDuration = Metric.histogram(
  "acs_http_request_duration_seconds",
  seconds([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
  "Time to answer an HTTP request, by operation"
)

export const proposals = Metric.counter("acs_proposals_total", {
  description: "Proposals recorded, by kind and mode (auto_applied, queued; invalid for a local validation failure)",
  incremental: true
})

export const actions = Metric.counter("acs_actions_total", {
  description: "Changes of an action's status, by the status it reached",
  incremental: true
})

export const changesets = Metric.counter("acs_changesets_total", {
  description: "Changes of a changeset's status, by the event it wrote (submitted, queued, approved, applied, …)",
  incremental: true
})

export const applyLag = Metric.histogram(
  "acs_apply_lag_seconds",
  seconds([0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400]),
  "Time from an action's approval (or auto-approval at proposal) to its apply, by kind"
)

export const jobsReady = Metric.gauge("acs_jobs_ready", {
  description: "Apply jobs due and not held by a worker, read from PostgreSQL at scrape time (the same on every instance)"
})

export const syncQueueAccounts = Metric.gauge("acs_sync_queue_accounts", {
  description: "Accounts in the sync queue at the last scheduling pass of this instance, by state (fresh, due, running, waiting)"
})

const SYNC_QUEUE_STATES = ["fresh", "due", "running", "waiting"] as const
const syncQueueGauges = SYNC_QUEUE_STATES.map((state) => [state, Metric.tagged(syncQueueAccounts, "state", state)] as const)

/** The queue's counts by state after a pass (warehouse/SyncScheduler.ts); a state no account is in shows 0. */
export const setSyncQueueGauges = (states: ReadonlyArray<(typeof SYNC_QUEUE_STATES)[number]>): Effect.Effect<void> =>
  Effect.forEach(syncQueueGauges, ([state, gauge]) => Metric.set(gauge, states.filter((s) => s === state).length), { discard: true })

export const syncRows = Metric.counter("acs_sync_rows_total", {
  description: "Warehouse rows written by syncs",
  incremental: true
})

export const syncDuration = Metric.histogram(
  "acs_sync_duration_seconds",
  seconds([0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800]),
  "Time a sync took, by outcome (succeeded, failed)"
)

export const rateLimited = Metric.counter("acs_rate_limited_total", {
  description: "Requests refused by a rate limit (429), by bucket",
  incremental: true
})

export const webhookDeliveries = Metric.counter("acs_webhook_deliveries_total", {
  description: "Webhook delivery attempts, by result (delivered; failed, to be retried; gave_up, out of retries)",
  incremental: true
})

export const guardReviews = Metric.counter("acs_guard_reviews_total", {
  description: "The guard's reviews of applied changes, by verdict (passed, failed, inconclusive)",
  incremental: true
})

/** One answered HTTP request. */
export const countHttpRequest = (operation: string, status: number, durationSeconds: number): Effect.Effect<void> =>
  Effect.zipRight(
    Metric.increment(labelled(httpRequests, { operation, status: String(status) })),
    Metric.update(labelled(httpRequestDuration, { operation }), durationSeconds)
  )

/** One recorded proposal; `mode` null is a proposal refused by local validation (recorded as failed). */
export const countProposal = (kind: string, mode: string | null): Effect.Effect<void> =>
  Metric.increment(labelled(proposals, { kind, mode: mode ?? "invalid" }))

/** One action reaching `status`; `n` of them, decided together (a changeset's members). */
export const countAction = (status: string, n = 1): Effect.Effect<void> => Metric.incrementBy(labelled(actions, { status }), n)

/** A changeset's event (`changeset.applied` …), by what it says: `applied`. */
export const countChangeset = (event: string): Effect.Effect<void> =>
  Metric.increment(labelled(changesets, { status: event.replace(/^changeset\./, "") }))

/** An action of `kind` applied `lagSeconds` after its approval. */
export const observeApplyLag = (kind: string, lagSeconds: number): Effect.Effect<void> =>
  Metric.update(labelled(applyLag, { kind }), Math.max(0, lagSeconds))

/** One finished sync: its rows (when it wrote any) and its duration. */
export const countSync = (outcome: "succeeded" | "failed", rows: number, durationSeconds: number): Effect.Effect<void> =>
  Effect.zipRight(
    rows > 0 ? Metric.incrementBy(syncRows, rows) : Effect.void,
    Metric.update(labelled(syncDuration, { outcome }), durationSeconds)
  )

/** One request refused by the `bucket` rate limit. */
export const countRateLimited = (bucket: string): Effect.Effect<void> => Metric.increment(labelled(rateLimited, { bucket }))

/** One webhook delivery attempt's result. */
export const countWebhookDelivery = (result: "delivered" | "failed" | "gave_up"): Effect.Effect<void> =>
  Metric.increment(labelled(webhookDeliveries, { result }))

/** `n` reviews of the guard that reached `verdict`. */
export const countGuardReviews = (verdict: string, n: number): Effect.Effect<void> =>
  n > 0 ? Metric.incrementBy(labelled(guardReviews, { verdict }), n) : Effect.void
