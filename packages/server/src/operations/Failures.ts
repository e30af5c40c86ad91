/**
 * Every failure of an operation as a declared SPEC error, whatever the surface: declared errors as they are;
 * decode failures, malformed JSON and text Postgres cannot store as 400 `invalid_request` naming the problem;
 * an unknown route as 404 `not_found`; the database out of reach (however the service met it) as 503
 * `database_unavailable`; anything else a defect, logged with its cause, and 500 `internal` with a generic
 * message. REST's envelope middleware, the RPC procedures and the MCP tools answer with it.
 */
import { type AcsError, Internal, InvalidRequest, isAcsError, NotFound } from "@acs/domain/Errors"
import { HttpApiError, HttpServerError } from "@effect/platform"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Option, ParseResult } from "effect"
import { databaseUnavailable, isDatabaseUnreachable } from "../db/DatabaseOutage.ts"

/** Messages quote what the client sent (a value, a path); past this many characters the quote is cut. */
const MAX_QUOTE_CHARS = 200

const clip = (text: string): string => (text.length > MAX_QUOTE_CHARS ? `${text.slice(0, MAX_QUOTE_CHARS)}…` : text)

const describeIssues = (issues: ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>): string =>
  issues.slice(0, 5).map((issue) => {
    const path = issue.path.length === 0 ? "body" : clip(issue.path.map(String).join("."))
    return `${path}: ${clip(issue.message)}`
  }).join("; ")

/** 400 with a message that names the field, for the platform's own decode failure. */
export const fromDecodeError = (error: HttpApiError.HttpApiDecodeError): InvalidRequest =>
  new InvalidRequest({ message: `invalid request: ${describeIssues(error.issues) || error.message}` })

export const fromParseError = (error: ParseResult.ParseError): InvalidRequest =>
  new InvalidRequest({ message: `invalid request: ${describeIssues(ParseResult.ArrayFormatter.formatErrorSync(error))}` })

/**
 * Postgres refuses text it cannot store (a NUL character, or bytes outside the encoding: SQLSTATE 22021 or
 * 22P05). Such text can only have come from the request, so the request is malformed: 400, not 500.
 */
const UNSTORABLE_TEXT = new Set(["22021", "22P05"])
const isUnstorableText = (u: unknown): boolean =>
  u instanceof SqlError && typeof u.cause === "object" && u.cause !== null && "code" in u.cause &&
  UNSTORABLE_TEXT.has(String(u.cause.code))

/** Maps a cause to a declared error; `None` for an interruption, which is left alone. */
export const toDeclaredError = (cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure)) {
      const error = failure.value
      if (isAcsError(error)) return Option.some<AcsError>(error)
      if (error instanceof HttpApiError.HttpApiDecodeError) return Option.some(fromDecodeError(error))
      if (ParseResult.isParseError(error)) return Option.some(fromParseError(error))
      if (error instanceof HttpServerError.RouteNotFound) {
        return Option.some(new NotFound({ message: `no route ${error.request.method} ${clip(error.request.url.split("?")[0] ?? "")}` }))
      }
    }
    // Most services make an SqlError a defect: an outage is found among the failures and defects alike.
    const unreachable = [...Cause.failures(cause), ...Cause.defects(cause)].find(isDatabaseUnreachable)
    if (unreachable !== undefined) {
      yield* Effect.logWarning("the database is unavailable", unreachable)
      return Option.some<AcsError>(databaseUnavailable)
    }
    const defect = Cause.dieOption(cause)
    if (isUnstorableText(Option.getOrUndefined(failure)) || isUnstorableText(Option.getOrUndefined(defect))) {
      return Option.some(new InvalidRequest({ message: "invalid request: a text value holds a character that cannot be stored, such as NUL (U+0000)" }))
    }
    if (Option.isSome(defect) && defect.value instanceof HttpServerError.RequestError) {
      return Option.some(new InvalidRequest({ message: `invalid request: the body could not be read as JSON (${defect.value.description ?? "malformed"}); bodies are limited to 1 MiB` }))
    }
    if (Cause.isInterruptedOnly(cause)) return Option.none()
    yield* Effect.logError("unhandled failure", cause)
    return Option.some(new Internal({ message: "internal error; the request id identifies it in the server's logs" }))
  })
