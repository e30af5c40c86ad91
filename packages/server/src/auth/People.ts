/** People of an org and their roles; created by first-start seeding, the CLI and admins (`/people`). */
import { Conflict, NotFound } from "@acs/domain/Errors"
import type { Person } from "@acs/domain/People"
import { type Role, roleAccess, RoleSchema } from "@acs/domain/Principal"
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { newId } from "../db/Ids.ts"
import { invalidatingAll } from "../db/Invalidation.ts"
import { columnsOf, countOf, decodeRows } from "../db/Rows.ts"
import { type AcceptedPassword, acceptPassword, generatedPassword } from "./PasswordRule.ts"
import { hashPassword } from "./Secrets.ts"
import { sessionStatements } from "./SessionStore.ts"

/** A `people` row, this module being the table's owner. */
export const PersonRow = Schema.Struct({
  personId: Schema.String,
  orgId: Schema.String,
  email: Schema.String,
  name: Schema.String,
  role: RoleSchema,
  passwordHash: Schema.String,
  disabledAt: Schema.NullOr(Schema.String),
  slackUserId: Schema.NullOr(Schema.String),
  createdAt: Schema.String
})
export type PersonRow = typeof PersonRow.Type

export const personColumns = (alias?: string) => columnsOf(PersonRow, alias)
const columns = personColumns()
const decodePeople = decodeRows(PersonRow)

const iso = (value: string | null) => (value === null ? null : new Date(value).toISOString())

/** A person as the API shows them: never the password hash. */
export const toPerson = (row: PersonRow): Person => ({
  personId: row.personId,
  email: row.email,
  name: row.name,
  role: row.role,
  disabledAt: iso(row.disabledAt),
  slackUserId: row.slackUserId,
  createdAt: new Date(row.createdAt).toISOString()
})

export const personPrincipal = (person: PersonRow, expiresAt: string | null) => ({
  kind: "person" as const,
  id: person.personId,
  name: person.name,
  orgId: person.orgId,
  scope: roleAccess[person.role].scope,
  canApprove: roleAccess[person.role].canApprove,
  binding: { kind: "org" as const },
  role: person.role,
  expiresAt,
  root: { kind: "person" as const, id: person.personId, name: person.name }
})

