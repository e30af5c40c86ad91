/**
 * Which failures mean "the database cannot be reached now" rather than "this statement is wrong": the
 * connection-level ones, whatever the service that met them did with its `SqlError` (most make it a defect).
 * operations/Failures.ts answers them 503 `database_unavailable` with `Retry-After` on every surface, so an
 * outage or a restart of PostgreSQL is a retryable answer, not 500 `internal` (docs/decisions/operations.md).
 */
import { DatabaseUnavailable } from "@acs/domain/Errors"
import { SqlError } from "@effect/sql/SqlError"

/** What a client is told to wait: about the time PostgreSQL takes to restart or fail over. */
export const DATABASE_RETRY_AFTER_MS = 5_000

export const databaseUnavailable = new DatabaseUnavailable({
  message: "the database is unavailable; retry after the delay",
  retry_after_ms: DATABASE_RETRY_AFTER_MS
})

/**
 * SQLSTATEs of a connection that failed or was taken away: class 08 (connection exception), 57P01–57P03 (an
 * administrator's or a crash's shutdown, a server not accepting connections yet) and 53300 (no connection slot).
 */
const unavailableState = (code: string): boolean => code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" || code === "53300"

/** Socket errors of a server that is down, unreachable or went away mid-conversation. */
const SOCKET_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ENOTFOUND",
  "EAI_AGAIN"
])

/**
 * What `pg` and `pg-pool` say, without a code, when a connection ends under a statement, a client broken by it
 * is used, or no pooled connection came within DATABASE_CONNECT_TIMEOUT_MS.
 */
const DRIVER_MESSAGES = /^Connection terminated|timeout exceeded when trying to connect|is not queryable|^Connection timed out/

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

const unreachableCause = (cause: unknown, depth: number): boolean => {
  if (!isRecord(cause) || depth > 4) return false
  const code = cause["code"]
  if (typeof code === "string" && (SOCKET_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && unavailableState(code)))) return true
  const message = cause["message"]
  if (typeof message === "string" && DRIVER_MESSAGES.test(message)) return true
  // Node reports a refused connection to a name with several addresses as an AggregateError of each attempt.
  const errors = cause["errors"]
  if (Array.isArray(errors) && errors.some((error) => unreachableCause(error, depth + 1))) return true
  return unreachableCause(cause["cause"], depth + 1)
}

/** True for an `SqlError` whose cause is the database being out of reach (not a statement's own error). */
export const isDatabaseUnreachable = (u: unknown): boolean => u instanceof SqlError && unreachableCause(u.cause, 0)
