/**
 * The embedded database for in-process tests (the services' `static Test` layers): PGlite in a fresh
 * temporary directory, migrated, served to the same SqlClient as in production (db/Database.ts), and removed
 * with its scope. One per layer build: the `Test` layers of several services built together share it.
 */
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { embeddedDatabaseLayer } from "./Database.ts"
import { runMigrations } from "./Migrations.ts"

const temporaryDirectory = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "acs-test-database-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

export const TestDatabase = Layer.unwrapScoped(Effect.map(temporaryDirectory, (dir) =>
  Layer.effectDiscard(runMigrations(Effect.void)).pipe(Layer.provideMerge(embeddedDatabaseLayer(dir, "acs test")))))
