/**
 * db/functions/<name>.sql holds the current body of every function acs defines: a migrated database has
 * exactly those functions, each as its file says (its comment lines aside), and no file is left over. None of
 * them is a trigger's: a migrated database has no trigger (docs/decisions/database.md "Invalidation and
 * bookkeeping by the statements, not triggers").
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { FUNCTION_NAMES, functionFile } from "../src/db/functions/FunctionFiles.ts"
import { createDatabase, query } from "./support/database.ts"

let defined: Map<string, string>
let triggers: Array<string>

beforeAll(async () => {
  const database = await createDatabase()
  const rows = await query<{ name: string; definition: string }>(
    database,
    `SELECT p.proname AS name, pg_get_functiondef(p.oid) AS definition
     FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'`
  )
  defined = new Map(rows.map((row) => [row.name, row.definition]))
  triggers = (await query<{ trigger: string }>(
    database,
    `SELECT t.tgrelid::regclass || ' ' || t.tgname AS trigger
     FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE NOT t.tgisinternal AND n.nspname = 'public'`
  )).map((row) => row.trigger)
})

/** The file without its leading comment lines: what `pg_get_functiondef` prints. */
const withoutComments = (text: string) => text.replace(/^(--.*\n)+/, "")

describe("function files", () => {
  it("name every function of a migrated database, and nothing else", () => {
    expect([...defined.keys()].sort()).toEqual([...FUNCTION_NAMES].sort())
    const files = Fs.readdirSync(Path.join(import.meta.dirname, "../src/db/functions")).filter((name) => name.endsWith(".sql"))
    expect(files.sort()).toEqual(FUNCTION_NAMES.map((name) => `${name}.sql`).sort())
  })

  it("leave no trigger on any table (Citus distributes no table that has one)", () => {
    expect(triggers).toEqual([])
  })

  it.each(FUNCTION_NAMES)("%s: the database runs the file's body", (name) => {
    expect(withoutComments(functionFile(name))).toBe(defined.get(name))
  })
})
