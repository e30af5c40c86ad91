/**
 * acs's schema on a Citus coordinator: migrated as on plain PostgreSQL, then the distribution plan applied
 * (src/db/Distribution.ts, docs/scale.md). For the Citus test and for scripts that run acs on the cluster (the bench's
 * key proposals on Citus), which cannot import the server's Effect packages from the repository's root.
 */
import type { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Logger, LogLevel, Redacted } from "effect"
import { applyDistribution, type DistributionOutcome } from "../../src/db/Distribution.ts"
import { runMigrations } from "../../src/db/Migrations.ts"

const onDatabase = <A, E>(url: string, effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.runPromise(
    // The migrations log each one applied: a script's output wants only what went wrong.
    effect.pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })), Effect.scoped, Logger.withMinimumLogLevel(LogLevel.Warning))
  )

/** Migrates the coordinator's database at `url` and places its tables; the plan's outcome (what Citus refused, if anything). */
export const migrateAndDistribute = async (url: string): Promise<DistributionOutcome> => {
  await onDatabase(url, runMigrations(Effect.void))
  return onDatabase(url, applyDistribution)
}
