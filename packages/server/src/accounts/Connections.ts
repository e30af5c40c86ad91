/**
 * The org's upstream connection: credentials are tested against the platform before they are saved,
 * stored sealed (AES-256-GCM), and opened only to make a client; the API version (v1 or v5) it speaks; the
 * key pair acs generates for an Apple Ads API client. Also discovery and import of accounts.
 */
import type { Account } from "@acs/domain/Accounts"
import { type ConnectionRequest, UpstreamApiVersion as ApiVersionSchema } from "@acs/domain/Connection"
import { ConnectionError, InvalidRequest } from "@acs/domain/Errors"
import { isP256PrivateKey } from "@acs/upstream/ClientSecret"
import { Upstream, type UpstreamAccount, type UpstreamApiVersion, type UpstreamClient, type UpstreamCredentials } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Option, Schema } from "effect"
import * as Crypto from "node:crypto"
import type { Granted } from "./Granted.ts"
import { writeEvent } from "../events/Outbox.ts"
import { SecretBox } from "../db/SecretBox.ts"
import { newId } from "../db/Ids.ts"
import { columnsOf, decodeRows } from "../db/Rows.ts"
import { mapImportedAccounts } from "./AccountMapping.ts"
import { accountWrites, toAccount } from "./Accounts.ts"
import { AccountRow } from "./AccountRecord.ts"
import { credentialKeyOf } from "./CredentialKey.ts"

/** What making a client needs of the connection row. */


/** A `connections` row (the org aside), this module being the table's owner. */
export const ConnectionRow = Schema.Struct({
  provider: Schema.Literal("apple", "simulator"),
  apiVersion: ApiVersionSchema,
  credentialsEncrypted: Schema.NullOr(Schema.String),
  upstreamOrgId: Schema.NullOr(Schema.String),
  status: Schema.Literal("ok", "error"),
  error: Schema.NullOr(Schema.String),
  checkedAt: Schema.NullOr(Schema.String),
  /** The upstream credential its calls spend (CredentialLimits.ts), null until a client is made from it. */
  credentialKey: Schema.NullOr(Schema.String)
})
type ConnectionRow = typeof ConnectionRow.Type

/** What making a client needs of the connection row (an apply carries it with its claim: worker/StartingPoint.ts). */
export const SavedConnection = ConnectionRow.pick("apiVersion", "credentialsEncrypted", "status")
export type SavedConnection = typeof SavedConnection.Type

const connectionColumns = columnsOf(ConnectionRow)

/** Which project each imported upstream account is: two columns of the account's row. */
const ImportedAccount = AccountRow.pick("upstreamAccountId", "projectId")
const importedColumns = columnsOf(ImportedAccount)
const decodeImported = decodeRows(ImportedAccount)

/** A connection's status before an update changed it. */
const decodePrevious = decodeRows(Schema.Struct({ previous: ConnectionRow.fields.status }))
const decodeConnections = decodeRows(ConnectionRow)

const KeyPairRow = Schema.Struct({
  privateKeySealed: Schema.String,
  publicKeyPem: Schema.String,
  fingerprint: Schema.String,
  createdAt: Schema.Union(Schema.DateFromSelf, Schema.DateFromString)
})

const keyPairColumns = columnsOf(KeyPairRow)
const decodeKeyPairs = decodeRows(KeyPairRow)

/** Shown while a connection speaks v5: after Apple's sunset it can no longer change anything. */
export const V5_SUNSET_WARNING =
  "this connection uses Apple's Campaign Management API v5, which Apple retires on 2027-01-26; after that acs cannot change its accounts. " +
  "Move it to the Apple Ads Platform API v1: POST /connection/keypair, paste the public key into a new Apple Ads API client, then " +
  "PUT /connection with apiVersion \"v1\", clientId, teamId and keyId (projects, ledger and warehouse are kept)"

const publicHalf = (row: typeof KeyPairRow.Type) => ({
  publicKeyPem: row.publicKeyPem,
  fingerprint: row.fingerprint,
  createdAt: row.createdAt.toISOString()
})

const toConnection = (row: ConnectionRow | undefined, keyPair: typeof KeyPairRow.Type | undefined) => ({
  ...(row === undefined
    ? { connected: false, provider: null, apiVersion: null, status: "not_connected" as const, upstreamOrgId: null, checkedAt: null, error: null }
    : {
      connected: row.status === "ok",
      provider: row.provider,
      apiVersion: row.apiVersion,
      status: row.status,
      upstreamOrgId: row.upstreamOrgId,
      checkedAt: row.checkedAt === null ? null : new Date(row.checkedAt).toISOString(),
      error: row.error
    }),
  warning: row?.apiVersion === "v5" ? V5_SUNSET_WARNING : null,
  keyPair: keyPair === undefined ? null : publicHalf(keyPair)
})

