/**
 * Effect's metrics in the Prometheus text format: @effect/opentelemetry's metric producer reads Effect's
 * registry, OpenTelemetry's Prometheus serializer writes the exposition. Loaded only when `/metrics` is
 * served (telemetry/MetricsExposition.ts imports it on demand).
 */
import { Metrics as OtelMetrics } from "@effect/opentelemetry"
import { PrometheusSerializer } from "@opentelemetry/exporter-prometheus"
import { Effect } from "effect"
import { TelemetryResourceLive } from "./TelemetryResource.ts"

/** What makes the exposition of every metric as of now. */
export const makePrometheusText: Effect.Effect<Effect.Effect<string>> = Effect.gen(function*() {
  const producer = yield* OtelMetrics.makeProducer
  // No scope label on every series (there is one scope); `target_info` carries the resource (service.name).
  const serializer = new PrometheusSerializer(undefined, false, undefined, false, true)
  return Effect.map(Effect.promise(() => producer.collect()), (collected) => serializer.serialize(collected.resourceMetrics))
}).pipe(Effect.provide(TelemetryResourceLive))
