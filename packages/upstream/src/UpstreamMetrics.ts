/**
 * The upstream client's one metric, declared here so the client can count without knowing the server; the
 * server's catalogue (packages/server/src/telemetry/Metrics.ts) re-exports it and serves it on `/metrics`.
 */
import { type Effect, Metric, MetricLabel } from "effect"

export const upstreamRequests = Metric.counter("acs_upstream_requests_total", {
  description: "Requests to the ad platform, by endpoint (method and path, ids as :id) and HTTP status (or error: a timeout or no answer)",
  incremental: true
})

/** The endpoint label of a call: its method and path with every number as `:id`, so the label set stays small. */
export const endpointLabel = (method: string, path: string): string => `${method} ${path.split("?")[0]!.replace(/\d+/g, ":id")}`

// One labelled counter per endpoint and status, made once: labelling hashes the labels on every call.
const counters = new Map<string, Effect.Effect<void>>()

/** Counts one request to `endpoint` that ended with `status` (a code, or `error` when no answer came). */
export const countUpstreamRequest = (endpoint: string, status: number | "error"): Effect.Effect<void> => {
  const key = `${endpoint} ${status}`
  let increment = counters.get(key)
  if (increment === undefined) {
    increment = Metric.increment(
      Metric.taggedWithLabels(upstreamRequests, [MetricLabel.make("endpoint", endpoint), MetricLabel.make("status", String(status))])
    )
    counters.set(key, increment)
  }
  return increment
}
