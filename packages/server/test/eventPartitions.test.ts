/**
 * The events in day partitions (migration 0048, db/TimePartitions.ts): on a database that has lived, the migration
 * keeps every event within retention (in one partition of the days until tomorrow), prunes the older as retention
 * would (a pending delivery of one keeps its body), makes a week of days ahead, and the sequencer goes on numbering
 * in insert order; then the retention pass keeps a week ahead of its clock and drops an event's day whole 30 days
 * after the day ends, a pending delivery of one of its events keeping the event's body, and no other day.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted, TestClock, TestContext } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import { DAYS_AHEAD, partitionName } from "../src/db/TimePartitions.ts"
import { pruneOnce, RETENTION_DAYS } from "../src/webhooks/Retention.ts"
import { createBlankDatabase, query } from "./support/database.ts"
import { migrateThrough } from "./support/migrateThrough.ts"

const DAY_MS = 86_400_000
const dayStart = (at: number) => Math.floor(at / DAY_MS) * DAY_MS
let database: string
let migratedAt: number

const event = (eventId: string, createdAt: string, position: number | null) =>
  query(database, `INSERT INTO events (event_id, org_id, type, data, position, created_at)
    VALUES ($1, 'org_p', 'sync.succeeded', jsonb_build_object('name', $1::text), $2, $3::timestamptz)`, [eventId, position, createdAt])

/** A delivery waiting to be retried, whose body is its event's (a delivery row refers to its event: migration 0020). */
const pendingDelivery = (eventId: string) =>
  query(database, `INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, give_up_at, attempts)
    VALUES ('dlv_' || $1, 'wh_p', 'org_p', $1, 'sync.succeeded', now() + interval '1 day', 1)`, [eventId])

const partitions = async () =>
  (await query<{ name: string }>(
    database,
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass ORDER BY 1`
  )).map((p) => p.name)

const events = async () =>
  (await query<{ event_id: string; position: string | null }>(database, "SELECT event_id, position FROM events ORDER BY seq"))

const bodies = async () =>
  Object.fromEntries((await query<{ event_id: string; body: { eventId: string; data: unknown } | null }>(
    database,
    "SELECT event_id, body FROM webhook_deliveries ORDER BY event_id"
  )).map((d) => [d.event_id, d.body]))

/** One retention pass (webhooks/Retention.ts) with its clock at `now`. */
const pruneAt = (now: number) =>
  Effect.runPromise(
    TestClock.setTime(now).pipe(
      Effect.zipRight(pruneOnce),
      Effect.provide(TestContext.TestContext),
      Effect.provide(PgClient.layer({ url: Redacted.make(database) })),
      Effect.scoped
    )
  )

beforeAll(async () => {
  database = await createBlankDatabase()
  // Every migration before 0048 ("0047_…" sorts before "0048").
  await migrateThrough(database, "0048")
  await query(database, `INSERT INTO orgs (org_id, name) VALUES ('org_p', 'p')`)
  await query(database, `INSERT INTO webhooks (webhook_id, org_id, url, events, format, secret_sealed, created_by)
    VALUES ('wh_p', 'org_p', 'https://p.example', '["sync.succeeded"]', 'json', 's', 'p')`)
  await event("evt_40_days", new Date(Date.now() - 40 * DAY_MS).toISOString(), 1)
  await event("evt_2_days", new Date(Date.now() - 2 * DAY_MS).toISOString(), 2)
  await event("evt_now", new Date().toISOString(), 3)
  await event("evt_unsequenced", new Date().toISOString(), null)
  await query(database, "UPDATE event_sequencer SET last_position = 3")
  await pendingDelivery("evt_40_days")
  await pendingDelivery("evt_2_days")
  migratedAt = Date.now()
  await migrateThrough(database, undefined)
}, 300_000)

describe("migration 0048: the events by day", () => {
  it("keeps the events within retention, prunes the older keeping a pending delivery's body, and makes a week of days ahead", async () => {
    expect(await events()).toEqual([
      { event_id: "evt_2_days", position: "2" },
      { event_id: "evt_now", position: "3" },
      { event_id: "evt_unsequenced", position: null }
    ])
    expect(await bodies()).toEqual({
      evt_2_days: null,
      evt_40_days: expect.objectContaining({ eventId: "evt_40_days", type: "sync.succeeded", orgId: "org_p", data: { name: "evt_40_days" } })
    })
    const tomorrow = dayStart(migratedAt) + DAY_MS
    expect(await partitions()).toEqual([
      ...Array.from({ length: DAYS_AHEAD + 1 }, (_, day) => partitionName("events", tomorrow + day * DAY_MS)),
      "events_before"
    ].toSorted())
  })

  it("keys every row by org and day, and goes on numbering in insert order", async () => {
    const keys = await query<{ definition: string }>(database, `SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint
      WHERE conrelid = 'events'::regclass AND contype IN ('p', 'u')`)
    expect(keys.map((k) => k.definition).toSorted()).toEqual([
      "PRIMARY KEY (seq, org_id, created_at)",
      "UNIQUE (\"position\", org_id, created_at)",
      "UNIQUE (event_id, org_id, created_at)"
    ])
    await query(database, `INSERT INTO events (event_id, org_id, type, data) VALUES ('evt_after', 'org_p', 'sync.succeeded', '{}')`)
    const [sequenced] = await query<{ events: number }>(database, "SELECT events FROM acs_sequence_events(1000, 86400, 'acs_test', 'test')")
    expect(sequenced).toEqual({ events: 2 })
    expect((await events()).slice(-2)).toEqual([{ event_id: "evt_unsequenced", position: "4" }, { event_id: "evt_after", position: "5" }])
  })
})

describe("retention by day", () => {
  it("drops an event's day whole 30 days after it ends, a pending delivery keeping its body, and keeps a week ahead", async () => {
    const day = dayStart(migratedAt) + 3 * DAY_MS
    await event("evt_day", new Date(day + 3_600_000).toISOString(), 6)
    await event("evt_next_day", new Date(day + DAY_MS + 3_600_000).toISOString(), 7)
    await pendingDelivery("evt_day")
    await pendingDelivery("evt_next_day")
    const [body] = await query<{ body: unknown }>(database, `SELECT jsonb_build_object('eventId', e.event_id, 'type', e.type,
      'createdAt', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'orgId', e.org_id,
      'projectId', e.project_id, 'data', e.data) AS body FROM events e WHERE event_id = 'evt_day'`)

    const dropped = day + DAY_MS + RETENTION_DAYS * DAY_MS
    await pruneAt(dropped - 60_000)
    expect((await events()).map((e) => e.event_id)).toContain("evt_day")
    expect((await bodies())["evt_day"]).toBeNull()

    await pruneAt(dropped + 60_000)
    const left = await partitions()
    expect(left).not.toContain(partitionName("events", day))
    expect(left).toContain(partitionName("events", day + DAY_MS))
    // Made ahead of the pass's clock, a week of days.
    for (let ahead = 0; ahead <= DAYS_AHEAD; ahead++) expect(left).toContain(partitionName("events", dropped + ahead * DAY_MS))
    expect((await events()).map((e) => e.event_id)).toEqual(["evt_next_day"])
    expect(await bodies()).toMatchObject({ evt_day: body!.body, evt_next_day: null })
  })
})
