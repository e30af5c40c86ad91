/**
 * First-start seeding, run under the migration lock so concurrent instances seed once: the default org,
 * the first admin person (ADMIN_EMAIL + ADMIN_PASSWORD, or a generated password on the embedded default)
 * and the optional ADMIN_BOOTSTRAP_KEY.
 */
import { SqlClient } from "@effect/sql"
import { Config, Console, Effect, Option, Redacted, Schema } from "effect"
import { orgStatements } from "../accounts/Orgs.ts"
import { DatabaseMode } from "../db/Database.ts"
import { newId } from "../db/Ids.ts"
import { KeyStore } from "./KeyStore.ts"
import { People } from "./People.ts"
import { acceptPassword, generatedPassword } from "./PasswordRule.ts"
import { decodeRows } from "../db/Rows.ts"

export const BootstrapConfig = Config.all({
  orgName: Config.string("ORG_NAME").pipe(Config.withDefault("Default workspace")),
  adminEmail: Config.option(Config.string("ADMIN_EMAIL")),
  adminPassword: Config.option(Config.redacted("ADMIN_PASSWORD")),
  bootstrapKey: Config.option(Config.redacted("ADMIN_BOOTSTRAP_KEY"))
})

const DEFAULT_ADMIN_EMAIL = "admin@acs.local"

/**
 * The generated password as a plain block for whoever watches the first start: a JSON log line is easy to
 * scroll past, and is not printed at all when LOG_LEVEL is above warn.
 */
export const firstStartNotice = (email: string, password: string): string => {
  const lines = [
    "First start: sign in to acs as the first admin.",
    "",
    `  email     ${email}`,
    `  password  ${password}`,
    "",
    "This password is shown once, now: only its hash is kept."
  ]
  const width = Math.max(...lines.map((line) => line.length))
  const rule = `+${"-".repeat(width + 4)}+`
  return ["", rule, ...lines.map((line) => `|  ${line.padEnd(width)}  |`), rule, ""].join("\n")
}

const decodeOrgIds = decodeRows(Schema.Struct({ orgId: Schema.String }))

/** The org every single-workspace install uses: the oldest one. */
export const defaultOrgId = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT org_id FROM orgs ORDER BY created_at, org_id LIMIT 1`.pipe(Effect.flatMap(decodeOrgIds))
  return Option.fromNullable(rows[0]?.orgId)
}).pipe(Effect.orDie)

export const bootstrap = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const people = yield* People
  const keys = yield* KeyStore
  const config = yield* BootstrapConfig
  const embedded = Option.isNone(yield* DatabaseMode)

  const orgId = yield* defaultOrgId.pipe(
    Effect.flatMap(Option.match({
      onSome: Effect.succeed,
      onNone: () => {
        const orgId = newId("org")
        return orgStatements(sql).create(orgId, config.orgName).pipe(
          Effect.orDie,
          Effect.as(orgId),
          Effect.tap(() => Effect.logInfo("created the default org").pipe(Effect.annotateLogs({ orgId })))
        )
      }
    }))
  )

  if ((yield* people.count) === 0) {
    if (Option.isSome(config.adminEmail) && Option.isSome(config.adminPassword)) {
      // A weak first admin password fails the start, saying why (the seeding transaction, org included, rolls
      // back), rather than leave an admin account guessable (docs/decisions/access-and-keys.md). Read at first start only, so an
      // existing install's old value never stops a restart.
      const password = yield* acceptPassword("ADMIN_PASSWORD", Redacted.value(config.adminPassword.value)).pipe(
        Effect.catchAll((refused) =>
          Effect.dieMessage(`acs cannot start: ${refused.message}. Set a stronger ADMIN_PASSWORD (it seeds the first admin) and start again.`)
        )
      )
      yield* people.create({ orgId, email: config.adminEmail.value, name: "Administrator", role: "admin", password })
      yield* Effect.logInfo("seeded the first admin").pipe(Effect.annotateLogs({ email: config.adminEmail.value }))
    } else if (embedded) {
      const email = Option.getOrElse(config.adminEmail, () => DEFAULT_ADMIN_EMAIL)
      const password = generatedPassword()
      yield* people.create({ orgId, email, name: "Administrator", role: "admin", password })
      // Printed once, on the first start only: the hash is all that is kept. The notice goes to stderr
      // whatever the log level; the log line tells log collectors where it is, never the password itself,
      // which would then sit in every log store the lines are shipped to (docs/decisions/operations.md).
      yield* Console.error(firstStartNotice(email, password))
      yield* Effect.logWarning("first start: sign in as the generated admin with the password of the notice on stderr, shown only now")
        .pipe(Effect.annotateLogs({ email }))
    } else {
      yield* Effect.logWarning("no person exists: set ADMIN_EMAIL and ADMIN_PASSWORD, or add one with `acs people add`")
    }
  }

  if (Option.isSome(config.bootstrapKey) && (yield* keys.isEmpty)) {
    const { key } = yield* keys.createAsOperator(orgId, {
      name: "bootstrap admin key",
      scope: "admin",
      canApprove: true,
      binding: { kind: "org" },
      expiresAt: null
    }, Redacted.value(config.bootstrapKey.value))
    yield* Effect.logInfo("seeded the bootstrap key").pipe(Effect.annotateLogs({ keyId: key.keyId }))
  }
  return orgId
}).pipe(Effect.withSpan("Bootstrap.run"))