export class People extends Effect.Service<People>()("acs/People", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Every statement that changes a person: every cached session and key carries its person's role and state, so
    // every instance drops them all at commit.
    const changingPeople = <Row, E, R>(statement: Effect.Effect<ReadonlyArray<Row>, E, R>) => invalidatingAll(sql, ["s", "k"], statement)

    const findByEmail = (email: string) =>
      sql`SELECT ${sql.unsafe(columns)} FROM people WHERE lower(email) = lower(${email}) AND disabled_at IS NULL`.pipe(
        Effect.orDie,
        Effect.flatMap(decodePeople),
        Effect.map((rows) => Option.fromNullable(rows[0]))
      )

    const create = (input: { orgId: string; email: string; name: string; role: Role; password: AcceptedPassword }) =>
      Effect.gen(function*() {
        const passwordHash = yield* hashPassword(input.password)
        const rows = yield* sql`
          INSERT INTO people (person_id, org_id, email, name, role, password_hash)
          VALUES (${newId("psn")}, ${input.orgId}, ${input.email}, ${input.name}, ${input.role}, ${passwordHash})
          RETURNING ${sql.unsafe(columns)}`.pipe(Effect.orDie, Effect.flatMap(decodePeople))
        return rows[0]!
      }).pipe(Effect.withSpan("People.create"))

    const findById = (personId: string) =>
      sql`SELECT ${sql.unsafe(columns)} FROM people WHERE person_id = ${personId} AND disabled_at IS NULL`.pipe(
        Effect.orDie,
        Effect.flatMap(decodePeople),
        Effect.map((rows) => Option.fromNullable(rows[0]))
      )

    const setPassword = (personId: string, password: AcceptedPassword) =>
      Effect.gen(function*() {
        const passwordHash = yield* hashPassword(password)
        yield* changingPeople(sql`UPDATE people SET password_hash = ${passwordHash} WHERE person_id = ${personId} RETURNING person_id`).pipe(
          Effect.orDie
        )
      }).pipe(Effect.withSpan("People.setPassword"))

    const list = (orgId: string) =>
      sql`SELECT ${sql.unsafe(columns)} FROM people WHERE org_id = ${orgId} ORDER BY email`.pipe(Effect.orDie, Effect.flatMap(decodePeople))

    const count = sql`SELECT count(*)::int AS n FROM people`.pipe(Effect.orDie, Effect.flatMap(countOf))

    /**
     * An admin adds a person to their org; without a password one is generated and answered once. A given
     * password must pass the rule (auth/PasswordRule.ts): 422 `validation_failed` naming `password` otherwise.
     */
    const add = (orgId: string, input: { email: string; name: string; role: Role; password?: string | undefined }) =>
      Effect.gen(function*() {
        const given = input.password === undefined ? undefined : yield* acceptPassword("password", input.password)
        const taken = yield* sql`SELECT person_id FROM people WHERE lower(email) = lower(${input.email})`.pipe(Effect.orDie)
        if (taken.length > 0) return yield* new Conflict({ message: `a person with the email ${input.email} exists already` })
        const generated = given === undefined ? generatedPassword() : undefined
        const row = yield* create({ orgId, email: input.email, name: input.name, role: input.role, password: given ?? generated! })
        yield* Effect.logInfo("person added").pipe(Effect.annotateLogs({ personId: row.personId, role: row.role }))
        return { person: toPerson(row), ...(generated === undefined ? {} : { password: generated }) }
      }).pipe(Effect.withSpan("People.add"))

    /**
     * An admin changes a person's role or disables (or enables) them. Disabling ends their sessions at once.
     * Nobody changes their own role or disables themselves, and the org keeps at least one active admin, so a
     * workspace cannot lock its admins out.
     */
    /** The active person of `orgId` whose Slack user is `slackUserId` (Slack approvals act as them). */
    const findBySlackUser = (orgId: string, slackUserId: string) =>
      sql`SELECT ${sql.unsafe(columns)} FROM people
          WHERE org_id = ${orgId} AND slack_user_id = ${slackUserId} AND disabled_at IS NULL`.pipe(
        Effect.orDie,
        Effect.flatMap(decodePeople),
        Effect.map((rows) => Option.fromNullable(rows[0]))
      )

    /** 409 when another person of the org has the Slack user. */
    const slackUserFree = (orgId: string, personId: string, slackUserId: string) =>
      Effect.flatMap(
        sql`SELECT person_id FROM people WHERE org_id = ${orgId} AND slack_user_id = ${slackUserId} AND person_id <> ${personId}`.pipe(Effect.orDie),
        (taken) => taken.length > 0 ? new Conflict({ message: `another person of this workspace is linked to Slack user ${slackUserId}` }) : Effect.void
      )

    /**
     * Links (or with null unlinks) a person's Slack user: one person per Slack user in an org, 409 otherwise
     * (the unique index holds it under a race too).
     */
    const linkSlackUser = (orgId: string, personId: string, slackUserId: string | null) =>
      Effect.gen(function*() {
        if (slackUserId !== null) yield* slackUserFree(orgId, personId, slackUserId)
        const rows = yield* changingPeople(sql`UPDATE people SET slack_user_id = ${slackUserId}
          WHERE person_id = ${personId} AND org_id = ${orgId} RETURNING ${sql.unsafe(columns)}`).pipe(
          Effect.orDie,
          Effect.flatMap(decodePeople)
        )
        const row = rows[0]
        if (row === undefined) return yield* new NotFound({ message: `no person ${personId} in this workspace` })
        yield* Effect.logInfo("person's Slack user linked").pipe(Effect.annotateLogs({ personId, linked: slackUserId !== null }))
        return row
      }).pipe(Effect.withSpan("People.linkSlackUser"))

    const update = (
      orgId: string,
      actorId: string,
      personId: string,
      change: { role?: Role | undefined; disabled?: boolean | undefined; slackUserId?: string | null | undefined }
    ) =>
      Effect.gen(function*() {
        const rows = yield* sql`SELECT ${sql.unsafe(columns)} FROM people WHERE person_id = ${personId} AND org_id = ${orgId}`.pipe(
          Effect.orDie,
          Effect.flatMap(decodePeople)
        )
        const person = rows[0]
        if (person === undefined) return yield* new NotFound({ message: `no person ${personId} in this workspace` })
        const demoted = change.role !== undefined && change.role !== person.role
        const disabling = change.disabled === true && person.disabledAt === null
        if (personId === actorId && (demoted || disabling)) {
          return yield* new Conflict({ message: "you cannot change your own role or disable yourself; another admin must" })
        }
        if (person.role === "admin" && person.disabledAt === null && ((demoted && change.role !== "admin") || disabling)) {
          const others = yield* sql`
            SELECT count(*)::int AS n FROM people
            WHERE org_id = ${orgId} AND role = 'admin' AND disabled_at IS NULL AND person_id <> ${personId}`.pipe(
            Effect.orDie,
            Effect.flatMap(countOf)
          )
          if (others === 0) return yield* new Conflict({ message: "the workspace needs at least one active admin" })
        }
        if (change.slackUserId !== undefined && change.slackUserId !== null) yield* slackUserFree(orgId, personId, change.slackUserId)
        const updated = yield* changingPeople(sql`
          UPDATE people SET
            role = ${change.role ?? person.role},
            slack_user_id = ${change.slackUserId === undefined ? person.slackUserId : change.slackUserId},
            -- Stamped only when the person was enabled, and not in a CASE: Citus refuses a stable function in one.
            disabled_at = ${disabling ? sql`now()` : change.disabled === false ? sql`NULL` : sql`disabled_at`}
          WHERE person_id = ${personId}
          RETURNING ${sql.unsafe(columns)}`).pipe(Effect.orDie, Effect.flatMap(decodePeople))
        if (disabling) yield* sessionStatements(sql).endAllOf(personId)
        yield* Effect.logInfo("person changed").pipe(Effect.annotateLogs({ personId, by: actorId, role: change.role, disabled: change.disabled }))
        return toPerson(updated[0]!)
      }).pipe(Effect.withSpan("People.update"))

    return { findByEmail, findById, findBySlackUser, setPassword, create, add, update, linkSlackUser, list, count } as const
  })
}) {}
