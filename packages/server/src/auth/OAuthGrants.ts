/**
 * OAuth 2.1 grants for remote MCP clients (docs/contract.md 5.5), this module owning `oauth_codes` and
 * `oauth_refresh_tokens`. A person's consent makes a one-time code (5 minutes, bound to the client, the exact
 * redirect URI, the PKCE S256 challenge and the resource); the code's exchange makes one key of that person
 * (kind `oauth`, never the approval grant) whose secret is the access token, and a refresh token. A refresh
 * rotates both: the key gets a new secret and expiry, the refresh token is spent. A code or refresh token
 * presented twice revokes the key, ending the whole grant (OAuth 2.1 §4.3.1, §4.1.3). Only SHA-256 digests
 * are stored. Lifetimes: docs/decisions/access-and-keys.md "OAuth token lifetimes".
 */
import { type AcsError, InvalidRequest } from "@acs/domain/Errors"
import type { OAuthConsentRequest } from "@acs/domain/OAuth"
import type { Binding } from "@acs/domain/Principal"
import { SqlClient } from "@effect/sql"
import { Clock, Config, Effect, Option, Schema } from "effect"
import * as Crypto from "node:crypto"
import { decodeRows } from "../db/Rows.ts"
import type { Granted } from "./Access.ts"
import { KeyStore } from "./KeyStore.ts"
import { OAuthClients } from "./OAuthClients.ts"
import { invalidGrant, OAuthFailure } from "./OAuthFailure.ts"
import { People, personPrincipal } from "./People.ts"
import { newSessionToken, sha256 } from "./Secrets.ts"

const OAuthConfig = Config.all({
  accessTokenSeconds: Config.integer("OAUTH_ACCESS_TOKEN_TTL_SECONDS").pipe(Config.withDefault(3600)),
  refreshTokenDays: Config.integer("OAUTH_REFRESH_TOKEN_TTL_DAYS").pipe(Config.withDefault(30))
})

const CODE_TTL_SECONDS = 300

/** An `oauth_codes` row as its exchange reads it, with whether it is still within its lifetime. */
const CodeRow = Schema.Struct({
  clientId: Schema.String,
  orgId: Schema.String,
  personId: Schema.String,
  redirectUri: Schema.String,
  codeChallenge: Schema.String,
  resource: Schema.String,
  scope: Schema.Literal("read", "write"),
  projectIds: Schema.NullOr(Schema.Array(Schema.String)),
  live: Schema.Boolean
})
const decodeCodes = decodeRows(CodeRow)

/** An `oauth_refresh_tokens` row as its use reads it. */
const RefreshRow = Schema.Struct({ keyId: Schema.String, clientId: Schema.String, resource: Schema.String, live: Schema.Boolean })
const decodeRefresh = decodeRows(RefreshRow)

/** A spent code or refresh token: the key it made, to revoke, and its org. */
const SpentRow = Schema.Struct({ keyId: Schema.NullOr(Schema.String), orgId: Schema.NullOr(Schema.String), clientId: Schema.String })
const decodeSpent = decodeRows(SpentRow)

/** RFC 7636: 43 to 128 characters of the unreserved set. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/

const s256 = (verifier: string): string => Crypto.createHash("sha256").update(verifier).digest("base64url")

/** Equal strings, compared in constant time. */
const same = (a: string, b: string): boolean => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && Crypto.timingSafeEqual(x, y)
}

/** The redirect URI exactly as registered, with the answer's parameters added to its query. */
const redirectWith = (uri: string, params: Record<string, string | undefined>): string => {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, value)
  return `${uri}${uri.includes("?") ? "&" : "?"}${query.toString()}`
}

const bindingOf = (projectIds: ReadonlyArray<string> | null | undefined): Binding =>
  projectIds === null || projectIds === undefined ? { kind: "org" } : { kind: "subset", projectIds: [...new Set(projectIds)] }

