/**
 * Outermost HTTP middleware: a request id (taken from X-Request-Id when sane, else made), echoed in the
 * response and annotated on every log line of the request; one structured log line per request, saying who
 * called (`keyId` or `personId`), the operation, the RPC procedure or MCP tool (telemetry/RequestFacts.ts)
 * and the trace id; and the request's HTTP metrics (`acs_http_requests_total`, `…_duration_seconds`).
 */
import { HttpApp, HttpMiddleware, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Effect, Exit, FiberRef, HashMap, LogLevel } from "effect"
import { newId } from "../db/Ids.ts"
import { countHttpRequest } from "../telemetry/Metrics.ts"
import { currentRequestFacts, factAnnotations, type RequestFacts } from "../telemetry/RequestFacts.ts"
import { currentTraceId } from "../telemetry/TraceContext.ts"
import { pathOf } from "./RequestPath.ts"

const SANE_ID = /^[\w.:-]{1,128}$/

/** The request's metrics and, at LOG_LEVEL=info or below, its log line, once it is answered (or failed). */
const finish = (
  request: HttpServerRequest.HttpServerRequest,
  facts: RequestFacts,
  started: number,
  exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>
) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const status = Exit.isSuccess(exit) ? exit.value.status : 500
    const durationMs = now - started
    return Effect.zipRight(
      countHttpRequest(facts.operation ?? "none", status, durationMs / 1000),
      // Below the log level (LOG_LEVEL=warn in a busy deployment) the line is not even built.
      FiberRef.getWith(FiberRef.currentMinimumLogLevel, (level) =>
        LogLevel.lessThan(LogLevel.Info, level)
          ? Effect.void
          : Effect.flatMap(currentTraceId, (traceId) =>
            Effect.logInfo("request").pipe(Effect.annotateLogs({
              method: request.method,
              path: pathOf(request.url),
              status,
              durationMs,
              ...factAnnotations(facts),
              ...(traceId === undefined ? {} : { traceId })
            }))))
    )
  })

/**
 * The outermost middleware of the fiber the server forks for each request (HttpServerLive): nothing of the
 * request runs after it in that fiber but the writing of its response, so the request's facts and its log
 * annotation are set for the rest of the fiber rather than scoped to the app (a scoped value costs an
 * uninterruptible restore, twice, on every request: bench/history.md). Chained without a generator, for the same reason.
 */
export const requestLog = HttpMiddleware.make((app) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const incoming = request.headers["x-request-id"]
    const requestId = incoming !== undefined && SANE_ID.test(incoming) ? incoming : newId("req")
    const withId = (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.setHeader(response, "x-request-id", requestId)
    // Filled in by whatever learns the caller and the operation further in (the front door, /rpc, /mcp).
    const facts: RequestFacts = {}
    return Effect.flatMap(Clock.currentTimeMillis, (started) =>
      FiberRef.set(currentRequestFacts, facts).pipe(
        Effect.zipRight(FiberRef.update(FiberRef.currentLogAnnotations, HashMap.set<string, unknown>("requestId", requestId))),
        // On the answers the API builds (errors included, via the pre-response handler) and on answers given
        // before the API is reached (the request guard's refusals).
        Effect.zipRight(HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(withId(response)))),
        Effect.zipRight(app),
        Effect.map(withId),
        Effect.onExit((exit) => finish(request, facts, started, exit))
      ))
  })
)
