/**
 * A sync's own tables (one generation of an account's partitions): their names, and the DDL around them —
 * dropping those left behind, discarding a failed sync's, and building indexes in one sorted pass.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { decodeRows } from "../db/Rows.ts"

/** A generation's tables: names built from the sync id (or, for migrated copies, the project id) alone. */
export const tablesOf = (generation: string) => ({
  metrics: `daily_metrics_${generation}`,
  terms: `search_terms_${generation}`,
  suffixes: `spend_suffixes_${generation}`
})
export type Tables = ReturnType<typeof tablesOf>
export const PARENTS = ["daily_metrics", "search_terms", "spend_suffixes"] as const

/** A project id as an SQL literal, for DDL, which takes no parameters. */
export const projectLiteral = (projectId: string) =>
  /^[a-z0-9_]+$/.test(projectId) ? Effect.succeed(`'${projectId}'`) : Effect.dieMessage(`unexpected project id ${projectId}`)

const decodeRelations = decodeRows(Schema.Struct({ relname: Schema.String }))

export const makeGenerationTables = (sql: SqlClient.SqlClient) => {
  /**
   * Drops the tables that syncs no longer running left behind (their instance died before cleaning up).
   * Attached partitions and the tables of running syncs are not touched.
   */
  // The running syncs first, in a CTE of their own: Citus joins a distributed table's rows with the catalog
  // only once they are materialized on the coordinator.
  const dropAbandonedTables = sql`
    WITH running AS MATERIALIZED (SELECT sync_id FROM syncs WHERE status = 'running')
    SELECT c.relname FROM pg_class c
    WHERE c.relkind = 'r' AND NOT c.relispartition AND c.relnamespace = current_schema()::regnamespace
      AND (${sql.or(PARENTS.map((parent) => sql`c.relname LIKE ${`${parent.replaceAll("_", "\\_")}\\_syn\\_%`}`))})
      AND NOT EXISTS (
        SELECT 1 FROM running s WHERE c.relname IN (${sql.csv(PARENTS.map((parent) => sql`${`${parent}_`} || s.sync_id`))}))`.pipe(
    Effect.flatMap(decodeRelations),
    Effect.flatMap((tables) =>
      Effect.forEach(tables, ({ relname }) => sql`DROP TABLE IF EXISTS ${sql(relname)}`.pipe(Effect.ignore), { discard: true })
    ),
    Effect.ignore
  )

  /** A failed sync's tables go; once the swap has made them the account's partitions they stay. */
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
