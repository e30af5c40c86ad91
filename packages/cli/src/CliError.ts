/**
 * The CLI's own failures and the exit code of every outcome: 0 ok, 1 unexpected failure (or a database
 * that cannot be opened), 2 bad input or something not found.
 */
import { ValidationError } from "@effect/cli"
import { SqlError } from "@effect/sql/SqlError"
import { InvalidRequest, NotFound } from "@acs/domain/Errors"
import { DatabaseBusy } from "@acs/server/db/DataDirLock"
import { Cause, Exit, Option, Schema } from "effect"

/** Bad input or a missing thing: the user can fix the command line. Exit code 2. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  message: Schema.String
}) {}


export const EXIT_OK = 0
export const EXIT_FAILURE = 1
export const EXIT_USAGE = 2
export const EXIT_INTERRUPTED = 130

const isUsage = (error: unknown): boolean =>
  error instanceof UsageError || error instanceof InvalidRequest || error instanceof NotFound ||
  ValidationError.isValidationError(error)

export const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return EXIT_OK
  if (Cause.isInterruptedOnly(exit.cause)) return EXIT_INTERRUPTED
  return Option.match(Cause.failureOption(exit.cause), {
    onNone: () => EXIT_FAILURE,
    onSome: (error) => isUsage(error) ? EXIT_USAGE : EXIT_FAILURE
  })
}

/** What to print on stderr for a failure, or none when @effect/cli has printed it already. */
export const describeFailure = (cause: Cause.Cause<unknown>): Option.Option<string> => {
  if (Cause.isInterruptedOnly(cause)) return Option.none()
  return Option.match(Cause.failureOption(cause), {
    onNone: () => Option.some(`acs: unexpected failure\n${Cause.pretty(cause)}`),
    onSome: (error) => {
      if (ValidationError.isValidationError(error)) return Option.none()
      if (error instanceof UsageError || error instanceof InvalidRequest || error instanceof NotFound) {
        return Option.some(`acs: ${error.message}`)
      }
      if (error instanceof DatabaseBusy) return Option.some(`acs: ${error.message}`)
      if (error instanceof SqlError) return Option.some(`acs: database error: ${error.message}${causeMessage(error.cause)}`)
      return Option.some(`acs: unexpected failure\n${Cause.pretty(cause)}`)
    }
  })
}

const causeMessage = (cause: unknown): string =>
  cause instanceof Error && cause.message.length > 0 ? `: ${cause.message}` : ""
