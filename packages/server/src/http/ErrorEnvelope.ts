/**
 * The API-level middleware that makes every failure an envelope (the mapping is operations/Failures.ts):
 * declared errors are encoded as is; decode failures, malformed JSON, oversized bodies and text Postgres
 * cannot store become 400 `invalid_request` naming the problem; an unknown route becomes 404 `not_found`;
 * anything else is a defect, logged with its cause, answered 500 `internal` with a generic message.
 */
import { type AcsError, toEnvelope } from "@acs/domain/Errors"
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { toDeclaredError } from "../operations/Failures.ts"

export { fromDecodeError, fromParseError, toDeclaredError } from "../operations/Failures.ts"

/** Seconds for `Retry-After`: a retryable error's `retry_after_ms`, rounded up, at least 1. */
export const retryAfterSeconds = (retryAfterMs: number): string => String(Math.max(1, Math.ceil(retryAfterMs / 1000)))

/** The envelope response for a declared error, with `Retry-After` on the retryable codes (those with `retry_after_ms`). */
export const envelopeResponse = (error: AcsError) => {
  const { body, status } = toEnvelope(error)
  const response = HttpServerResponse.unsafeJson(body, { status })
  return "retry_after_ms" in error
    ? HttpServerResponse.setHeader(response, "retry-after", retryAfterSeconds(error.retry_after_ms))
    : response
}

export const ErrorEnvelopeLive = HttpApiBuilder.middleware((app) =>
  app.pipe(
    Effect.catchAllCause((cause) =>
      toDeclaredError(cause).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.failCause(cause),
          onSome: (error) => Effect.succeed(envelopeResponse(error))
        }))
      )
    )
  )
)
