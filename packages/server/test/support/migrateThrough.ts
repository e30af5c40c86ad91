/** A database migrated through a named migration (all of them without one): how a migration's own test starts from the state before it. */
import { Migrator, SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { migrations } from "../../src/db/Migrations.ts"

export const migrateThrough = (url: string, last: string | undefined) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const record = Object.fromEntries(Object.entries(migrations).filter(([name]) => last === undefined || name <= last))
      // As runMigrations does: the migrator's probe of a missing table would abort the transaction.
      yield* sql`CREATE TABLE IF NOT EXISTS effect_sql_migrations (
        migration_id integer PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), name text NOT NULL)`
      yield* sql.withTransaction(Migrator.make({})({ loader: Migrator.fromRecord(record) }))
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })), Effect.scoped)
  )
