/**
 * An interrupted statement (a client gone mid-request, a stream closed, a timeout around a call) never ends
 * another request's statement. @effect/sql-pg cancels an interrupted statement with `pg_cancel_backend` sent
 * over another pooled connection; when the statement finished first, its connection went back to the pool
 * before that cancel landed, and the cancel ended whatever the connection ran next: someone else's statement
 * failed ("canceling statement due to user request"). Through the SqlClient acs makes (db/Database.ts), with
 * a pool of three; the order is forced with advisory locks held by the test, never with timing.
 */
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Either, Exit, Fiber, Layer, ManagedRuntime } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { databaseLayer } from "../src/db/Database.ts"
import { createDatabase } from "./support/database.ts"
import { waitFor } from "./support/wait.ts"

describe("an interrupted statement", () => {
  let url: string
  let runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, unknown>
  /** The test's own connection: it holds the advisory locks the pool's statements wait on. */
  let holder: pg.Client

  beforeAll(async () => {
    url = await createDatabase()
    runtime = ManagedRuntime.make(databaseLayer("interrupted statements test").pipe(
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url], ["DATABASE_POOL_SIZE", "3"]]))))
    ))
    holder = new pg.Client({ connectionString: url })
    await holder.connect()
  })
  afterAll(async () => {
    await holder.end()
    await runtime.dispose()
  })

  /** The pool's statements waiting on an advisory lock, by lock. */
  const waitingOn = async (): Promise<ReadonlyArray<string>> =>
    (await holder.query<{ lock: string }>(
      `SELECT substring(query FROM 'pg_advisory_xact_lock\\((\\d+)\\)') AS lock FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'acs' AND wait_event_type = 'Lock' ORDER BY 1`
    )).rows.map((row) => row.lock)

  /** A statement that waits for the test's lock `lock` (its number in the text, for pg_stat_activity) and answers it. */
  const holding = (sql: SqlClient.SqlClient, lock: number) =>
    sql.unsafe<{ readonly lock: number }>(`SELECT ${lock} AS lock FROM (SELECT pg_advisory_xact_lock(${lock})) AS waited`)

  it("does not cancel the statement its connection runs next", async () => {
    await holder.query("SELECT pg_advisory_lock(1), pg_advisory_lock(2), pg_advisory_lock(3), pg_advisory_lock(4)")
    const sql = await runtime.runPromise(SqlClient.SqlClient)
    const run = <A>(effect: Effect.Effect<A, unknown>) => runtime.runFork(effect)
    // The pool's three connections, each running a statement that waits for the test's lock.
    const held = run(holding(sql, 3))
    const interrupted = run(holding(sql, 1))
    const later = run(holding(sql, 2))
    await waitFor("three statements waiting on their locks", waitingOn, (locks) => locks.length === 3)
    // Another request's statement, waiting for a connection.
    const other = run(Effect.either(holding(sql, 4)))
    await waitFor("the other request waiting for a connection", async () => (await runtime.runPromise(Fiber.status(other)))._tag, (tag) => tag === "Suspended")
    // The first is interrupted (its request gone); then its statement ends before the pool frees a connection.
    const interrupting = run(Fiber.interrupt(interrupted))
    await holder.query("SELECT pg_advisory_unlock(1)")
    // The other request's statement now runs on the interrupted one's connection, and waits on its lock.
    await waitFor("the other statement on a connection", waitingOn, (locks) => locks.includes("4") && !locks.includes("1"))
    // A connection comes free: a cancel of the interrupted statement, waiting for one, would go out now.
    await holder.query("SELECT pg_advisory_unlock(2)")
    expect(Exit.isSuccess(await runtime.runPromise(Fiber.await(later)))).toBe(true)
    await runtime.runPromise(Fiber.await(interrupting))
    await holder.query("SELECT pg_advisory_unlock(4), pg_advisory_unlock(3)")
    const answer = await runtime.runPromise(Fiber.join(other))
    expect(Either.isRight(answer) ? answer.right : `${String(answer.left)}: ${String((answer.left as { cause?: unknown }).cause)}`).toEqual([{ lock: 4 }])
    expect(Exit.isSuccess(await runtime.runPromise(Fiber.await(held)))).toBe(true)
  })

  it("in a transaction is rolled back once it ends, and leaves its connection outside any transaction", async () => {
    await holder.query("CREATE TABLE interrupted_writes (id int)")
    await holder.query("SELECT pg_advisory_lock(5)")
    const sql = await runtime.runPromise(SqlClient.SqlClient)
    const writing = runtime.runFork(sql.withTransaction(Effect.zipRight(
      sql`INSERT INTO interrupted_writes (id) VALUES (1)`,
      holding(sql, 5)
    )))
    await waitFor("the transaction's statement waiting on its lock", waitingOn, (locks) => locks.includes("5"))
    const interrupting = runtime.runFork(Fiber.interrupt(writing))
    await holder.query("SELECT pg_advisory_unlock(5)")
    expect(Exit.isInterrupted(await runtime.runPromise(Fiber.join(interrupting)))).toBe(true)
    expect((await holder.query("SELECT count(*)::int AS n FROM interrupted_writes")).rows).toEqual([{ n: 0 }])
    // Every connection of the pool, at once: none is left inside the transaction.
    const inTransaction = await runtime.runPromise(Effect.all(
      Array.from({ length: 3 }, () => sql<{ readonly open: boolean }>`SELECT now() <> statement_timestamp() AS open, pg_sleep(0.05)`),
      { concurrency: "unbounded" }
    ))
    expect(inTransaction.flat().map((row) => row.open)).toEqual([false, false, false])
  })
})
