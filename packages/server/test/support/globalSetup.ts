/**
 * Starts one throwaway PostgreSQL cluster for the whole run (every project's files share it) and migrates a
 * template database that each test file clones (CREATE DATABASE … TEMPLATE), so every file starts from a
 * clean, migrated schema; bundles the server and `acs` entry points once for the run's processes (entries.ts); and
 * builds the console once, before any file serves it (a build per file would replace `dist/` under another file's
 * browser).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import pg from "pg"
import type { TestProject } from "vitest/node"
import { runMigrations } from "../../src/db/Migrations.ts"
import { buildConsole } from "../../../console/scripts/build.ts"
import { buildEntries } from "./entries.ts"
import { startCluster, TEMPLATE_DATABASE } from "./postgres.ts"

declare module "vitest" {
  export interface ProvidedContext {
    readonly postgresPort: number
  }
}

/** Set by the first project's setup to its cluster's port: the other projects of the run (cli) share that cluster. */
const SHARED_PORT = "ACS_TEST_POSTGRES_PORT"

export default async function setup(project: TestProject) {
  const shared = process.env[SHARED_PORT]
  if (shared !== undefined && shared !== "") {
    project.provide("postgresPort", Number(shared))
    return () => {}
  }
  const removeEntries = await buildEntries()
  await buildConsole()
  try {
    const cluster = await startCluster()
    const admin = new pg.Client({ connectionString: cluster.url("postgres") })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`)
    await admin.end()
    await Effect.runPromise(
      runMigrations(Effect.void).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(cluster.url(TEMPLATE_DATABASE)) })),
        Effect.scoped
      )
    )
    project.provide("postgresPort", cluster.port)
    process.env[SHARED_PORT] = String(cluster.port)
    return () => {
      delete process.env[SHARED_PORT]
      try {
        cluster.stop()
      } finally {
        removeEntries()
      }
    }
  } catch (error) {
    removeEntries()
    throw error
  }
}
