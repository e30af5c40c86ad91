/**
 * The one mapping every surface answers failures with (operations/Failures.ts) tells the database being out of
 * reach from a statement's own error: connection-level causes are 503 `database_unavailable` with
 * `retry_after_ms`, whether the service left its SqlError a failure or made it a defect; anything else stays
 * 500 `internal`.
 */
import { type AcsError, toEnvelope } from "@acs/domain/Errors"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Logger, Option } from "effect"
import { describe, expect, it } from "vitest"
import { toDeclaredError } from "../../src/operations/Failures.ts"

const withCode = (code: string, message = "refused") => Object.assign(new Error(message), { code })

const declared = (cause: Cause.Cause<unknown>): AcsError =>
  Option.getOrThrow(Effect.runSync(toDeclaredError(cause).pipe(Effect.provide(Logger.remove(Logger.defaultLogger)))))

const unreachable: ReadonlyArray<readonly [string, unknown]> = [
  ["a refused connection", withCode("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:5432")],
  ["a reset connection", withCode("ECONNRESET", "read ECONNRESET")],
  ["an unknown host", withCode("ENOTFOUND", "getaddrinfo ENOTFOUND db")],
  ["an administrator's shutdown (57P01)", withCode("57P01", "terminating connection due to administrator command")],
  ["a server starting up (57P03)", withCode("57P03", "the database system is starting up")],
  ["a connection failure (08006)", withCode("08006", "connection failure")],
  ["no connection slot left (53300)", withCode("53300", "sorry, too many clients already")],
  ["a connection ended under a statement", new Error("Connection terminated unexpectedly")],
  ["no pooled connection in time", new Error("timeout exceeded when trying to connect")],
  ["a broken client used again", new Error("Client has encountered a connection error and is not queryable")],
  ["every address refused", new AggregateError([withCode("ECONNREFUSED"), withCode("ECONNREFUSED")], "")]
]

const statementErrors: ReadonlyArray<readonly [string, unknown]> = [
  ["a syntax error (42601)", withCode("42601", "syntax error at or near \"SELEC\"")],
  ["a unique violation (23505)", withCode("23505", "duplicate key value violates unique constraint")],
  ["a statement timeout (57014)", withCode("57014", "canceling statement due to statement timeout")],
  ["an error without a code", new Error("something else")]
]

describe("the database out of reach", () => {
  it.each(unreachable)("%s is 503 database_unavailable with retry_after_ms, as a defect or a failure", (_, cause) => {
    const error = new SqlError({ cause, message: "Failed to execute statement" })
    for (const failure of [Cause.die(error), Cause.fail(error)]) {
      const answer = toEnvelope(declared(failure))
      expect(answer.status).toBe(503)
      expect(answer.body).toMatchObject({ error: { code: "database_unavailable" }, retry_after_ms: 5000 })
    }
  })

  it.each(statementErrors)("%s stays 500 internal", (_, cause) => {
    const answer = toEnvelope(declared(Cause.die(new SqlError({ cause, message: "Failed to execute statement" }))))
    expect(answer.status).toBe(500)
    expect(answer.body).toMatchObject({ error: { code: "internal" } })
  })

  it("takes only an SqlError's cause: a driver message elsewhere is a fault of acs", () => {
    expect(toEnvelope(declared(Cause.die(new Error("Connection terminated unexpectedly")))).status).toBe(500)
  })
})
