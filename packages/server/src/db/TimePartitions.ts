/**
 * History partitioned by day (docs/decisions/database.md "History is kept in day partitions, dropped whole"): a
 * table partitioned by range of one timestamp column has a partition per UTC day, `<table>_<yyyymmdd>`, made a week
 * ahead by the retention pass (webhooks/Retention.ts) and by the migration that partitions the table; retention
 * drops every partition whose days all ended before the cutoff, instead of deleting rows. A drop or a create
 * waits at most a second for the table's lock and is tried again by the next pass, so it never queues the
 * statements that write the table behind a long one.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { decodeRows } from "./Rows.ts"

/** Days of partitions made ahead of today. */
export const DAYS_AHEAD = 7

const DAY_MS = 86_400_000

/** The UTC midnight starting the day of `at`. */
const dayStart = (at: number) => Math.floor(at / DAY_MS) * DAY_MS

const isoDay = (at: number) => new Date(at).toISOString().slice(0, 10)

/** The partition of `table` for the UTC day starting at `start` (ms). */
export const partitionName = (table: string, start: number) => `${table}_${isoDay(start).replaceAll("-", "")}`

/** The DDL of the day partition starting at `start`, if missing. */
export const dayPartition = (table: string, start: number) =>
  `CREATE TABLE IF NOT EXISTS ${partitionName(table, start)} PARTITION OF ${table}
    FOR VALUES FROM ('${isoDay(start)} 00:00:00+00') TO ('${isoDay(start + DAY_MS)} 00:00:00+00')`

/** The day partitions from the day of `now` to `DAYS_AHEAD` days after it, as DDL (a new table's). */
export const partitionsAhead = (table: string, now: number): ReadonlyArray<string> =>
  Array.from({ length: DAYS_AHEAD + 1 }, (_, day) => dayPartition(table, dayStart(now) + day * DAY_MS))

const decodePartitions = decodeRows(Schema.Struct({ name: Schema.String, bound: Schema.String }))

/** A bound of a partition's bound expression (`FOR VALUES FROM (…) TO (…)`) in ms; MINVALUE and MAXVALUE are infinite. */
const boundOf = (expression: string, which: "FROM" | "TO"): number => {
  const value = new RegExp(`${which} \\(([^)]+)\\)`).exec(expression)?.[1] ?? ""
  if (value === "MINVALUE") return -Infinity
  if (value === "MAXVALUE") return Infinity
  // '2026-11-30 00:00:00+00' (as the session's time zone writes it) to ISO 8601.
  return Date.parse(value.replaceAll("'", "").replace(" ", "T").replace(/([+-]\d\d)$/, "$1:00"))
}

/**
 * Makes the day partitions of `table` from `now`'s day to a week after it, where no partition holds those days yet,
 * and drops those whose rows are all older than `cutoff`; answers the partitions dropped. `beforeDrop` runs in the
 * same transaction just before a partition is dropped, the table already locked as the drop locks it (no statement
 * can read the partition's rows meanwhile): it keeps what still needs them (the events' pending deliveries).
 */
export const maintainDayPartitions = (
  sql: SqlClient.SqlClient,
  table: string,
  now: number,
  cutoff: number,
  beforeDrop?: (partition: string) => Effect.Effect<void>
) =>
  sql.withTransaction(Effect.gen(function*() {
    yield* sql`SET LOCAL lock_timeout = '1s'`
    // On Citus, a partition made of a distributed table is distributed too, its key to a reference table with it: a
    // second one in the same transaction in parallel would be refused. A setting plain PostgreSQL keeps and ignores.
    yield* sql`SET LOCAL citus.multi_shard_modify_mode = 'sequential'`
    // One instance at a time: another's pass finds the work done.
    yield* sql`SELECT pg_advisory_xact_lock(hashtext(${table}))`
    const partitions = (yield* sql`
      SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = ${table}::regclass`.pipe(Effect.flatMap(decodePartitions)))
      .map((p) => ({ name: p.name, from: boundOf(p.bound, "FROM"), to: boundOf(p.bound, "TO") }))
    for (let day = 0; day <= DAYS_AHEAD; day++) {
      const start = dayStart(now) + day * DAY_MS
      if (!partitions.some((p) => p.from < start + DAY_MS && start < p.to)) yield* sql.unsafe(dayPartition(table, start))
    }
    const expired = partitions.filter((p) => p.to <= cutoff)
    for (const { name } of expired) {
      if (beforeDrop !== undefined) {
        // The lock the drop takes, taken first: whatever read the partition has committed, nothing reads it after.
        yield* sql`LOCK TABLE ${sql(table)} IN ACCESS EXCLUSIVE MODE`
        yield* beforeDrop(name)
      }
      yield* sql`DROP TABLE ${sql(name)}`
    }
    return expired.map((p) => p.name)
  })).pipe(Effect.orDie, Effect.withSpan("TimePartitions.maintain", { attributes: { table } }))
