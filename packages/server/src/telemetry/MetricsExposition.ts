/**
 * `/metrics` in the Prometheus text format (docs/operations.md): Effect's metrics (telemetry/Metrics.ts)
 * read through @effect/opentelemetry's metric producer and written by OpenTelemetry's Prometheus serializer
 * (telemetry/PrometheusText.ts), so the exposition is the library's, not ours. Off by default: `METRICS_ENABLED=true` serves it on the API's
 * port, `METRICS_PORT` on a port of its own (on `METRICS_HOST`, loopback unless set), both without auth.
 * `acs_jobs_ready` is read from PostgreSQL at each scrape.
 */
import { type HttpApp, HttpMiddleware, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { SqlClient, SqlSchema } from "@effect/sql"
import { Config, ConfigError, Effect, Either, Layer, Metric, Option, Schema } from "effect"
import { createServer } from "node:http"
import { jobsReady, syncRows } from "./Metrics.ts"

export const METRICS_PATH = "/metrics"

/** The Prometheus text format's own content type (version 0.0.4). */
const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

/** `METRICS_PORT`: a port, or unset (also when empty). */
const metricsPort = Config.string("METRICS_PORT").pipe(
  Config.withDefault(""),
  Config.mapOrFail((text) => {
    if (text.trim() === "") return Either.right(Option.none<number>())
    const port = Number(text)
    return Number.isInteger(port) && port >= 1 && port <= 65535
      ? Either.right(Option.some(port))
      : Either.left(ConfigError.InvalidData(["METRICS_PORT"], `METRICS_PORT must be a port number (1-65535), not ${text}`))
  })
)

export const MetricsConfig = Config.all({
  onApiPort: Config.boolean("METRICS_ENABLED").pipe(Config.withDefault(false)),
  port: metricsPort,
  host: Config.string("METRICS_HOST").pipe(Config.withDefault("127.0.0.1"))
})

const ReadyJobs = Schema.Struct({ ready: Schema.Number })

export class MetricsExposition extends Effect.Service<MetricsExposition>()("acs/MetricsExposition", {
  effect: Effect.gen(function*() {
    const config = yield* MetricsConfig.pipe(Effect.orDie)
    const sql = yield* SqlClient.SqlClient
    // The exposition's libraries load at the first scrape, not at start: the server listens already.
    const exposition = Effect.flatten(
      yield* Effect.cached(Effect.flatMap(Effect.promise(() => import("./PrometheusText.ts")), (module) => module.makePrometheusText))
    )
    // Metrics without labels are shown from the start, at zero, rather than appearing on their first change.
    yield* Effect.all([Metric.value(syncRows), Metric.value(jobsReady)], { discard: true })

    const readyJobs = SqlSchema.single({
      Request: Schema.Void,
      Result: ReadyJobs,
      execute: () =>
        sql`SELECT count(*)::int AS ready FROM jobs
            WHERE run_at <= statement_timestamp() AND (lease_until IS NULL OR lease_until < statement_timestamp())`
    })

    /** The exposition as of now. */
    const scrape = Effect.gen(function*() {
      const { ready } = yield* readyJobs(undefined).pipe(Effect.orDie)
      yield* Metric.set(jobsReady, ready)
      return yield* exposition
    }).pipe(Effect.withSpan("Metrics.scrape"))

    const answer = Effect.map(scrape, (text) => HttpServerResponse.text(text, { contentType: CONTENT_TYPE }))

    return { onApiPort: config.onApiPort, port: config.port, host: config.host, scrape, answer } as const
  })
}) {}

const isMetricsPath = (url: string) => url.startsWith(METRICS_PATH) && (url.length === METRICS_PATH.length || url[METRICS_PATH.length] === "?")

/** `/metrics` on the API's port when `METRICS_ENABLED=true`; every other request goes on to `app`. */
export const withMetrics = <E, R>(app: HttpApp.Default<E, R>) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest | MetricsExposition> =>
    !isMetricsPath(request.url) || request.method !== "GET"
      ? app
      : Effect.flatMap(MetricsExposition, (exposition): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
        exposition.onApiPort ? exposition.answer : app))

/** `/metrics` alone on `METRICS_PORT`, when set (404 for any other path); nothing otherwise. */
export const MetricsPortLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const exposition = yield* MetricsExposition
    if (exposition.port._tag === "None") return Layer.empty
    const app = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (!isMetricsPath(request.url)) return HttpServerResponse.text("not found: this port serves GET /metrics\n", { status: 404 })
      if (request.method !== "GET") return HttpServerResponse.text("GET /metrics\n", { status: 405, headers: { allow: "GET" } })
      return yield* exposition.answer
    })
    return HttpServer.serve(app).pipe(
      HttpServer.withLogAddress,
      Layer.provide(NodeHttpServer.layer(createServer, { port: exposition.port.value, host: exposition.host })),
      HttpMiddleware.withTracerDisabledWhen(() => true)
    )
  })
).pipe(Layer.provide(MetricsExposition.Default))
