/**
 * A sync's own tables (one generation of an account's partitions): their names, and the DDL around them —
 * dropping those left behind, discarding a failed sync's, and building indexes in one sorted pass. The daily
 * rows are kept per account and calendar month (docs/decisions/warehouse-and-reads.md "Daily metrics in
 * partitions per account and month"): a sync stages the months its window touches into a partitioned table of
 * its own, a leaf per month, and the swap makes each leaf the account's partition of that month.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { decodeRows } from "../db/Rows.ts"
import { RETAINED_DAYS } from "./SyncPlan.ts"
import { addDays } from "./Window.ts"

/**
 * A generation's tables: names built from the sync id (or, for migrated copies, the project id) alone.
 * `metrics` is partitioned by day, a leaf per month touched (`stagedMonth`); the other two become partitions.
 */
export const tablesOf = (generation: string) => ({
  metrics: `daily_metrics_${generation}`,
  terms: `search_terms_${generation}`,
  suffixes: `spend_suffixes_${generation}`
})
export type Tables = ReturnType<typeof tablesOf>
export const PARENTS = ["daily_metrics", "search_terms", "spend_suffixes"] as const
/** The parents whose partitions are one per account: the daily rows have one per account and month. */
export const ACCOUNT_PARENTS = ["search_terms", "spend_suffixes"] as const

/** The first day (YYYY-MM-01) of the month a day (YYYY-MM-DD) is in. */
export const monthOf = (day: string) => `${day.slice(0, 7)}-01`
/** The first day of the month after the one starting on `month`. */
export const nextMonth = (month: string) => {
  const d = new Date(`${month}T00:00:00Z`)
  d.setUTCMonth(d.getUTCMonth() + 1)
  return d.toISOString().slice(0, 10)
}
/** The months (their first days) holding any day from `first` to `last`, in order. */
export const monthsFrom = (first: string, last: string): ReadonlyArray<string> => {
  const months: Array<string> = []
  for (let month = monthOf(first); month <= last; month = nextMonth(month)) months.push(month)
  return months
}
const suffixOf = (month: string) => `m${month.slice(0, 4)}${month.slice(5, 7)}`
/** A sync's leaf for one month, before the swap makes it the account's partition of that month. */
export const stagedMonth = (tables: Tables, month: string) => `${tables.metrics}_${suffixOf(month)}`
/**
 * The account's partition of `daily_metrics` for one month: named for the account and the month, so the swap
 * finds the one it replaces by name, whichever sync wrote it.
 */
export const monthPartition = (projectId: string, month: string) => `daily_metrics_${projectId}_${suffixOf(month)}`
/**
 * The first month an account keeps after a sync ending on `windowEnd`: the one holding the earliest retained
 * day. Every day of an earlier month is past retention, and its partition goes whole.
 */
export const firstKeptMonth = (windowEnd: string) => monthOf(addDays(windowEnd, -(RETAINED_DAYS - 1)))
/** The month of an account's partition, read back from its name. */
export const monthOfPartition = (name: string) => {
  const match = /_m([0-9]{4})([0-9]{2})$/.exec(name)
  return match === null ? undefined : `${match[1]}-${match[2]}-01`
}

/** A project id as an SQL literal, for DDL, which takes no parameters. */
export const projectLiteral = (projectId: string) =>
  /^[a-z0-9_]+$/.test(projectId) ? Effect.succeed(`'${projectId}'`) : Effect.dieMessage(`unexpected project id ${projectId}`)

const decodeRelations = decodeRows(Schema.Struct({ relname: Schema.String }))

export const makeGenerationTables = (sql: SqlClient.SqlClient) => {
  /**
   * Drops the tables that syncs no longer running left behind (their instance died before cleaning up).
   * Attached partitions and the tables of running syncs are not touched; a sync's partitioned table of daily
   * rows goes with its leaves.
   */
  // The running syncs first, in a CTE of their own: Citus joins a distributed table's rows with the catalog
  // only once they are materialized on the coordinator.
  const dropAbandonedTables = sql`
    WITH running AS MATERIALIZED (SELECT sync_id FROM syncs WHERE status = 'running')
    SELECT c.relname FROM pg_class c
    WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relnamespace = current_schema()::regnamespace
      AND (${sql.or(PARENTS.map((parent) => sql`c.relname LIKE ${`${parent.replaceAll("_", "\\_")}\\_syn\\_%`}`))})
      AND NOT EXISTS (
        SELECT 1 FROM running s WHERE c.relname IN (${sql.csv(PARENTS.map((parent) => sql`${`${parent}_`} || s.sync_id`))}))`.pipe(
    Effect.flatMap(decodeRelations),
    Effect.flatMap((tables) =>
      Effect.forEach(tables, ({ relname }) => sql`DROP TABLE IF EXISTS ${sql(relname)}`.pipe(Effect.ignore), { discard: true })
    ),
    Effect.ignore
  )

  /**
   * A failed sync's tables go (its daily rows' table with its leaves); once the swap has made them the
   * account's partitions they stay.
   */
  const discardTables = (projectId: string, syncId: string) =>
    sql`SELECT 1 FROM metric_generations WHERE project_id = ${projectId} AND generation = ${syncId}`.pipe(
      Effect.flatMap((current) =>
        current.length > 0 ? Effect.void : Effect.forEach(Object.values(tablesOf(syncId)), (table) =>
          sql`DROP TABLE IF EXISTS ${sql(table)}`, { discard: true })
      ),
      Effect.ignore
    )

  /** An index in one sorted pass after the rows, far faster than maintained row by row. */
  const createIndex = (table: string, name: string, columns: string, unique: boolean) =>
    sql`CREATE ${sql.unsafe(unique ? "UNIQUE INDEX" : "INDEX")} ${sql(`${table}_${name}`)} ON ${sql(table)} (${sql.unsafe(columns)})`

  const withMaintenanceMemory = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    sql.withTransaction(sql`SET LOCAL maintenance_work_mem = '256MB'`.pipe(Effect.zipRight(effect)))

  return { dropAbandonedTables, discardTables, createIndex, withMaintenanceMemory } as const
}
