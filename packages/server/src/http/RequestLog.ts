/**
 * Outermost HTTP middleware: a request id (taken from X-Request-Id when sane, else made), echoed in the
 * response and annotated on every log line of the request, and one structured log line per request.
 */
import { HttpApp, HttpMiddleware, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Exit } from "effect"
import { newId } from "../db/Ids.ts"

const SANE_ID = /^[\w.:-]{1,128}$/

export const requestLog = HttpMiddleware.make((app) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const incoming = request.headers["x-request-id"]
    const requestId = incoming !== undefined && SANE_ID.test(incoming) ? incoming : newId("req")
    const started = Date.now()
    // On the answers the API builds (errors included, via the pre-response handler) and on answers given
    // before the API is reached (the request guard's refusals).
    yield* HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "x-request-id", requestId))
    )
    return yield* app.pipe(
      Effect.map((response) => HttpServerResponse.setHeader(response, "x-request-id", requestId)),
      Effect.onExit((exit) =>
        Effect.logInfo("request").pipe(Effect.annotateLogs({
          method: request.method,
          path: request.url.split("?")[0],
          status: Exit.isSuccess(exit) ? exit.value.status : 500,
          durationMs: Date.now() - started
        }))
      ),
      Effect.annotateLogs({ requestId })
    )
  })
)
