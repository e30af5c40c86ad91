/**
 * The org's upstream connection: credentials are tested against the platform before they are saved,
 * stored sealed (AES-256-GCM), and opened only to make a client. Also discovery and import of accounts.
 */
import type { Account } from "@acs/domain/Accounts"
import type { ConnectionRequest } from "@acs/domain/Connection"
import { ConnectionError, InvalidRequest } from "@acs/domain/Errors"
import { isP256PrivateKey } from "@acs/upstream/ClientSecret"
import { Upstream, type UpstreamAccount, type UpstreamCredentials } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { Granted } from "../auth/Access.ts"
import { SecretBox } from "../auth/SecretBox.ts"
import { newId } from "../db/Ids.ts"
import { type AccountRecord, toAccount } from "./Accounts.ts"

interface ConnectionRow {
  readonly provider: "apple" | "simulator"
  readonly credentialsEncrypted: string | null
  readonly upstreamOrgId: string | null
  readonly status: "ok" | "error"
  readonly error: string | null
  readonly checkedAt: string | null
}

const toConnection = (row: ConnectionRow | undefined) =>
  row === undefined
    ? { connected: false, provider: null, status: "not_connected" as const, upstreamOrgId: null, checkedAt: null, error: null }
    : {
      connected: row.status === "ok",
      provider: row.provider,
      status: row.status,
      upstreamOrgId: row.upstreamOrgId,
      checkedAt: row.checkedAt === null ? null : new Date(row.checkedAt).toISOString(),
      error: row.error
    }

const credentialsOf = (request: typeof ConnectionRequest.Type): UpstreamCredentials =>
  request.provider === "simulator"
    ? { provider: "simulator" }
    : {
      provider: "apple",
      clientId: request.clientId,
      teamId: request.teamId,
      keyId: request.keyId,
      privateKeyPem: request.privateKeyPem
    }

export class Connections extends Effect.Service<Connections>()("acs/Connections", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const upstream = yield* Upstream
    const box = yield* SecretBox

    const row = (orgId: string) =>
      sql<ConnectionRow>`SELECT * FROM connections WHERE org_id = ${orgId}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie)

    const get = (grant: Granted<"getConnection">) => row(grant.orgId).pipe(Effect.map(toConnection), Effect.withSpan("Connections.get"))

    /** Tests the credentials (token + account list), then saves them sealed. Refused credentials are not saved. */
    const save = (orgId: string, credentials: UpstreamCredentials) =>
      Effect.gen(function*() {
        if (credentials.provider === "apple" && !isP256PrivateKey(credentials.privateKeyPem)) {
          return yield* new InvalidRequest({ message: "privateKeyPem: not an EC P-256 private key in PEM form" })
        }
        const client = yield* upstream.connect(credentials)
        const accounts = yield* client.accounts
        const upstreamOrgId = accounts.find((a) => a.parentOrgId !== null)?.parentOrgId ?? accounts[0]?.upstreamAccountId ?? null
        const sealed = box.seal(JSON.stringify(credentials))
        const rows = yield* sql<ConnectionRow>`
          INSERT INTO connections (org_id, provider, credentials_encrypted, upstream_org_id, status, error, checked_at, updated_at)
          VALUES (${orgId}, ${credentials.provider}, ${sealed}, ${upstreamOrgId}, 'ok', NULL, now(), now())
          ON CONFLICT (org_id) DO UPDATE SET provider = excluded.provider, credentials_encrypted = excluded.credentials_encrypted,
            upstream_org_id = excluded.upstream_org_id, status = 'ok', error = NULL, checked_at = now(), updated_at = now()
          RETURNING *`.pipe(Effect.orDie)
        yield* Effect.logInfo("upstream connection saved").pipe(Effect.annotateLogs({ orgId, provider: credentials.provider }))
        return toConnection(rows[0])
      }).pipe(Effect.withSpan("Connections.save"))

    const update = (grant: Granted<"updateConnection">, request: typeof ConnectionRequest.Type) =>
      save(grant.orgId, credentialsOf(request))

    /** A client for the org's saved credentials; a refusal is recorded on the connection. */
    const clientFor = (orgId: string) =>
      Effect.gen(function*() {
        const saved = yield* row(orgId)
        if (saved === undefined || saved.credentialsEncrypted === null) {
          return yield* new ConnectionError({ message: "no upstream connection: an admin must PUT /connection first" })
        }
        const opened = box.open(saved.credentialsEncrypted)
        if (Option.isNone(opened)) {
          return yield* new ConnectionError({ message: "the saved upstream credentials cannot be decrypted with ACS_SECRETS_KEY; save them again" })
        }
        const credentials = JSON.parse(opened.value) as UpstreamCredentials
        return yield* upstream.connect(credentials).pipe(
          Effect.tapBoth({
            onFailure: (error) =>
              error._tag === "ConnectionError"
                ? sql`UPDATE connections SET status = 'error', error = ${error.message}, checked_at = now() WHERE org_id = ${orgId}`
                  .pipe(Effect.orDie)
                : Effect.void,
            // Working again after a refusal: the connection heals without a new PUT.
            onSuccess: () =>
              saved.status === "error"
                ? sql`UPDATE connections SET status = 'ok', error = NULL, checked_at = now() WHERE org_id = ${orgId}`.pipe(Effect.orDie)
                : Effect.void
          })
        )
      })

    const importedIn = (orgId: string) =>
      sql<{ upstreamAccountId: string; projectId: string }>`
        SELECT upstream_account_id, project_id FROM accounts WHERE org_id = ${orgId}`.pipe(
        Effect.map((rows) => new Map(rows.map((r) => [r.upstreamAccountId, r.projectId]))),
        Effect.orDie
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
          const rows = yield* sql<AccountRecord & { inserted: boolean }>`
            INSERT INTO accounts (project_id, org_id, upstream_account_id, name, status, currency, time_zone, read_only)
            VALUES (${newId("prj")}, ${orgId}, ${a.upstreamAccountId}, ${a.name}, 'active', ${a.currency}, ${a.timeZone}, ${a.readOnly})
            ON CONFLICT (org_id, upstream_account_id) DO UPDATE SET name = excluded.name, read_only = excluded.read_only,
              status = CASE WHEN accounts.status = 'disconnected' THEN 'active' ELSE accounts.status END
            RETURNING *, (xmax = 0) AS inserted`.pipe(Effect.orDie)
          const account = rows[0]!
          if (account.inserted) created.push(account.projectId)
          accounts.push(toAccount(account))
        }
        return { accounts, created }
      }).pipe(Effect.withSpan("Connections.import"))

    return { get, update, save, clientFor, discover, importInto } as const
  })
}) {}
