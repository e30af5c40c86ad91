/** The orgs on this database, and which one a command acts on (`--org`, else the default org). */
import { defaultOrgId } from "@acs/server/db/Bootstrap"
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
