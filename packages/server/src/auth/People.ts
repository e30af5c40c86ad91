/** People of an org and their roles; created by first-start seeding and the CLI. */
import { type Role, roleAccess } from "@acs/domain/Principal"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { newId } from "../db/Ids.ts"
import { hashPassword } from "./Secrets.ts"

export interface PersonRow {
  readonly personId: string
  readonly orgId: string
  readonly email: string
  readonly name: string
  readonly role: Role
  readonly passwordHash: string
  readonly disabledAt: string | null
}

export const personPrincipal = (person: PersonRow, expiresAt: string | null) => ({
  kind: "person" as const,
  id: person.personId,
  name: person.name,
  orgId: person.orgId,
  scope: roleAccess[person.role].scope,
  canApprove: roleAccess[person.role].canApprove,
  binding: { kind: "org" as const },
  role: person.role,
  expiresAt
})

export class People extends Effect.Service<People>()("acs/People", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findByEmail = (email: string) =>
      sql<PersonRow>`SELECT * FROM people WHERE lower(email) = lower(${email}) AND disabled_at IS NULL`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    const create = (input: { orgId: string; email: string; name: string; role: Role; password: string }) =>
      Effect.gen(function*() {
        const passwordHash = yield* hashPassword(input.password)
        const rows = yield* sql<PersonRow>`
          INSERT INTO people (person_id, org_id, email, name, role, password_hash)
          VALUES (${newId("psn")}, ${input.orgId}, ${input.email}, ${input.name}, ${input.role}, ${passwordHash})
          RETURNING *`.pipe(Effect.orDie)
        return rows[0]!
      }).pipe(Effect.withSpan("People.create"))

    const findById = (personId: string) =>
      sql<PersonRow>`SELECT * FROM people WHERE person_id = ${personId} AND disabled_at IS NULL`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    const setPassword = (personId: string, password: string) =>
      Effect.gen(function*() {
        const passwordHash = yield* hashPassword(password)
        yield* sql`UPDATE people SET password_hash = ${passwordHash} WHERE person_id = ${personId}`.pipe(Effect.orDie)
      }).pipe(Effect.withSpan("People.setPassword"))

    const list = (orgId: string) =>
      sql<PersonRow>`SELECT * FROM people WHERE org_id = ${orgId} ORDER BY email`.pipe(Effect.orDie)

    const count = sql<{ n: number }>`SELECT count(*)::int AS n FROM people`.pipe(
      Effect.map((rows) => rows[0]?.n ?? 0),
      Effect.orDie
    )

    return { findByEmail, findById, setPassword, create, list, count } as const
  })
}) {}