/** Codes that expired before `cutoff` (webhooks/Retention.ts): past it, a reuse is refused as unknown all the same. */
export const pruneOAuthCodes = (sql: SqlClient.SqlClient, cutoff: Date, limit: number): Effect.Effect<number> =>
  sql`DELETE FROM oauth_codes WHERE code_hash IN (
    SELECT code_hash FROM oauth_codes WHERE expires_at < ${cutoff} LIMIT ${limit}) RETURNING code_hash`.pipe(
    Effect.map((rows) => rows.length),
    Effect.orDie
  )

/** Refresh tokens that expired before `cutoff`, used or not. */
export const pruneOAuthRefreshTokens = (sql: SqlClient.SqlClient, cutoff: Date, limit: number): Effect.Effect<number> =>
  sql`DELETE FROM oauth_refresh_tokens WHERE token_hash IN (
    SELECT token_hash FROM oauth_refresh_tokens WHERE expires_at < ${cutoff} LIMIT ${limit}) RETURNING token_hash`.pipe(
    Effect.map((rows) => rows.length),
    Effect.orDie
  )

export interface TokenAnswer {
  readonly access_token: string
  readonly token_type: "Bearer"
  readonly expires_in: number
  readonly refresh_token: string
  readonly scope: string
}

export class OAuthGrants extends Effect.Service<OAuthGrants>()("acs/OAuthGrants", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const keys = yield* KeyStore
    const people = yield* People
    const clients = yield* OAuthClients
    const config = yield* OAuthConfig

    const accessExpiry = Effect.map(Clock.currentTimeMillis, (now) => new Date(now + config.accessTokenSeconds * 1000).toISOString())

    const newRefreshToken = (keyId: string, clientId: string, resource: string) =>
      Effect.gen(function*() {
        const token = `acsr_${newSessionToken()}`
        yield* sql`
          INSERT INTO oauth_refresh_tokens (token_hash, key_id, client_id, resource, expires_at)
          VALUES (${sha256(token)}, ${keyId}, ${clientId}, ${resource}, now() + make_interval(days => ${config.refreshTokenDays}))`.pipe(Effect.orDie)
        return token
      })

    /** Ends a grant: its key is revoked (every instance forgets it), so its refresh tokens are refused too. */
    const revokeGrant = (orgId: string, keyId: string) => Effect.ignore(keys.revokeInOrg(orgId, keyId))

    /** The consent page's decision (docs/contract.md 5.5): where the browser goes next. */
    const consent = (grant: Granted<"authorizeOAuthClient">, request: OAuthConsentRequest) =>
      Effect.gen(function*() {
        const person = grant.principal
        if (person.kind !== "person") {
          return yield* new InvalidRequest({ message: "consent to an OAuth client is a signed-in person's; an API key cannot give it" })
        }
        const client = yield* clients.find(request.clientId)
        if (Option.isNone(client)) return yield* new InvalidRequest({ message: "clientId: no such OAuth client" })
        // Never redirect anywhere the client did not register, byte for byte.
        if (!client.value.redirectUris.includes(request.redirectUri)) {
          return yield* new InvalidRequest({ message: "redirectUri: not one this client registered; nothing is redirected" })
        }
        if (!URL.canParse(request.resource)) return yield* new InvalidRequest({ message: "resource: an absolute URL" })
        if (request.decision === "deny") {
          yield* Effect.logInfo("oauth consent denied").pipe(Effect.annotateLogs({ clientId: request.clientId, personId: person.id }))
          return {
            redirectTo: redirectWith(request.redirectUri, {
              error: "access_denied",
              error_description: "the person denied the request",
              state: request.state
            })
          }
        }
        const binding = bindingOf(request.projectIds)
        yield* keys.checkOAuthSpec(person, { name: client.value.clientName, scope: request.scope, binding, expiresAt: null })
        const code = newSessionToken()
        yield* sql`
          INSERT INTO oauth_codes (code_hash, client_id, org_id, person_id, redirect_uri, code_challenge, resource, scope, project_ids, expires_at)
          VALUES (${sha256(code)}, ${request.clientId}, ${person.orgId}, ${person.id}, ${request.redirectUri}, ${request.codeChallenge},
                  ${request.resource}, ${request.scope},
                  ${binding.kind === "subset" ? JSON.stringify(binding.projectIds) : null}::jsonb,
                  now() + make_interval(secs => ${CODE_TTL_SECONDS}))`.pipe(Effect.orDie)
        yield* Effect.logInfo("oauth consent given").pipe(
          Effect.annotateLogs({ clientId: request.clientId, personId: person.id, scope: request.scope })
        )
        return { redirectTo: redirectWith(request.redirectUri, { code, state: request.state }) }
      }).pipe(Effect.withSpan("OAuthGrants.consent"))

    /** `grant_type=authorization_code`: the code, once, by the client it was issued to, with the PKCE verifier. */
    const exchangeCode = (input: {
      readonly code: string
      readonly codeVerifier: string
      readonly clientId: string
      readonly redirectUri: string
      readonly resource: string | undefined
    }): Effect.Effect<TokenAnswer, OAuthFailure> =>
      Effect.gen(function*() {
        const codeHash = sha256(input.code)
        const rows = yield* sql`
          WITH used AS (UPDATE oauth_codes SET used_at = now() WHERE code_hash = ${codeHash} AND used_at IS NULL RETURNING *)
          -- Whether it is live read beside the statement's RETURNING, not in it: Citus refuses a stable function there.
          SELECT client_id, org_id, person_id, redirect_uri, code_challenge, resource, scope, project_ids, expires_at > now() AS live FROM used`.pipe(
          Effect.orDie,
          Effect.flatMap(decodeCodes)
        )
        const row = rows[0]
        if (row === undefined) {
          const spent = yield* sql`
            SELECT c.key_id, k.org_id, c.client_id FROM oauth_codes c LEFT JOIN api_keys k USING (key_id)
            WHERE c.code_hash = ${codeHash}`.pipe(Effect.orDie, Effect.flatMap(decodeSpent))
          const used = spent[0]
          if (used?.keyId != null && used.orgId !== null) {
            yield* revokeGrant(used.orgId, used.keyId)
            yield* Effect.logWarning("oauth code reused; its grant revoked").pipe(Effect.annotateLogs({ keyId: used.keyId }))
          }
          return yield* invalidGrant(used === undefined ? "unknown authorization code" : "the authorization code was already used")
        }
        if (!row.live) return yield* invalidGrant("the authorization code expired")
        if (row.clientId !== input.clientId) return yield* invalidGrant("the authorization code was issued to another client")
        if (row.redirectUri !== input.redirectUri) return yield* invalidGrant("redirect_uri: not the one the code was issued for")
        if (!VERIFIER.test(input.codeVerifier) || !same(s256(input.codeVerifier), row.codeChallenge)) {
          return yield* invalidGrant("code_verifier: does not match the code_challenge (S256)")
        }
        if (input.resource !== undefined && input.resource !== row.resource) {
          return yield* new OAuthFailure({ error: "invalid_target", description: "resource: not the one consented to", status: 400 })
        }
        const person = yield* people.findById(row.personId)
        if (Option.isNone(person)) return yield* invalidGrant("the person who consented is disabled")
        const client = yield* clients.find(row.clientId)
        const name = Option.match(client, { onNone: () => "OAuth client", onSome: (c) => c.clientName })
        const created = yield* keys.createOAuthKey(
          personPrincipal(person.value, null),
          { name, scope: row.scope, binding: bindingOf(row.projectIds), expiresAt: yield* accessExpiry },
          row.clientId
        ).pipe(Effect.mapError((e: AcsError) => invalidGrant(`the person can no longer grant this: ${e.message}`)))
        yield* sql`UPDATE oauth_codes SET key_id = ${created.key.keyId} WHERE code_hash = ${codeHash}`.pipe(Effect.orDie)
        const refreshToken = yield* newRefreshToken(created.key.keyId, row.clientId, row.resource)
        return {
          access_token: created.secret,
          token_type: "Bearer",
          expires_in: config.accessTokenSeconds,
          refresh_token: refreshToken,
          scope: created.key.scope
        } as const
      }).pipe(Effect.withSpan("OAuthGrants.exchangeCode"))

    /** `grant_type=refresh_token`: a new access token and refresh token; a spent refresh token ends the grant. */
    const refresh = (input: { readonly refreshToken: string; readonly clientId: string; readonly resource: string | undefined }) =>
      Effect.gen(function*() {
        const tokenHash = sha256(input.refreshToken)
        const rows = yield* sql`
          WITH used AS (UPDATE oauth_refresh_tokens SET used_at = now()
            WHERE token_hash = ${tokenHash} AND client_id = ${input.clientId} AND used_at IS NULL RETURNING *)
          SELECT key_id, client_id, resource, expires_at > now() AS live FROM used`.pipe(Effect.orDie, Effect.flatMap(decodeRefresh))
        const row = rows[0]
        if (row === undefined) {
          const spent = yield* sql`
            SELECT r.key_id, k.org_id, r.client_id FROM oauth_refresh_tokens r JOIN api_keys k USING (key_id)
            WHERE r.token_hash = ${tokenHash} AND r.used_at IS NOT NULL`.pipe(Effect.orDie, Effect.flatMap(decodeSpent))
          const used = spent[0]
          if (used === undefined || used.clientId !== input.clientId) return yield* invalidGrant("unknown refresh token")
          if (used.keyId !== null && used.orgId !== null) yield* revokeGrant(used.orgId, used.keyId)
          yield* Effect.logWarning("oauth refresh token reused; its grant revoked").pipe(Effect.annotateLogs({ keyId: used.keyId }))
          return yield* invalidGrant("the refresh token was already used: the grant is revoked; sign in again")
        }
        if (!row.live) return yield* invalidGrant("the refresh token expired; sign in again")
        if (input.resource !== undefined && input.resource !== row.resource) {
          return yield* new OAuthFailure({ error: "invalid_target", description: "resource: not the one consented to", status: 400 })
        }
        const rotated = yield* keys.rotateOAuthKey(row.keyId, yield* accessExpiry)
        if (Option.isNone(rotated)) return yield* invalidGrant("the grant was revoked; sign in again")
        const refreshToken = yield* newRefreshToken(row.keyId, row.clientId, row.resource)
        return {
          access_token: rotated.value.secret,
          token_type: "Bearer",
          expires_in: config.accessTokenSeconds,
          refresh_token: refreshToken,
          scope: rotated.value.scope
        } as const
      }).pipe(Effect.withSpan("OAuthGrants.refresh"))

    /**
     * RFC 7009: an access token or a refresh token ends its whole grant. An unknown token is no error (the
     * answer is the same, so revocation tells nothing about which tokens exist).
     */
    const revoke = (token: string) =>
      Effect.gen(function*() {
        const byAccess = yield* keys.findOAuthKey(token)
        if (Option.isSome(byAccess)) return yield* revokeGrant(byAccess.value.orgId, byAccess.value.keyId)
        const byRefresh = yield* sql`
          SELECT r.key_id, k.org_id, r.client_id FROM oauth_refresh_tokens r JOIN api_keys k USING (key_id)
          WHERE r.token_hash = ${sha256(token)}`.pipe(Effect.orDie, Effect.flatMap(decodeSpent))
        const row = byRefresh[0]
        if (row?.keyId != null && row.orgId !== null) yield* revokeGrant(row.orgId, row.keyId)
      }).pipe(Effect.withSpan("OAuthGrants.revoke"))

    return { consent, exchangeCode, refresh, revoke } as const
  }),
  dependencies: [OAuthClients.Default, KeyStore.Default, People.Default]
}) {}
