/**
 * Outermost HTTP middleware: a request id (taken from X-Request-Id when sane, else made), echoed in the
 * response and annotated on every log line of the request; one structured log line per request, saying who
 * called (`keyId` or `personId`), the operation, the RPC procedure or MCP tool (telemetry/RequestFacts.ts)
 * and the trace id; and the request's HTTP metrics (`acs_http_requests_total`, `…_duration_seconds`).
 */
import { HttpApp, HttpMiddleware, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Effect, Exit, FiberRef, LogLevel } from "effect"
import { newId } from "../db/Ids.ts"
import { countHttpRequest } from "../telemetry/Metrics.ts"
import { currentRequestFacts, factAnnotations, type RequestFacts } from "../telemetry/RequestFacts.ts"
import { currentTraceId } from "../telemetry/TraceContext.ts"

const SANE_ID = /^[\w.:-]{1,128}$/

export const requestLog = HttpMiddleware.make((app) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const incoming = request.headers["x-request-id"]
    const requestId = incoming !== undefined && SANE_ID.test(incoming) ? incoming : newId("req")
    const started = yield* Clock.currentTimeMillis
    // Filled in by whatever learns the caller and the operation further in (the front door, /rpc, /mcp).
    const facts: RequestFacts = {}
    // On the answers the API builds (errors included, via the pre-response handler) and on answers given
    // before the API is reached (the request guard's refusals).
    yield* HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "x-request-id", requestId))
    )
    return yield* app.pipe(
      Effect.map((response) => HttpServerResponse.setHeader(response, "x-request-id", requestId)),
      Effect.onExit((exit) =>
        Effect.gen(function*() {
          const status = Exit.isSuccess(exit) ? exit.value.status : 500
          const durationMs = (yield* Clock.currentTimeMillis) - started
          yield* countHttpRequest(facts.operation ?? "none", status, durationMs / 1000)
          // Below the log level (LOG_LEVEL=warn in a busy deployment) the line is not even built.
          if (LogLevel.lessThan(LogLevel.Info, yield* FiberRef.get(FiberRef.currentMinimumLogLevel))) return
          const traceId = yield* currentTraceId
          yield* Effect.logInfo("request").pipe(Effect.annotateLogs({
            method: request.method,
            path: request.url.split("?")[0],
            status,
            durationMs,
            ...factAnnotations(facts),
            ...(traceId === undefined ? {} : { traceId })
          }))
        })
      ),
      Effect.locally(currentRequestFacts, facts),
      Effect.annotateLogs({ requestId })
    )
  })
)
