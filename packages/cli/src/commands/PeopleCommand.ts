/** `acs people add` and `acs people list`: the people who sign in to the console. */
import { acceptPassword, generatedPassword, MIN_PASSWORD_CHARACTERS } from "@acs/server/auth/PasswordRule"
import { People, type PersonRow } from "@acs/server/auth/People"
import { RoleSchema } from "@acs/domain/Principal"
import { Command, Options } from "@effect/cli"
import { SqlClient } from "@effect/sql"
import { Effect, Option, Redacted } from "effect"
import { AdminLive } from "../AdminLayer.ts"
import { UsageError } from "../CliError.ts"
import { resolveOrg } from "../Orgs.ts"
import { emit, renderRecord, renderTable } from "../Output.ts"
import { json, org } from "../SharedOptions.ts"

const EMAIL = /^[^\s@]+@[^\s@]+$/

/** A person as printed: never the hash. */
const toPerson = (row: PersonRow) => ({
  personId: row.personId,
  orgId: row.orgId,
  email: row.email,
  name: row.name,
  role: row.role,
  disabledAt: row.disabledAt === null ? null : new Date(row.disabledAt).toISOString()
})
type Person = ReturnType<typeof toPerson>

const personTable = (people: ReadonlyArray<Person>) =>
  renderTable([
    { header: "PERSON ID", cell: (p) => p.personId },
    { header: "EMAIL", cell: (p) => p.email },
    { header: "NAME", cell: (p) => p.name },
    { header: "ROLE", cell: (p) => p.role },
    { header: "DISABLED AT", cell: (p) => p.disabledAt }
  ], people)

const emailTaken = (email: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Across every org and disabled people too: the unique index is on lower(email).
    const rows = yield* sql<{ personId: string }>`SELECT person_id FROM people WHERE lower(email) = lower(${email})`
    return rows.length > 0
  }).pipe(Effect.orDie)

const add = Command.make("add", {
  email: Options.text("email").pipe(Options.withDescription("the sign-in email")),
  name: Options.text("name").pipe(Options.withDescription("the display name")),
  role: Options.choice("role", RoleSchema.literals).pipe(
    Options.withDescription("viewer (read), editor (write), approver (write + approve), admin")
  ),
  password: Options.redacted("password").pipe(
    Options.withDescription(`at least ${MIN_PASSWORD_CHARACTERS} characters, not a common password; generated and printed once when left out`),
    Options.optional
  ),
  org,
  json
}, (input) =>
  Effect.gen(function*() {
    const email = input.email.trim()
    const name = input.name.trim()
    if (!EMAIL.test(email)) return yield* new UsageError({ message: `--email: "${input.email}" is not an email address` })
    if (name.length === 0) return yield* new UsageError({ message: "--name: must not be empty" })
    // The rule every surface applies (auth/PasswordRule.ts); here a refusal is a usage error naming the option.
    const given = yield* Effect.transposeOption(Option.map(input.password, (password) =>
      acceptPassword("--password", Redacted.value(password)).pipe(
        Effect.mapError((refused) => new UsageError({ message: refused.validation_errors.join("; ") }))
      )))
    const orgId = yield* resolveOrg(input.org)
    if (yield* emailTaken(email)) return yield* new UsageError({ message: `--email: a person with ${email} already exists` })

    const password = Option.getOrElse(given, generatedPassword)
    const people = yield* People
    const person = toPerson(yield* people.create({ orgId, email, name, role: input.role, password }))
    const generated = Option.isNone(given)
    const document = generated ? { person, password } : { person }
    yield* emit(input.json, document, () =>
      [
        renderRecord([
          ["person id", person.personId],
          ["org", person.orgId],
          ["email", person.email],
          ["name", person.name],
          ["role", person.role],
          ...(generated ? [["password", password] as const] : [])
        ]),
        ...(generated ? ["", "The password is shown only now: hand it over and ask them to change it."] : [])
      ].join("\n"))
  }).pipe(Effect.provide(AdminLive))
).pipe(Command.withDescription("add a person who can sign in to the console"))

const list = Command.make("list", { org, json }, (input) =>
  Effect.gen(function*() {
    const orgId = yield* resolveOrg(input.org)
    const people = (yield* (yield* People).list(orgId)).map(toPerson)
    yield* emit(input.json, { people }, () => personTable(people))
  }).pipe(Effect.provide(AdminLive))
).pipe(Command.withDescription("list the people of the org"))

export const peopleCommand = Command.make("people").pipe(
  Command.withDescription("people who sign in to the console"),
  Command.withSubcommands([add, list])
)
