/**
 * The delivery log's batches in day partitions (migration 0045, db/TimePartitions.ts): on a database that has lived,
 * the migration keeps every batch within retention (in one partition of the days until tomorrow), prunes the older
 * as retention would, and makes a week of days ahead; the maintenance keeps a week ahead of the clock and drops a
 * partition whole once all its days are past the cutoff, never one that still holds a day within it.
 */
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "@effect/sql"
import { Effect, Redacted } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import { DAYS_AHEAD, maintainDayPartitions, partitionName } from "../src/db/TimePartitions.ts"
import { createBlankDatabase, query } from "./support/database.ts"
import { migrateThrough } from "./support/migrateThrough.ts"

const DAY_MS = 86_400_000
const TABLE = "webhook_delivered_batches"
let database: string
let migratedAt: number

const batch = (batchId: string, deliveredAt: string) =>
  query(
    database,
    `INSERT INTO ${TABLE} (batch_id, webhook_id, org_id, delivery_ids, event_ids, event_types, status_codes, durations_ms, responses, delivered_at)
     VALUES ($1, 'wh_p', 'org_p', ARRAY['dlv_' || $1], ARRAY['evt_' || $1], ARRAY['sync.succeeded'], ARRAY[204], ARRAY[3], ARRAY[NULL::text], $2::timestamptz)`,
    [batchId, deliveredAt]
  )

const partitions = async () =>
  (await query<{ name: string }>(
    database,
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '${TABLE}'::regclass ORDER BY 1`
  )).map((p) => p.name)

const batches = async () => (await query<{ batch_id: string }>(database, `SELECT batch_id FROM ${TABLE} ORDER BY batch_id`)).map((b) => b.batch_id)

const maintain = (now: number, cutoff: number) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => maintainDayPartitions(sql, TABLE, now, cutoff)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(database) })),
      Effect.scoped
    )
  )

beforeAll(async () => {
  database = await createBlankDatabase()
  // Every migration before 0045 ("0044_…" sorts before "0045").
  await migrateThrough(database, "0045")
  await query(database, `INSERT INTO orgs (org_id, name) VALUES ('org_p', 'p')`)
  await query(database, `INSERT INTO webhooks (webhook_id, org_id, url, events, format, secret_sealed, created_by)
    VALUES ('wh_p', 'org_p', 'https://p.example', '["sync.succeeded"]', 'json', 's', 'p')`)
  await batch("bat_40_days", new Date(Date.now() - 40 * DAY_MS).toISOString())
  await batch("bat_2_days", new Date(Date.now() - 2 * DAY_MS).toISOString())
  await batch("bat_now", new Date().toISOString())
  migratedAt = Date.now()
  await migrateThrough(database, undefined)
}, 300_000)

describe("migration 0045: the delivery log's batches by day", () => {
  it("keeps the batches within retention, prunes the older, and makes a week of days ahead", async () => {
    expect(await batches()).toEqual(["bat_2_days", "bat_now"])
    const tomorrow = (Math.floor(migratedAt / DAY_MS) + 1) * DAY_MS
    expect(await partitions()).toEqual([
      ...Array.from({ length: DAYS_AHEAD + 1 }, (_, day) => partitionName(TABLE, tomorrow + day * DAY_MS)),
      `${TABLE}_before`
    ].toSorted())
    // The log reads through the new table.
    const log = await query<{ delivery_id: string }>(database, "SELECT delivery_id FROM webhook_delivery_log ORDER BY 1")
    expect(log.map((l) => l.delivery_id)).toEqual(["dlv_bat_2_days", "dlv_bat_now"])
  })

  it("keeps a week ahead of the clock and drops a partition only once all its days are past the cutoff", async () => {
    const inFiveDays = migratedAt + 5 * DAY_MS
    await batch("bat_in_5_days", new Date(inFiveDays).toISOString())
    expect(await maintain(inFiveDays, inFiveDays - 30 * DAY_MS)).toEqual([])
    const made = await partitions()
    expect(made).toContain(partitionName(TABLE, inFiveDays + DAYS_AHEAD * DAY_MS))

    // A cutoff inside the first partition's last day keeps it; past that day, it goes whole, and nothing else.
    const tomorrow = (Math.floor(migratedAt / DAY_MS) + 1) * DAY_MS
    expect(await maintain(inFiveDays, tomorrow - 1)).toEqual([])
    expect(await maintain(inFiveDays, tomorrow)).toEqual([`${TABLE}_before`])
    expect(await batches()).toEqual(["bat_in_5_days"])
    expect(await partitions()).toEqual(made.filter((name) => name !== `${TABLE}_before`))
  })
})
