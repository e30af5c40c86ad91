/**
 * Traces over OTLP/HTTP (docs/operations.md), on only when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set and the SDK is not disabled (`OTEL_SDK_DISABLED=true`,
 * `OTEL_TRACES_EXPORTER=none`). The exporter follows `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL`: `http/protobuf`
 * (the specification's default) or `http/json` (telemetry/OtlpTracer.ts). Effect's spans (`operation.<name>`, the
 * services', `sql.execute`, the upstream client's, `http.server …`) become OpenTelemetry spans.
 */
import { HttpMiddleware } from "@effect/platform"
import { Config, ConfigError, Effect, Either, Layer } from "effect"

/** Paths probed every few seconds: a span each would bury the traces worth reading. */
const UNTRACED_PATHS = ["/healthz", "/readyz", "/metrics"]

const optionalText = (name: string) => Config.string(name).pipe(Config.withDefault(""), Config.map((value) => value.trim()))

export const TracingConfig = Config.all({
  endpoint: optionalText("OTEL_EXPORTER_OTLP_ENDPOINT"),
  tracesEndpoint: optionalText("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
  protocol: optionalText("OTEL_EXPORTER_OTLP_PROTOCOL"),
  tracesProtocol: optionalText("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
  sdkDisabled: optionalText("OTEL_SDK_DISABLED"),
  tracesExporter: optionalText("OTEL_TRACES_EXPORTER")
}).pipe(
  Config.mapOrFail((config) => {
    const on = (config.endpoint !== "" || config.tracesEndpoint !== "") && config.sdkDisabled.toLowerCase() !== "true" &&
      config.tracesExporter.toLowerCase() !== "none"
    const protocol = config.tracesProtocol !== "" ? config.tracesProtocol : config.protocol !== "" ? config.protocol : "http/protobuf"
    if (protocol !== "http/protobuf" && protocol !== "http/json") {
      return Either.left(ConfigError.InvalidData(
        ["OTEL_EXPORTER_OTLP_PROTOCOL"],
        `acs exports traces over OTLP/HTTP: use http/protobuf (the default) or http/json, not ${protocol}`
      ))
    }
    return Either.right({ on, protocol: protocol as "http/protobuf" | "http/json" })
  })
)

/** The OpenTelemetry tracer, when tracing is on; nothing otherwise (Effect's spans then stay in-process). */
const TracerLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const { on, protocol } = yield* TracingConfig
    if (!on) return Layer.empty
    // The SDK and its exporters load only here: a process that does not trace does not pay for them.
    const { otlpTracerLayer } = yield* Effect.promise(() => import("./OtlpTracer.ts"))
    return otlpTracerLayer(protocol)
  })
).pipe(Layer.orDie)

/**
 * `layer` with its spans exported (when tracing is on) and the probes untraced: everything `layer` builds and
 * forks (the HTTP server's requests, the workers) runs under the tracer. Spans still in the batch are
 * flushed at shutdown.
 */
export const withTracing = <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  layer.pipe(HttpMiddleware.withTracerDisabledForUrls(UNTRACED_PATHS), Layer.provide(TracerLive))
