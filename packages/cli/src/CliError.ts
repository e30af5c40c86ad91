/**
 * The CLI's own failures and the exit code of every outcome, so scripts can branch on it:
 *
 * - 0 ok
 * - 1 unexpected failure, or trouble on the server's or the upstream's side: `internal`, `upstream_error`
 *   (not safe to retry: the call may have partly written), `connection_error` (needs a human),
 *   `unreachable` (acs did not answer), `sync_failed`, a database that cannot be opened
 * - 2 bad input or something not found: `invalid_request`, `not_found`, `account_not_found`,
 *   `validation_failed`, `no_op`, `bid_strategy_conflict`, `not_revertible`, `conflict`, a bad command line,
 *   `members_refused` (some proposals of `acs changeset add` refused)
 * - 3 refused: `unauthorized`, `forbidden_scope`, `account_mismatch`, `read_only_account`
 * - 4 retryable: `rate_limited`, `upstream_unavailable` and `database_unavailable` (after `retry_after_ms`), `sync_in_progress`
 */
import { ValidationError } from "@effect/cli"
import { SqlError } from "@effect/sql/SqlError"
import { type AcsError, type ErrorCode, isAcsError, toEnvelope } from "@acs/domain/Errors"
import { DatabaseBusy } from "@acs/server/db/DataDirLock"
import { Cause, Exit, Option, ParseResult, Schema } from "effect"

/** Bad input or a missing thing: the user can fix the command line. Exit code 2. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  message: Schema.String
}) {}

/** acs did not answer at `--url` (nothing listening, or not acs). Exit code 1. */
export class Unreachable extends Schema.TaggedError<Unreachable>()("Unreachable", {
  message: Schema.String
}) {}

/** A sync the command followed ended `failed`. Exit code 1. */
export class SyncFailed extends Schema.TaggedError<SyncFailed>()("SyncFailed", {
  message: Schema.String
}) {}

/** Some proposals of `acs changeset add` were refused (the others were added; the results say which). Exit code 2. */
export class MembersRefused extends Schema.TaggedError<MembersRefused>()("MembersRefused", {
  message: Schema.String
}) {}

/** A parse failure's issues, without the `undefined` alternative every optional field also reports: noise here. */
export const parseIssues = (error: ParseResult.ParseError): ReadonlyArray<ParseResult.ArrayFormatterIssue> =>
  ParseResult.ArrayFormatter.formatErrorSync(error).filter((issue) => !issue.message.startsWith("Expected undefined"))

export const EXIT_OK = 0
export const EXIT_FAILURE = 1
export const EXIT_USAGE = 2
export const EXIT_REFUSED = 3
export const EXIT_RETRYABLE = 4
export const EXIT_INTERRUPTED = 130

/** Every SPEC error code; typed as a complete record so a new code cannot be left unmapped. */
export const exitCodeOfErrorCode: Record<ErrorCode, number> = {
  internal: EXIT_FAILURE,
  upstream_error: EXIT_FAILURE,
  connection_error: EXIT_FAILURE,
  invalid_request: EXIT_USAGE,
  not_found: EXIT_USAGE,
  account_not_found: EXIT_USAGE,
  validation_failed: EXIT_USAGE,
  no_op: EXIT_USAGE,
  bid_strategy_conflict: EXIT_USAGE,
  not_revertible: EXIT_USAGE,
  conflict: EXIT_USAGE,
  unauthorized: EXIT_REFUSED,
  forbidden_scope: EXIT_REFUSED,
  account_mismatch: EXIT_REFUSED,
  read_only_account: EXIT_REFUSED,
  rate_limited: EXIT_RETRYABLE,
  upstream_unavailable: EXIT_RETRYABLE,
  database_unavailable: EXIT_RETRYABLE,
  sync_in_progress: EXIT_RETRYABLE
}

interface EnvelopeBody {
  readonly error: { readonly code: ErrorCode; readonly message: string } & Record<string, unknown>
  readonly retry_after_ms?: number
}

/** The error as the REST API would answer it: the one encoder of Errors.ts names its code and extras. */
const envelopeOf = (error: AcsError): EnvelopeBody => toEnvelope(error).body as EnvelopeBody

const codeOf = (error: unknown): Option.Option<number> => {
  if (isAcsError(error)) return Option.some(exitCodeOfErrorCode[envelopeOf(error).error.code])
  if (error instanceof UsageError || error instanceof MembersRefused || ValidationError.isValidationError(error)) {
    return Option.some(EXIT_USAGE)
  }
  return Option.none()
}

export const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return EXIT_OK
  if (Cause.isInterruptedOnly(exit.cause)) return EXIT_INTERRUPTED
  return Cause.failureOption(exit.cause).pipe(Option.flatMap(codeOf), Option.getOrElse(() => EXIT_FAILURE))
}

/** `acs: <code>: <message>`, then the envelope's extras (validation_errors, required_scope, retry_after_ms…). */
const describeAcsError = (error: AcsError): string => {
  const { error: { code, message, ...extras }, retry_after_ms } = envelopeOf(error)
  const details = Object.entries({ ...extras, ...(retry_after_ms === undefined ? {} : { retry_after_ms }) }).flatMap(
    ([name, value]) =>
      Array.isArray(value) ? [`  ${name}:`, ...value.map((item) => `    - ${String(item)}`)] : [`  ${name}: ${String(value)}`]
  )
  return [`acs: ${code}: ${message}`, ...details].join("\n")
}

/** What to print on stderr for a failure, or none when @effect/cli has printed it already. */
export const describeFailure = (cause: Cause.Cause<unknown>): Option.Option<string> => {
  if (Cause.isInterruptedOnly(cause)) return Option.none()
  return Option.match(Cause.failureOption(cause), {
    onNone: () => Option.some(`acs: unexpected failure\n${Cause.pretty(cause)}`),
    onSome: (error) => {
      if (ValidationError.isValidationError(error)) return Option.none()
      if (isAcsError(error)) return Option.some(describeAcsError(error))
      if (error instanceof UsageError || error instanceof DatabaseBusy) return Option.some(`acs: ${error.message}`)
      if (error instanceof Unreachable) return Option.some(`acs: unreachable: ${error.message}`)
      if (error instanceof MembersRefused) return Option.some(`acs: members_refused: ${error.message}`)
      if (error instanceof SyncFailed) return Option.some(`acs: sync_failed: ${error.message}`)
      if (error instanceof SqlError) return Option.some(`acs: database error: ${error.message}${causeMessage(error.cause)}`)
      return Option.some(`acs: unexpected failure\n${Cause.pretty(cause)}`)
    }
  })
}

const causeMessage = (cause: unknown): string =>
  cause instanceof Error && cause.message.length > 0 ? `: ${cause.message}` : ""
