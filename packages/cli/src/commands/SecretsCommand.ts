/**
 * `acs secrets rotate`: re-seals every value sealed with the current secrets key (ACS_SECRETS_KEY, or on the
 * embedded default ACS_DATA_DIR/secrets.key) with the new one (ACS_SECRETS_KEY_NEW), in one transaction:
 * the upstream credentials, the generated key pairs' private keys, the webhook secrets and the Slack signing secrets. A value that the
 * new key opens already is left as it is, so a second run after a failure finishes the job; a value neither
 * key opens stops the rotation and changes nothing. On the embedded default the new key then replaces the key
 * file; with PostgreSQL every instance and worker is restarted with ACS_SECRETS_KEY set to the new key
 * (docs/operations.md, "Rotating ACS_SECRETS_KEY").
 */
import { DatabaseMode } from "@acs/server/db/Database"
import { openWith, sealWith } from "@acs/server/db/SecretBox"
import { Command } from "@effect/cli"
import { SqlClient } from "@effect/sql"
import { Config, Effect, Option, Redacted } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { AdminLive } from "../AdminLayer.ts"
import { UsageError } from "../CliError.ts"
import { emit, renderRecord } from "../Output.ts"
import { json } from "../SharedOptions.ts"

const KEY_FILE = "secrets.key"

const decodeKey = (encoded: string, name: string): Effect.Effect<Buffer, UsageError> => {
  const key = Buffer.from(encoded.trim(), "base64")
  return key.length === 32
    ? Effect.succeed(key)
    : Effect.fail(new UsageError({ message: `${name} must be 32 bytes, base64-encoded (openssl rand -base64 32)` }))
}

interface SealedValue {
  readonly id: string
  readonly sealed: string
}

/** The sealed columns: how to lock and read them, and how to write one back. */
const COLUMNS = [
  {
    name: "connections.credentials_encrypted",
    read: (sql: SqlClient.SqlClient) =>
      sql<SealedValue>`SELECT org_id AS id, credentials_encrypted AS sealed FROM connections
        WHERE credentials_encrypted IS NOT NULL ORDER BY org_id FOR UPDATE`,
    write: (sql: SqlClient.SqlClient, id: string, sealed: string) =>
      sql`UPDATE connections SET credentials_encrypted = ${sealed} WHERE org_id = ${id}`
  },
  {
    name: "connection_key_pairs.private_key_sealed",
    read: (sql: SqlClient.SqlClient) =>
      sql<SealedValue>`SELECT org_id AS id, private_key_sealed AS sealed FROM connection_key_pairs ORDER BY org_id FOR UPDATE`,
    write: (sql: SqlClient.SqlClient, id: string, sealed: string) =>
      sql`UPDATE connection_key_pairs SET private_key_sealed = ${sealed} WHERE org_id = ${id}`
  },
  {
    name: "webhooks.secret_sealed",
    read: (sql: SqlClient.SqlClient) =>
      sql<SealedValue>`SELECT webhook_id AS id, secret_sealed AS sealed FROM webhooks ORDER BY webhook_id FOR UPDATE`,
    write: (sql: SqlClient.SqlClient, id: string, sealed: string) =>
      sql`UPDATE webhooks SET secret_sealed = ${sealed} WHERE webhook_id = ${id}`
  },
  {
    name: "slack_signing_secrets.secret_sealed",
    read: (sql: SqlClient.SqlClient) =>
      sql<SealedValue>`SELECT org_id AS id, secret_sealed AS sealed FROM slack_signing_secrets ORDER BY org_id FOR UPDATE`,
    write: (sql: SqlClient.SqlClient, id: string, sealed: string) =>
      sql`UPDATE slack_signing_secrets SET secret_sealed = ${sealed} WHERE org_id = ${id}`
  }
] as const

/** The current key as the server finds it, and where it lives when it is the embedded default's file. */
const currentKey = Effect.gen(function*() {
  const configured = yield* Config.option(Config.redacted("ACS_SECRETS_KEY"))
  if (Option.isSome(configured)) return { key: yield* decodeKey(Redacted.value(configured.value), "ACS_SECRETS_KEY"), file: Option.none<string>() }
  if (Option.isSome(yield* DatabaseMode)) {
    return yield* new UsageError({ message: "ACS_SECRETS_KEY (the current key) is required with DATABASE_URL" })
  }
  const dataDir = yield* Config.string("ACS_DATA_DIR").pipe(Config.withDefault("./.acs"))
  const file = Path.resolve(dataDir, KEY_FILE)
  if (!Fs.existsSync(file)) return yield* new UsageError({ message: `no ${file}: nothing was ever sealed on this data directory` })
  return { key: yield* decodeKey(Fs.readFileSync(file, "utf8"), file), file: Option.some(file) }
})

const reseal = (oldKey: Buffer, newKey: Buffer) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const counts: Record<string, { resealed: number; already: number }> = {}
    for (const column of COLUMNS) {
      const rows = yield* column.read(sql)
      let resealed = 0
      let already = 0
      for (const row of rows) {
        const plaintext = openWith(oldKey, row.sealed)
        if (Option.isSome(plaintext)) {
          yield* column.write(sql, row.id, sealWith(newKey, plaintext.value))
          resealed++
        } else if (Option.isSome(openWith(newKey, row.sealed))) {
          already++
        } else {
          return yield* new UsageError({
            message: `${column.name} of ${row.id} opens with neither key: is ACS_SECRETS_KEY the key acs runs with? Nothing was changed`
          })
        }
      }
      counts[column.name] = { resealed, already }
    }
    return counts
  })

const rotate = Command.make("rotate", { json }, ({ json }) =>
  Effect.gen(function*() {
    const current = yield* currentKey
    const next = yield* Config.option(Config.redacted("ACS_SECRETS_KEY_NEW"))
    if (Option.isNone(next)) {
      return yield* new UsageError({ message: "set ACS_SECRETS_KEY_NEW to the new key (openssl rand -base64 32)" })
    }
    const newKey = yield* decodeKey(Redacted.value(next.value), "ACS_SECRETS_KEY_NEW")
    if (newKey.equals(current.key)) return yield* new UsageError({ message: "ACS_SECRETS_KEY_NEW is the current key" })
    const sql = yield* SqlClient.SqlClient
    const counts = yield* sql.withTransaction(reseal(current.key, newKey))
    // The embedded default's key file takes the new key only once the database holds values sealed with it.
    if (Option.isSome(current.file)) {
      const file = current.file.value
      Fs.writeFileSync(`${file}.new`, newKey.toString("base64"), { mode: 0o600 })
      Fs.renameSync(`${file}.new`, file)
    }
    const nextStep = Option.isSome(current.file)
      ? `${current.file.value} now holds the new key`
      : "restart every instance and worker with ACS_SECRETS_KEY set to the new key"
    yield* emit(json, { columns: counts, next: nextStep }, () =>
      [
        renderRecord(Object.entries(counts).map(([name, c]) => [name, `${c.resealed} re-sealed, ${c.already} already on the new key`] as const)),
        "",
        `next: ${nextStep}`
      ].join("\n"))
  }).pipe(Effect.provide(AdminLive))
).pipe(Command.withDescription(
  "re-seal the stored upstream credentials, key pairs, webhook and Slack signing secrets from ACS_SECRETS_KEY (or the embedded " +
    "key file) to ACS_SECRETS_KEY_NEW, in one transaction"
))

export const secretsCommand = Command.make("secrets").pipe(
  Command.withDescription("the key that seals stored credentials and webhook secrets"),
  Command.withSubcommands([rotate])
)
