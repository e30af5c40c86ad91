/**
 * `afterCommit` (db/AfterCommit.ts) against a real PostgreSQL, through the SqlClient acs makes
 * (db/Database.ts): an effect held in a transaction runs once that transaction committed, never when it rolled
 * back; a savepoint that rolls back drops only its own; outside a transaction it runs at once.
 */
import { layer } from "./support/layerBlock.ts"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Ref } from "effect"
import { expect } from "vitest"
import { afterCommit } from "../src/db/AfterCommit.ts"
import { databaseLayer } from "../src/db/Database.ts"
import { createDatabase } from "./support/database.ts"

const TestDatabase = Layer.unwrapEffect(Effect.promise(async () => {
  const url = await createDatabase()
  return databaseLayer("afterCommit test").pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url]]))))
  )
}))

/** A log of what ran, and an `afterCommit` that writes `name` to it. */
const recorder = Effect.map(Ref.make<ReadonlyArray<string>>([]), (ran) => ({
  ran,
  note: (name: string) => afterCommit(Ref.update(ran, (names) => [...names, name]))
}))

layer(TestDatabase)("afterCommit", (it) => {
  it.effect("runs after the commit, in order, and not before", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { ran, note } = yield* recorder
      const seenInside = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT 1`
        yield* note("first")
        yield* note("second")
        return yield* Ref.get(ran)
      }))
      expect(seenInside).toEqual([])
      expect(yield* Ref.get(ran)).toEqual(["first", "second"])
    }))

  it.effect("never runs for a transaction that rolled back", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { ran, note } = yield* recorder
      const failed = yield* sql.withTransaction(Effect.gen(function*() {
        yield* note("rolled back")
        return yield* Effect.fail("refused" as const)
      })).pipe(Effect.flip)
      expect(failed).toBe("refused")
      // A database error rolls back the same way.
      yield* sql.withTransaction(Effect.zipRight(note("failed statement"), sql`SELECT 1/0`)).pipe(Effect.ignore)
      expect(yield* Ref.get(ran)).toEqual([])
    }))

  it.effect("drops a rolled-back savepoint's effects and keeps the rest for the outer commit", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { ran, note } = yield* recorder
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* note("outer")
        yield* sql.withTransaction(Effect.zipRight(note("inner, rolled back"), Effect.fail("no"))).pipe(Effect.ignore)
        yield* sql.withTransaction(note("inner, kept"))
        // Not yet: the savepoint released, the transaction still open.
        expect(yield* Ref.get(ran)).toEqual([])
      }))
      expect(yield* Ref.get(ran)).toEqual(["outer", "inner, kept"])

      // An outer rollback drops what its savepoints kept.
      yield* sql.withTransaction(Effect.zipRight(sql.withTransaction(note("inner of a rolled-back outer")), Effect.fail("no")))
        .pipe(Effect.ignore)
      expect(yield* Ref.get(ran)).toEqual(["outer", "inner, kept"])
    }))

  it.effect("runs at once outside a transaction", () =>
    Effect.gen(function*() {
      const { ran, note } = yield* recorder
      yield* note("now")
      expect(yield* Ref.get(ran)).toEqual(["now"])
    }))
})
