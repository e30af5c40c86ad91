/** The orgs on this database, which one a command acts on (`--org`, else the default org), and new ones. */
import { defaultOrgId } from "@acs/server/auth/Bootstrap"
import { newId } from "@acs/server/db/Ids"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { UsageError } from "./CliError.ts"

export interface Org {
  readonly orgId: string
  readonly name: string
  readonly createdAt: string
  readonly isDefault: boolean
}

interface OrgRow {
  readonly orgId: string
  readonly name: string
  readonly createdAt: string
}

const notMigrated = new UsageError({ message: "this database has no org yet: run `acs migrate` first" })

/** Every org, oldest first; the oldest is the default one. */
export const listOrgs = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<OrgRow>`SELECT org_id, name, created_at FROM orgs ORDER BY created_at, org_id`.pipe(
    Effect.catchTag("SqlError", (error) =>
      // 42P01 undefined_table: the migrations have not run.
      hasCode(error.cause, "42P01") ? Effect.fail(notMigrated) : Effect.die(error))
  )
  return rows.map((row, i): Org => ({
    orgId: row.orgId,
    name: row.name,
    createdAt: new Date(row.createdAt).toISOString(),
    isDefault: i === 0
  }))
}).pipe(Effect.withSpan("Orgs.list"))

export const MAX_ORG_NAME = 200

/**
 * A new org (workspace) named `name`, which starts with no people, keys or accounts and the default settings.
 * The name is trimmed and must be unique on the database (case aside): `orgs list` is how an operator tells
 * the orgs apart.
 */
export const createOrg = (requested: string) =>
  Effect.gen(function*() {
    const name = requested.trim()
    if (name.length === 0) return yield* new UsageError({ message: "name: must not be empty" })
    if (name.length > MAX_ORG_NAME) return yield* new UsageError({ message: `name: must be at most ${MAX_ORG_NAME} characters` })
    // Control characters (NUL above all, which Postgres cannot store) have no place in a display name.
    if (/\p{Cc}/u.test(name)) return yield* new UsageError({ message: "name: must not contain control characters" })
    const existing = yield* listOrgs
    const taken = existing.find((org) => org.name.toLowerCase() === name.toLowerCase())
    if (taken !== undefined) {
      return yield* new UsageError({ message: `name: an org named "${taken.name}" already exists (${taken.orgId})` })
    }
    const sql = yield* SqlClient.SqlClient
    const orgId = newId("org")
    yield* sql`INSERT INTO orgs (org_id, name) VALUES (${orgId}, ${name})`.pipe(Effect.orDie)
    const created = (yield* listOrgs).find((org) => org.orgId === orgId)
    if (created === undefined) return yield* Effect.dieMessage(`org ${orgId} was not found after its insert`)
    yield* Effect.logInfo("created an org").pipe(Effect.annotateLogs({ orgId, name }))
    return created
  }).pipe(Effect.withSpan("Orgs.create"))

/** The org named by `--org` (it must exist), or the default org. */
export const resolveOrg = (requested: Option.Option<string>) =>
  Effect.gen(function*() {
    const orgs = yield* listOrgs
    if (Option.isSome(requested)) {
      const found = orgs.find((org) => org.orgId === requested.value)
      if (found === undefined) return yield* new UsageError({ message: `no org ${requested.value}: see \`acs orgs list\`` })
      return found.orgId
    }
    const orgId = yield* defaultOrgId
    return yield* Option.match(orgId, { onNone: () => Effect.fail(notMigrated), onSome: Effect.succeed })
  })

const hasCode = (cause: unknown, code: string): boolean =>
  typeof cause === "object" && cause !== null && "code" in cause && cause.code === code
