/**
 * The order readers see (docs/contract.md 6), against a real Postgres: an event is read in the order it committed, not
 * the order it was inserted. A transaction that inserted its event first but commits last is sequenced after
 * the one that committed in between, so a reader (the stream, a client resuming with Last-Event-ID) already
 * past that one still gets it: nothing missed, nothing read twice.
 */
import { layer } from "./support/layerBlock.ts"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Deferred, Effect, Fiber, Layer } from "effect"
import { expect } from "vitest"
import { databaseLayer } from "../src/db/Database.ts"
import type { EventRow } from "../src/events/EventRows.ts"
import { writeEvent } from "../src/events/Outbox.ts"
import { Sequencer } from "../src/events/Sequencer.ts"
import { type EventFilter, EventLog } from "../src/feeds/EventLog.ts"
import { createDatabase, insertAccount, insertOrg } from "./support/database.ts"

const ORG = "org_event_order"
const PROJECT = "prj_event_order"

const TestDatabase = Layer.unwrapEffect(Effect.promise(async () => {
  const url = await createDatabase()
  await insertOrg(url, ORG)
  await insertAccount(url, ORG, PROJECT)
  return databaseLayer("event order test").pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url]]))))
  )
}))

const TestLayer = Layer.mergeAll(Sequencer.Default, EventLog.Default).pipe(Layer.provideMerge(TestDatabase))

const FILTER: EventFilter = { orgId: ORG, projectIds: undefined, type: undefined }

const write = (sql: SqlClient.SqlClient, name: string) =>
  writeEvent(sql, { orgId: ORG, projectId: PROJECT, type: "sync.succeeded", data: { sync: { name } } })

const names = (rows: ReadonlyArray<EventRow>) => rows.map((row) => (JSON.parse(row.dataText) as { sync: { name: string } }).sync.name)

layer(TestLayer, { excludeTestServices: true })("the order of events", (it) => {
  it.effect("an event inserted first but committed last is read after the one committed before it, by a reader already past that one", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const sequencer = yield* Sequencer
      const log = yield* EventLog
      const start = yield* log.startOf(ORG, undefined)

      // "late" inserts its event, then its transaction stays open while "early" commits.
      const inserted = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const late = yield* sql.withTransaction(
        write(sql, "late").pipe(Effect.zipRight(Deferred.succeed(inserted, undefined)), Effect.zipRight(Deferred.await(release)))
      ).pipe(Effect.fork)
      yield* Deferred.await(inserted)
      yield* write(sql, "early")
      yield* sequencer.sequence

      const seen = yield* log.after(FILTER, start, 100)
      expect(names(seen)).toEqual(["early"])
      const cursor = seen.at(-1)!.position

      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(late)
      yield* sequencer.sequence

      // The reader resuming after "early" gets "late", once; read from the start, each comes once, in commit order.
      expect(names(yield* log.after(FILTER, cursor, 100))).toEqual(["late"])
      expect(names(yield* log.after(FILTER, start, 100))).toEqual(["early", "late"])
    }).pipe(Effect.orDie))
})