/** A new EC P-256 key pair: the private half as PKCS#8 PEM, the public half as the SPKI PEM Apple Ads asks for. */
const generateKeyPair = () => {
  const { privateKey, publicKey } = Crypto.generateKeyPairSync("ec", { namedCurve: "P-256" })
  return {
    privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    fingerprint: Crypto.createHash("sha256").update(publicKey.export({ type: "spki", format: "der" })).digest("hex")
  }
}

export class Connections extends Effect.Service<Connections>()("acs/Connections", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const accountRows = accountWrites(sql)
    const upstream = yield* Upstream
    const box = yield* SecretBox

    const row = (orgId: string) =>
      sql`SELECT ${sql.unsafe(connectionColumns)} FROM connections WHERE org_id = ${orgId}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeConnections),
        Effect.map((rows) => rows[0])
      )

    const keyPairOf = (orgId: string) =>
      sql`SELECT ${sql.unsafe(keyPairColumns)} FROM connection_key_pairs WHERE org_id = ${orgId}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeKeyPairs),
        Effect.map((rows) => rows[0])
      )

    const get = (grant: Granted<"getConnection">) =>
      Effect.all([row(grant.orgId), keyPairOf(grant.orgId)]).pipe(
        Effect.map(([connection, keyPair]) => toConnection(connection, keyPair)),
        Effect.withSpan("Connections.get")
      )

    /**
     * Generates the org's key pair for an Apple Ads API client. A new pair replaces the previous one for the
     * next PUT /connection; the saved connection keeps signing with its own copy until then.
     */
    const createKeyPair = (grant: Granted<"createConnectionKeyPair">) =>
      Effect.gen(function*() {
        const pair = generateKeyPair()
        const now = new Date(yield* Clock.currentTimeMillis)
        const sealed = box.seal(pair.privateKeyPem)
        yield* sql`
          INSERT INTO connection_key_pairs (org_id, private_key_sealed, public_key_pem, fingerprint, created_at)
          VALUES (${grant.orgId}, ${sealed}, ${pair.publicKeyPem}, ${pair.fingerprint}, ${now})
          ON CONFLICT (org_id) DO UPDATE SET private_key_sealed = excluded.private_key_sealed,
            public_key_pem = excluded.public_key_pem, fingerprint = excluded.fingerprint, created_at = excluded.created_at`.pipe(Effect.orDie)
        yield* Effect.logInfo("connection key pair generated").pipe(Effect.annotateLogs({ orgId: grant.orgId, fingerprint: pair.fingerprint }))
        return { publicKeyPem: pair.publicKeyPem, fingerprint: pair.fingerprint, createdAt: now.toISOString() }
      }).pipe(Effect.withSpan("Connections.createKeyPair"))

    /** The private key a request names: its own, or the org's generated one. */
    const privateKeyFor = (orgId: string, given: string | undefined) =>
      Effect.gen(function*() {
        if (given !== undefined) return given
        const pair = yield* keyPairOf(orgId)
        if (pair === undefined) {
          return yield* new InvalidRequest({
            message: "privateKeyPem: none given and no key pair generated; POST /connection/keypair first, or send privateKeyPem"
          })
        }
        const opened = box.open(pair.privateKeySealed)
        if (Option.isNone(opened)) {
          return yield* new ConnectionError({ message: "the generated key pair cannot be decrypted with ACS_SECRETS_KEY; generate a new one" })
        }
        return opened.value
      })

    const credentialsOf = (orgId: string, request: typeof ConnectionRequest.Type) =>
      request.provider === "simulator"
        ? Effect.succeed<UpstreamCredentials>({ provider: "simulator", apiVersion: request.apiVersion })
        : privateKeyFor(orgId, request.privateKeyPem).pipe(Effect.map((privateKeyPem): UpstreamCredentials => ({
          provider: "apple",
          apiVersion: request.apiVersion,
          clientId: request.clientId,
          teamId: request.teamId,
          keyId: request.keyId,
          privateKeyPem
        })))

    /**
     * Tests the credentials (token + account list), then saves them sealed. Refused credentials are not saved.
     * Imported accounts the new listing names differently (a v5 org id becoming a v1 ad account id) are moved
     * to their new id in the same transaction, so projects, ledger and warehouse stay as they are.
     */
    const save = (orgId: string, credentials: UpstreamCredentials) =>
      Effect.gen(function*() {
        if (credentials.provider === "apple" && !isP256PrivateKey(credentials.privateKeyPem)) {
          return yield* new InvalidRequest({ message: "privateKeyPem: not an EC P-256 private key in PEM form" })
        }
        const client = yield* upstream.connect(credentials)
        const reachable = yield* client.accounts
        const upstreamOrgId = reachable.find((a) => a.parentOrgId !== null)?.parentOrgId ?? reachable[0]?.upstreamAccountId ?? null
        const { apiVersion, ...sealedCredentials } = credentials
        const sealed = box.seal(JSON.stringify(sealedCredentials))
        const saved = yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql`
            INSERT INTO connections (org_id, provider, api_version, credentials_encrypted, upstream_org_id, status, error, checked_at, updated_at,
              credential_key)
            VALUES (${orgId}, ${credentials.provider}, ${apiVersion}, ${sealed}, ${upstreamOrgId}, 'ok', NULL, now(), now(),
              ${credentialKeyOf(client.clientId)})
            ON CONFLICT (org_id) DO UPDATE SET provider = excluded.provider, api_version = excluded.api_version,
              credentials_encrypted = excluded.credentials_encrypted, upstream_org_id = excluded.upstream_org_id,
              status = 'ok', error = NULL, checked_at = excluded.checked_at, updated_at = excluded.updated_at,
              credential_key = excluded.credential_key
            RETURNING ${sql.unsafe(connectionColumns)}`.pipe(Effect.flatMap(decodeConnections))
          const imported = yield* accountRows.lockImported(orgId)
          const moves = mapImportedAccounts(imported, reachable)
          for (const move of moves) {
            yield* accountRows.moveUpstream(move.projectId, move.to)
          }
          return { connection: rows[0], moves }
        })).pipe(Effect.orDie)
        yield* Effect.logInfo("upstream connection saved").pipe(
          Effect.annotateLogs({ orgId, provider: credentials.provider, apiVersion, accountsMoved: saved.moves.length })
        )
        return toConnection(saved.connection, yield* keyPairOf(orgId))
      }).pipe(Effect.withSpan("Connections.save"))

    const update = (grant: Granted<"updateConnection">, request: typeof ConnectionRequest.Type) =>
      credentialsOf(grant.orgId, request).pipe(Effect.flatMap((credentials) => save(grant.orgId, credentials)))

    /** A client for the org's saved credentials; a refusal is recorded on the connection. */
    /**
     * The upstream refused the saved credentials: the connection is marked `error`, and the moment it breaks
     * (it was `ok`) is `connection.broken`, in the same transaction (events/Outbox.ts).
     */
    const markBroken = (orgId: string, message: string) =>
      sql.withTransaction(Effect.gen(function*() {
        const changed = yield* sql`
          WITH before AS (SELECT status FROM connections WHERE org_id = ${orgId} FOR UPDATE)
          UPDATE connections c SET status = 'error', error = ${message}, checked_at = now()
          FROM before WHERE c.org_id = ${orgId}
          RETURNING before.status AS previous`.pipe(Effect.flatMap(decodePrevious))
        if (changed[0]?.previous === "ok") {
          yield* writeEvent(sql, { orgId, projectId: null, type: "connection.broken", data: { connection: { status: "error", error: message } } })
        }
      })).pipe(Effect.orDie)

    /**
     * The clients kept for the apply worker (`reuse`), per org, with the saved credentials they were made from: a
     * client keeps its access token (one token request an hour, not one per apply). The connection row is read
     * on every call, so saving new credentials (sealed afresh, on any instance) makes the next call build a new
     * client. Other callers (a sync, discovery, import) make a client each time, which tests the credentials.
     */
    const clients = new Map<string, { readonly sealed: string; readonly apiVersion: UpstreamApiVersion; readonly client: UpstreamClient }>()
    const MAX_CACHED_CLIENTS = 1_000

    /** `saved`: the org's connection row as the caller read it already (the apply reads it with the action). */
    const clientFor = (orgId: string, options: { readonly reuse?: boolean; readonly saved?: SavedConnection | undefined } = {}) =>
      Effect.gen(function*() {
        const full = "saved" in options ? undefined : yield* row(orgId)
        const saved = full ?? options.saved
        if (saved === undefined || saved.credentialsEncrypted === null) {
          return yield* new ConnectionError({ message: "no upstream connection: an admin must PUT /connection first" })
        }
        const cached = options.reuse === true ? clients.get(orgId) : undefined
        // A connection marked broken gets a fresh client (and heals below when it can be made).
        if (cached !== undefined && saved.status === "ok" && cached.sealed === saved.credentialsEncrypted && cached.apiVersion === saved.apiVersion) {
          return cached.client
        }
        const opened = box.open(saved.credentialsEncrypted)
        if (Option.isNone(opened)) {
          return yield* new ConnectionError({ message: "the saved upstream credentials cannot be decrypted with ACS_SECRETS_KEY; save them again" })
        }
        // The column is the API version; credentials sealed before it existed carry none.
        const credentials = { ...JSON.parse(opened.value), apiVersion: saved.apiVersion } as UpstreamCredentials
        return yield* upstream.connect(credentials).pipe(
          Effect.tapBoth({
            onFailure: (error) =>
              error._tag === "ConnectionError" ? markBroken(orgId, error.message) : Effect.void,
            // Working again after a refusal: the connection heals without a new PUT.
            onSuccess: (client) =>
              Effect.all([
                Effect.sync(() => {
                  if (options.reuse !== true) return
                  clients.delete(orgId)
                  if (clients.size >= MAX_CACHED_CLIENTS) clients.delete(clients.keys().next().value!)
                  clients.set(orgId, { sealed: saved.credentialsEncrypted!, apiVersion: saved.apiVersion, client })
                }),
                saved.status === "error"
                  ? sql`UPDATE connections SET status = 'ok', error = NULL, checked_at = now() WHERE org_id = ${orgId}`.pipe(Effect.orDie)
                  : Effect.void,
                // A connection saved before credentials were named learns its own (the sync queue reads it).
                full !== undefined && full.credentialKey !== credentialKeyOf(client.clientId)
                  ? sql`UPDATE connections SET credential_key = ${credentialKeyOf(client.clientId)} WHERE org_id = ${orgId}`.pipe(Effect.orDie)
                  : Effect.void
              ], { discard: true })
          })
        )
      })

    /**
     * A kept client's call was refused for the credentials (a token refused on refresh): the client is dropped
     * and the connection marked broken, as a refusal when making a client is.
     */
    const refused = (orgId: string, message: string) =>
      Effect.sync(() => clients.delete(orgId)).pipe(Effect.zipRight(markBroken(orgId, message)))

    const importedIn = (orgId: string) =>
      sql`SELECT ${sql.unsafe(importedColumns)} FROM accounts WHERE org_id = ${orgId}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeImported),
        Effect.map((rows) => new Map(rows.map((r) => [r.upstreamAccountId, r.projectId])))
      )

    const discover = (grant: Granted<"discoverAccounts">) =>
      Effect.gen(function*() {
        const client = yield* clientFor(grant.orgId)
        const [upstreamAccounts, imported] = yield* Effect.all([client.accounts, importedIn(grant.orgId)])
        const accounts = upstreamAccounts.map((a) => ({ ...a, projectId: imported.get(a.upstreamAccountId) ?? null }))
        return { accounts, total: accounts.length, truncated: false }
      }).pipe(Effect.withSpan("Connections.discover"))

    /** Imports upstream accounts as projects; an account imported before is returned, never duplicated. */
    const importInto = (orgId: string, upstreamAccountIds: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const client = yield* clientFor(orgId)
        const reachable = new Map((yield* client.accounts).map((a): [string, UpstreamAccount] => [a.upstreamAccountId, a]))
        const unknown = upstreamAccountIds.filter((id) => !reachable.has(id))
        if (unknown.length > 0) {
          return yield* new InvalidRequest({
            message: `upstreamAccountIds: ${unknown.join(", ")} not reachable with the saved credentials (POST /connection/discover lists them)`
          })
        }
        const created: Array<string> = []
        const accounts: Array<Account> = []
        for (const id of [...new Set(upstreamAccountIds)]) {
          const a = reachable.get(id)!
          const rows = yield* accountRows.upsertImported(orgId, newId("prj"), a).pipe(Effect.orDie)
          const account = rows[0]!
          if (account.inserted) created.push(account.projectId)
          accounts.push(toAccount(account))
        }
        return { accounts, created }
      }).pipe(Effect.withSpan("Connections.import"))

    return { get, createKeyPair, update, save, clientFor, refused, discover, importInto } as const
  })
}) {}
