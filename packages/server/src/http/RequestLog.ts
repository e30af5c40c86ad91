/**
 * Outermost HTTP middleware: a request id (taken from X-Request-Id when sane, else made), echoed in the
 * response and annotated on every log line of the request; one structured log line per request; the
 * 1 MiB body limit.
 */
import { HttpApp, HttpMiddleware, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Exit, Option } from "effect"
import { newId } from "../db/Ids.ts"
import { envelopeResponse } from "./ErrorEnvelope.ts"
import { InvalidRequest } from "@acs/domain/Errors"

export const MAX_BODY_BYTES = 1024 * 1024

const SANE_ID = /^[\w.:-]{1,128}$/

export const requestLog = HttpMiddleware.make((app) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const incoming = request.headers["x-request-id"]
    const requestId = incoming !== undefined && SANE_ID.test(incoming) ? incoming : newId("req")
    const started = Date.now()
    yield* HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "x-request-id", requestId))
    )
    const length = Number(request.headers["content-length"] ?? "0")
    const handled = length > MAX_BODY_BYTES
      ? Effect.succeed(envelopeResponse(new InvalidRequest({ message: "invalid request: the body is larger than 1 MiB" })))
      : app
    return yield* handled.pipe(
      HttpServerRequest.withMaxBodySize(Option.some(MAX_BODY_BYTES)),
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
