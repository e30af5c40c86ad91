/** `acs migrate`: applies the migrations and the first-start seeding, exactly as the server does at start. */
import { bootstrap } from "@acs/server/auth/Bootstrap"
import { runMigrations } from "@acs/server/db/Migrations"
import { Command } from "@effect/cli"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { AdminLive } from "../AdminLayer.ts"
import { emit, renderRecord, renderTable } from "../Output.ts"
import { json } from "../SharedOptions.ts"

interface MigrationRow {
  readonly migrationId: number
  readonly name: string
  readonly createdAt: string
}

const appliedMigrations = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const table = yield* sql<{ present: boolean }>`SELECT to_regclass('effect_sql_migrations') IS NOT NULL AS present`
  if (table[0]?.present !== true) return []
  return yield* sql<MigrationRow>`SELECT migration_id, name, created_at FROM effect_sql_migrations ORDER BY migration_id`
}).pipe(Effect.orDie)

export const migrateCommand = Command.make("migrate", { json }, ({ json }) =>
  Effect.gen(function*() {
    const before = new Set((yield* appliedMigrations).map((row) => row.migrationId))
    const orgId = yield* runMigrations(bootstrap).pipe(Effect.orDie)
    const after = yield* appliedMigrations
    const migrations = after.map((row) => ({
      id: row.migrationId,
      name: row.name,
      appliedAt: new Date(row.createdAt).toISOString(),
      appliedNow: !before.has(row.migrationId)
    }))
    yield* emit(json, { defaultOrgId: orgId, migrations }, () =>
      [
        renderRecord([
          ["default org", orgId],
          ["applied now", migrations.filter((m) => m.appliedNow).length],
          ["schema version", migrations.at(-1)?.id ?? null]
        ]),
        "",
        renderTable([
          { header: "ID", cell: (m) => m.id },
          { header: "NAME", cell: (m) => m.name },
          { header: "APPLIED AT", cell: (m) => m.appliedAt },
          { header: "NOW", cell: (m) => m.appliedNow ? "yes" : "" }
        ], migrations)
      ].join("\n"))
  }).pipe(Effect.provide(AdminLive))
).pipe(Command.withDescription("apply the database migrations and the first-start seeding (default org, first admin)"))
