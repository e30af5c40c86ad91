/**
 * The streams' one reader (feeds/EventTail.ts, docs/decisions/events-and-webhooks.md), against a real Postgres: a stream that starts behind
 * what the reader has read gets the missed events from the log, then the live ones; a stream whose client
 * does not take its events holds at most MAX_PENDING of them and reads the rest again itself; an org's events
 * reach its own streams only. Each time: every event once, in the order sequenced.
 */
import { layer } from "./support/layerBlock.ts"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer } from "effect"
import { expect } from "vitest"
import { databaseLayer } from "../src/db/Database.ts"
import type { EventRow } from "../src/events/EventRows.ts"
import { EventSignal } from "../src/events/EventSignal.ts"
import { writeEvent } from "../src/events/Outbox.ts"
import { Sequencer } from "../src/events/Sequencer.ts"
import { type EventFilter, EventLog } from "../src/feeds/EventLog.ts"
import { EventTail, type Following, MAX_PENDING } from "../src/feeds/EventTail.ts"
import { createDatabase, insertAccount, insertOrg } from "./support/database.ts"

const ORG = "org_event_tail"
const OTHER_ORG = "org_event_tail_other"
const PROJECT = "prj_event_tail"
const OTHER_PROJECT = "prj_event_tail_other"

const TestDatabase = Layer.unwrapEffect(Effect.promise(async () => {
  const url = await createDatabase()
  await insertOrg(url, ORG)
  await insertAccount(url, ORG, PROJECT)
  await insertOrg(url, OTHER_ORG)
  await insertAccount(url, OTHER_ORG, OTHER_PROJECT)
  return databaseLayer("event tail test").pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url]]))))
  )
}))

const TestLayer = Layer.mergeAll(Sequencer.Default, EventTail.Default, EventLog.Default).pipe(
  Layer.provideMerge(EventSignal.Default),
  Layer.provideMerge(TestDatabase)
)

const FILTER: EventFilter = { orgId: ORG, projectIds: undefined, type: undefined }
const OTHER_FILTER: EventFilter = { orgId: OTHER_ORG, projectIds: undefined, type: undefined }

const names = (rows: ReadonlyArray<EventRow>) => rows.map((row) => (JSON.parse(row.dataText) as { name: string }).name)

/** Writes the events (one transaction), sequences them and wakes the reader, as a commit here would. */
const publish = (orgId: string, projectId: string, eventNames: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.withTransaction(Effect.forEach(eventNames, (name) => writeEvent(sql, { orgId, projectId, type: "sync.succeeded", data: { name } })))
    yield* (yield* Sequencer).sequence
    yield* (yield* EventSignal).wake({ deliveries: false })
  })

/** Takes from `following` until it has `count` events, waiting when none is there yet. */
const takeUntil = (following: Following, count: number) =>
  Effect.gen(function*() {
    const taken: Array<string> = []
    while (taken.length < count) {
      const rows = yield* following.take
      if (rows.length === 0) yield* following.wait
      taken.push(...names(rows))
    }
    return taken
  })

/** The catch-up reads so far: a stream reading behind the reader (its own read has an upper bound). */
const catchUpReads = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ reads: string }>`SELECT coalesce(sum(calls), 0)::text AS reads FROM pg_stat_statements
    WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND query LIKE '%FROM events e%e.position > $%::bigint AND e.position <= $%::bigint%'`
  return Number(rows[0]!.reads)
})

layer(TestLayer, { excludeTestServices: true })("the streams' reader", (it) => {
  it.effect("a stream starting behind the reader reads what it missed, then takes the live events; another org's stay with that org", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      const tail = yield* EventTail
      const start = yield* log.startOf(ORG, undefined)
      yield* Effect.scoped(Effect.gen(function*() {
        const ahead = yield* tail.follow(FILTER, start)
        const elsewhere = yield* tail.follow(OTHER_FILTER, start)
        yield* publish(ORG, PROJECT, ["a1", "a2", "a3"])
        expect(yield* takeUntil(ahead, 3)).toEqual(["a1", "a2", "a3"])

        // Resumed from the start (Last-Event-ID), while the reader is past a3.
        const behind = yield* tail.follow(FILTER, start)
        yield* publish(ORG, PROJECT, ["a4", "a5"])
        yield* publish(OTHER_ORG, OTHER_PROJECT, ["b1"])
        expect(yield* takeUntil(behind, 5)).toEqual(["a1", "a2", "a3", "a4", "a5"])
        expect(yield* takeUntil(ahead, 2)).toEqual(["a4", "a5"])
        expect(yield* takeUntil(elsewhere, 1)).toEqual(["b1"])
        // Nothing else waits for any of them.
        expect([...(yield* behind.take), ...(yield* ahead.take), ...(yield* elsewhere.take)]).toEqual([])
      }))
    }).pipe(Effect.orDie))

  it.effect("a stream that does not take its events holds at most MAX_PENDING; it reads the rest again itself, each once, in order", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`
      const log = yield* EventLog
      const tail = yield* EventTail
      const start = yield* log.startOf(ORG, undefined)
      const sent = Array.from({ length: MAX_PENDING + 50 }, (_, i) => `c${i}`)
      yield* Effect.scoped(Effect.gen(function*() {
        const stuck = yield* tail.follow(FILTER, start)
        const reading = yield* tail.follow(FILTER, start)
        yield* publish(ORG, PROJECT, sent)
        // Once the reading stream has every event, the reader has offered every one to the stuck stream too.
        expect(yield* takeUntil(reading, sent.length)).toEqual(sent)
        const readsBefore = yield* catchUpReads
        expect(yield* takeUntil(stuck, sent.length)).toEqual(sent)
        expect(yield* catchUpReads).toBeGreaterThan(readsBefore)
        // Caught up, it takes the live events from the reader again.
        yield* publish(ORG, PROJECT, ["after"])
        expect(yield* takeUntil(stuck, 1)).toEqual(["after"])
        expect(yield* takeUntil(reading, 1)).toEqual(["after"])
      }))
    }).pipe(Effect.orDie))
})
