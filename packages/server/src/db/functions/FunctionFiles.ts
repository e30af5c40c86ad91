/**
 * The current body of every PostgreSQL function acs defines, one `<name>.sql` file each beside this module, as
 * `pg_get_functiondef` prints it (test/functionFiles.test.ts holds a migrated database to them). A migration
 * installs a function from its file; changing one is an edit of the file and a migration that calls
 * `installFunctions` with its name. The production build copies the files to `dist/functions`
 * (scripts/build.ts), where the bundled code finds them.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"

export const FUNCTION_NAMES = [
  "acs_account_envelope",
  "acs_budget_delta",
  "acs_cooldown_keys",
  "acs_last_position",
  "acs_lock_account_window",
  "acs_recent_change",
  "acs_sequence_events",
  "acs_write_back"
] as const

export type FunctionName = (typeof FUNCTION_NAMES)[number]

/** Beside this module in the sources; `functions/` beside the bundle's entry or chunk in the build. */
const directory = (): string => {
  const here = import.meta.dirname
  const found = [here, Path.join(here, "functions"), Path.join(here, "..", "functions")]
    .find((dir) => Fs.existsSync(Path.join(dir, `${FUNCTION_NAMES[0]}.sql`)))
  if (found === undefined) throw new Error(`the function files (db/functions/*.sql) are not beside ${here}`)
  return found
}

/** The file's text: its comment lines, then `CREATE OR REPLACE FUNCTION …`. */
export const functionFile = (name: FunctionName): string => Fs.readFileSync(Path.join(directory(), `${name}.sql`), "utf8")

/**
 * Installs the functions from their files. The bodies are not checked against the tables here (a function may
 * be installed by a migration older than a column its newest body reads; the migrations after it add it).
 */
export const installFunctions = (names: ReadonlyArray<FunctionName>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`SET LOCAL check_function_bodies = off`
    for (const name of names) yield* sql.unsafe(functionFile(name))
  })
