/**
 * API keys (docs/contract.md 2.4): the secret is returned once and only its SHA-256 is stored. A request's key lookup is
 * served from a short-lived cache that every instance drops on the key's change notification
 * (db/Invalidation.ts), so a revocation is seen by every instance on its next request.
 *
 * A key is bounded by its person (docs/contract.md 5.2): each key records its root as it is
 * created (the person at the end of its creator chain, or the org key it descends from), acts with at most that
 * person's current role and grant, and not at all while that person is disabled. A person's change drops every
 * cached key on every instance (migration 0027). Org keys (the bootstrap key, `acs keys create`) and the keys
 * they make depend on nobody.
 */
import type { ApiKey, CreateKeyRequest } from "@acs/domain/ApiKeys"
import { AccountMismatch, ForbiddenScope, InvalidRequest, NotFound } from "@acs/domain/Errors"
import { satisfiesScope } from "@acs/domain/Operations"
import type { Root } from "@acs/domain/FourEyes"
import { type Binding, type Principal, roleAccess, RoleSchema, ScopeSchema } from "@acs/domain/Principal"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Option, Schema } from "effect"
import { Accounts, boundProjects, covers } from "../accounts/Accounts.ts"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { newId } from "../db/Ids.ts"
import { invalidateKey, invalidating, Invalidation } from "../db/Invalidation.ts"
import { columnsOf, countOf, decodeRows } from "../db/Rows.ts"
import type { Granted } from "./Access.ts"
import { newKeySecret, sha256 } from "./Secrets.ts"

/** An `api_keys` row (its secret's hash aside), this module being the table's owner. */
const KeyRow = Schema.Struct({
  keyId: Schema.String,
  kind: Schema.Literal("api", "oauth"),
  orgId: Schema.String,
  name: Schema.String,
  scope: ScopeSchema,
  canApprove: Schema.Boolean,
  bindingKind: Schema.Literal("org", "subset", "account"),
  projectIds: Schema.Array(Schema.String),
  expiresAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  lastUsedAt: Schema.NullOr(Schema.String),
  revokedAt: Schema.NullOr(Schema.String),
  createdBy: Schema.NullOr(Schema.String),
  /** The person at the root of the key's creator chain; null for an org key and the keys it made. */
  rootPersonId: Schema.NullOr(Schema.String),
  /** The org key the key descends from; null for an org key itself and for person-rooted keys. */
  rootKeyId: Schema.NullOr(Schema.String)
})
type KeyRow = typeof KeyRow.Type

/** A key row with what its root is now: the person's name, role and whether they are disabled, or the org key's name. */
const RootedKeyRow = Schema.Struct({
  ...KeyRow.fields,
  rootName: Schema.String,
  rootRole: Schema.NullOr(RoleSchema),
  rootDisabledAt: Schema.NullOr(Schema.String)
})
type RootedKeyRow = typeof RootedKeyRow.Type

const decodeKeys = decodeRows(KeyRow)
const decodeRootedKeys = decodeRows(RootedKeyRow)

const keyColumns = columnsOf(KeyRow)

/** What a revocation returns: the key and the hash it is cached under. */
const RevokedKey = Schema.Struct({ keyId: KeyRow.fields.keyId, secretHash: Schema.String })
const revokedColumns = columnsOf(RevokedKey)
const decodeRevoked = decodeRows(RevokedKey)

/** What a rotated OAuth key returns: its scope, and the hash its old secret was cached under. */
const decodeRotated = decodeRows(Schema.Struct({ scope: ScopeSchema, secretHash: Schema.String }))

/** The joins that find a key's root; `k` is the key. */
const ROOT_COLUMNS = `${columnsOf(KeyRow, "k")}, coalesce(p.name, rk.name, k.name) AS root_name, p.role AS root_role, p.disabled_at AS root_disabled_at`
const ROOT_JOINS = `LEFT JOIN people p ON p.person_id = k.root_person_id LEFT JOIN api_keys rk ON rk.key_id = k.root_key_id`

const rootOf = (row: RootedKeyRow): Root =>
  row.rootPersonId !== null
    ? { kind: "person", id: row.rootPersonId, name: row.rootName }
    : { kind: "key", id: row.rootKeyId ?? row.keyId, name: row.rootName }

/** What the key may do now: its own scope and grant, at most its person's current role's; null while that person is disabled. */
const effectiveOf = (row: RootedKeyRow): { readonly scope: ApiKey["scope"]; readonly canApprove: boolean } | null => {
  if (row.rootPersonId === null || row.rootRole === null) return { scope: row.scope, canApprove: row.canApprove }
  if (row.rootDisabledAt !== null) return null
  const person = roleAccess[row.rootRole]
  return {
    scope: satisfiesScope(person.scope, row.scope) ? row.scope : person.scope,
    canApprove: row.canApprove && person.canApprove
  }
}

const iso = (timestamp: string | null): string | null => timestamp === null ? null : new Date(timestamp).toISOString()

const bindingOf = (row: KeyRow): Binding =>
  row.bindingKind === "org"
    ? { kind: "org" }
    : row.bindingKind === "subset"
    ? { kind: "subset", projectIds: row.projectIds }
    : { kind: "account", projectId: row.projectIds[0] ?? "" }

const toApiKey = (row: RootedKeyRow): ApiKey => ({
  keyId: row.keyId,
  kind: row.kind,
  name: row.name,
  scope: row.scope,
  canApprove: row.canApprove,
  binding: bindingOf(row),
  expiresAt: iso(row.expiresAt),
  createdAt: iso(row.createdAt) ?? "",
  lastUsedAt: iso(row.lastUsedAt),
  revokedAt: iso(row.revokedAt),
  createdBy: row.createdBy === OPERATOR ? null : row.createdBy,
  root: rootOf(row),
  effective: effectiveOf(row)
})

/** The person whose own keys a call names: a signed-in person only (a key has no keys of its own to list). */
const ownerOf = (principal: Principal): Effect.Effect<string, InvalidRequest> =>
  principal.kind === "person"
    ? Effect.succeed(principal.id)
    : Effect.fail(new InvalidRequest({ message: "a person's own keys are theirs to see signed in; an admin lists every key with GET /keys" }))

/** What a new key asks for: the creator may hand out at most what it holds itself. */
export interface KeySpec {
  readonly name: string
  readonly scope: ApiKey["scope"]
  readonly canApprove: boolean
  readonly binding: Binding
  readonly expiresAt: string | null
}

export const specFromRequest = (request: CreateKeyRequest): KeySpec => ({
  name: request.name,
  scope: request.scope,
  canApprove: request.canApprove ?? false,
  binding: request.projectIds ? { kind: "subset", projectIds: [...new Set(request.projectIds)] } : { kind: "org" },
  expiresAt: request.expiresAt ?? null
})

const LAST_USED_RESOLUTION_MS = 60_000

/** `created_by` of keys made on the database by an operator, not by a principal. */
const OPERATOR = "operator"

/** A live key as the cache holds it: its principal, when it expires, and when its use was last recorded. */
interface LiveKey {
  readonly principal: Principal
  readonly expiresAtMs: number | null
  /** Mutable: the minute-resolution `last_used_at` write is throttled per cached key. */
  lastUsedMs: number
}

export class KeyStore extends Effect.Service<KeyStore>()("acs/KeyStore", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const accounts = yield* Accounts
    const liveKeys = (yield* Invalidation).cache<LiveKey>("k")

    const checkSpec = (creator: Principal, orgId: string, spec: KeySpec) =>
      Effect.gen(function*() {
        if (spec.expiresAt !== null && Date.parse(spec.expiresAt) <= Date.now()) {
          return yield* new InvalidRequest({ message: "expiresAt: must be in the future" })
        }
        if (!satisfiesScope(creator.scope, spec.scope)) {
          return yield* new ForbiddenScope({
            message: `a credential with scope "${creator.scope}" cannot create a key with scope "${spec.scope}"`,
            required_scope: spec.scope,
            key_scope: creator.scope
          })
        }
        if (spec.canApprove && !creator.canApprove) {
          return yield* new ForbiddenScope({
            message: "only a credential with the canApprove grant can create a key with it",
            required_grant: "approve"
          })
        }
        if (!covers(creator.binding, spec.binding)) {
          return yield* new AccountMismatch({ message: "a key cannot reach accounts its creator cannot reach" })
        }
        const projectIds = boundProjects(spec.binding)
        // Unknown ids and another org's ids answer alike, as in access(): existence never leaks.
        const known = new Set(yield* accounts.existing(orgId, projectIds))
        const unknown = projectIds.filter((id) => !known.has(id))
        if (unknown.length > 0) {
          return yield* new AccountMismatch({ message: `projectIds: this credential cannot reach ${unknown.join(", ")}` })
        }
        return projectIds
      })

    /**
     * The new key inherits its creator's root, which the creator's row fixed when it was made: a chain is never
     * walked, and never loops (a creator exists before what it creates). No creator: an org key, its own root.
     */
    const insert = (
      orgId: string,
      spec: KeySpec,
      projectIds: ReadonlyArray<string>,
      secret: string,
      creator: Principal | undefined,
      oauthClientId: string | null = null
    ) =>
      sql`
        WITH k AS (
          INSERT INTO api_keys (key_id, org_id, name, secret_hash, scope, can_approve, binding_kind, project_ids, expires_at, created_by,
                                root_person_id, root_key_id, kind, oauth_client_id)
          VALUES (${newId("key")}, ${orgId}, ${spec.name}, ${sha256(secret)}, ${spec.scope}, ${spec.canApprove},
                  ${spec.binding.kind}, ${JSON.stringify(projectIds)}::jsonb, ${spec.expiresAt},
                  ${creator === undefined ? OPERATOR : `${creator.kind}:${creator.id}`},
                  ${creator?.root.kind === "person" ? creator.root.id : null}, ${creator?.root.kind === "key" ? creator.root.id : null},
                  ${oauthClientId === null ? "api" : "oauth"}, ${oauthClientId})
          RETURNING *
        )
        SELECT ${sql.unsafe(ROOT_COLUMNS)} FROM k ${sql.unsafe(ROOT_JOINS)}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeRootedKeys),
        Effect.map((rows) => toApiKey(rows[0]!))
      )

    const create = (grant: Granted<"createKey"> | Granted<"createAccountKey">, spec: KeySpec) =>
      Effect.gen(function*() {
        const projectIds = yield* checkSpec(grant.principal, grant.orgId, spec)
        const secret = newKeySecret()
        const key = yield* insert(grant.orgId, spec, projectIds, secret, grant.principal)
        yield* Effect.logInfo("api key created").pipe(Effect.annotateLogs({ keyId: key.keyId, scope: key.scope }))
        return { key, secret }
      }).pipe(Effect.withSpan("KeyStore.create"))

    /** For the CLI and first-start seeding: an operator on the database needs no principal. */
    const createAsOperator = (orgId: string, spec: KeySpec, secret = newKeySecret()) =>
      insert(orgId, spec, boundProjects(spec.binding), secret, undefined).pipe(
        Effect.map((key) => ({ key, secret })),
        Effect.withSpan("KeyStore.createAsOperator")
      )

    const listInOrg = (orgId: string) =>
      sql`
        SELECT ${sql.unsafe(ROOT_COLUMNS)} FROM api_keys k ${sql.unsafe(ROOT_JOINS)}
        WHERE k.org_id = ${orgId} ORDER BY k.created_at DESC, k.key_id`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeRootedKeys),
        Effect.map((rows) => rows.map(toApiKey)),
        Effect.withSpan("KeyStore.list")
      )

    /** The org's keys this principal could have created: a subset-bound admin sees only keys within its reach. */
    const list = (grant: Granted<"listKeys">) =>
      listInOrg(grant.orgId).pipe(Effect.map((keys) => keys.filter((key) => covers(grant.principal.binding, key.binding))))

    const revokeInOrg = (orgId: string, keyId: string) =>
      // Only a live key is stamped: Citus refuses a stable function in a COALESCE or over the row in RETURNING.
      invalidating(sql, "k", sql`
        UPDATE api_keys SET revoked_at = now()
        WHERE key_id = ${keyId} AND org_id = ${orgId} AND revoked_at IS NULL
        RETURNING ${sql.unsafe(revokedColumns)}, ${invalidateKey(sql, sql`secret_hash`)}`).pipe(
        // A key revoked before (by another transaction) changed nothing here, and is found as it is.
        Effect.flatMap((revoked) =>
          revoked.length > 0 ? Effect.succeed(revoked) : sql`SELECT ${sql.unsafe(revokedColumns)} FROM api_keys WHERE key_id = ${keyId} AND org_id = ${orgId}`
        ),
        Effect.orDie,
        Effect.flatMap(decodeRevoked),
        Effect.flatMap((rows) =>
          rows[0] === undefined
            ? Effect.fail(new NotFound({ message: `no key ${keyId} in this org` }))
            // Committed: this instance forgets the key now; the others on the notification sent with the change.
            : Effect.sync(() => liveKeys.invalidate(rows[0]!.secretHash))
        ),
        Effect.tap(() => Effect.logInfo("api key revoked").pipe(Effect.annotateLogs({ keyId }))),
        Effect.withSpan("KeyStore.revoke")
      )

    const revoke = (grant: Granted<"revokeKey">, keyId: string) =>
      Effect.gen(function*() {
        const rows = yield* sql`SELECT ${sql.unsafe(keyColumns)} FROM api_keys WHERE key_id = ${keyId} AND org_id = ${grant.orgId}`.pipe(
          Effect.orDie,
          Effect.flatMap(decodeKeys)
        )
        const row = rows[0]
        // A key outside the caller's reach is as invisible here as it is in the list.
        if (row === undefined || !covers(grant.principal.binding, bindingOf(row))) {
          return yield* new NotFound({ message: `no key ${keyId} that this credential can manage` })
        }
        yield* revokeInOrg(grant.orgId, keyId)
      })

    /** The keys that answer to the signed-in person: whatever their role, a person sees and ends what acts for them. */
    const listOwn = (grant: Granted<"listMyKeys">) =>
      Effect.gen(function*() {
        const person = yield* ownerOf(grant.principal)
        return yield* sql`
          SELECT ${sql.unsafe(ROOT_COLUMNS)} FROM api_keys k ${sql.unsafe(ROOT_JOINS)}
          WHERE k.org_id = ${grant.orgId} AND k.root_person_id = ${person} ORDER BY k.created_at DESC, k.key_id`.pipe(
          Effect.orDie,
          Effect.flatMap(decodeRootedKeys),
          Effect.map((rows) => rows.map(toApiKey))
        )
      }).pipe(Effect.withSpan("KeyStore.listOwn"))

    const revokeOwn = (grant: Granted<"revokeMyKey">, keyId: string) =>
      Effect.gen(function*() {
        const person = yield* ownerOf(grant.principal)
        const rows = yield* sql`SELECT key_id FROM api_keys WHERE key_id = ${keyId} AND org_id = ${grant.orgId} AND root_person_id = ${person}`.pipe(
          Effect.orDie
        )
        if (rows.length === 0) return yield* new NotFound({ message: `no key ${keyId} of yours` })
        yield* revokeInOrg(grant.orgId, keyId)
      })

    /** A key that is not revoked, not expired and whose person is not disabled, with what it may do now. */
    const loadLiveKey = (secretHash: string) =>
      sql`/* prepared */
        SELECT ${sql.unsafe(ROOT_COLUMNS)} FROM api_keys k ${sql.unsafe(ROOT_JOINS)}
        WHERE k.secret_hash = ${secretHash} AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`.pipe(
        Effect.flatMap(decodeRootedKeys),
        Effect.map((rows) =>
          Option.flatMap(Option.fromNullable(rows[0]), (row) => {
            const effective = effectiveOf(row)
            if (effective === null) return Option.none()
            return Option.some<LiveKey>({
              principal: {
                kind: "key",
                id: row.keyId,
                name: row.name,
                orgId: row.orgId,
                scope: effective.scope,
                canApprove: effective.canApprove,
                binding: bindingOf(row),
                role: null,
                expiresAt: iso(row.expiresAt),
                root: rootOf(row)
              },
              expiresAtMs: row.expiresAt === null ? null : Date.parse(row.expiresAt),
              lastUsedMs: row.lastUsedAt === null ? 0 : Date.parse(row.lastUsedAt)
            })
          })
        ),
        Effect.withSpan("KeyStore.load", HOT_SPAN)
      )

    /** The principal for a presented secret, if the key exists, is not revoked and has not expired. */
    const authenticate = (secret: string) =>
      Effect.gen(function*() {
        const secretHash = sha256(secret)
        const found = yield* liveKeys.get(secretHash, loadLiveKey(secretHash))
        if (Option.isNone(found)) return Option.none<Principal>()
        const key = found.value
        const now = yield* Clock.currentTimeMillis
        // A cached key can pass its expiry while cached.
        if (key.expiresAtMs !== null && key.expiresAtMs <= now) return Option.none<Principal>()
        if (now - key.lastUsedMs > LAST_USED_RESOLUTION_MS) {
          // Recorded at minute resolution and off the request path: no write on every call.
          key.lastUsedMs = now
          yield* Effect.forkDaemon(
            // A read may be served from the cache before its barrier settles (db/Invalidation.ts): a key revoked meanwhile is not "used".
            sql`UPDATE api_keys SET last_used_at = now() WHERE key_id = ${key.principal.id} AND revoked_at IS NULL`.pipe(Effect.ignore)
          )
        }
        return Option.some(key.principal)
      }).pipe(Effect.orDie)

    /**
     * Revokes every live key rooted at the person (made by them, or by a key of theirs, at any depth): their
     * agents stop on every instance from the next request, as for one key. Org keys are not theirs.
     */
    const revokeRootedAt = (grant: Granted<"revokePersonKeys">, personId: string) =>
      Effect.gen(function*() {
        const people = yield* sql`SELECT person_id FROM people WHERE person_id = ${personId} AND org_id = ${grant.orgId}`
        if (people.length === 0) return yield* new NotFound({ message: `no person ${personId} in this workspace` })
        const rows = yield* sql`
          UPDATE api_keys SET revoked_at = now()
          WHERE root_person_id = ${personId} AND org_id = ${grant.orgId} AND revoked_at IS NULL
          RETURNING ${sql.unsafe(revokedColumns)}, ${invalidateKey(sql, sql`secret_hash`)}`.pipe(
          (statement) => invalidating(sql, "k", statement),
          Effect.flatMap(decodeRevoked)
        )
        // Committed: this instance forgets the keys now; the others on the notifications sent with the change.
        for (const row of rows) liveKeys.invalidate(row.secretHash)
        const revokedKeyIds = rows.map((row) => row.keyId).sort()
        yield* Effect.logInfo("a person's api keys revoked").pipe(
          Effect.annotateLogs({ personId, by: `${grant.principal.kind}:${grant.principal.id}`, keys: revokedKeyIds.length })
        )
        return { revokedKeyIds }
      }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("KeyStore.revokeRootedAt"))

    /**
     * An OAuth client's grant as a key of the person who consented (docs/contract.md 5.5): checked against the
     * person's reach as any key they make, never with the approval grant. Its secret is the first access token.
     */
    /** Whether the person may grant a client this (refused as they would be making such a key themselves). */
    const checkOAuthSpec = (person: Principal, spec: Omit<KeySpec, "canApprove">) =>
      Effect.asVoid(checkSpec(person, person.orgId, { ...spec, canApprove: false }))

    const createOAuthKey = (person: Principal, spec: Omit<KeySpec, "canApprove">, clientId: string) =>
      Effect.gen(function*() {
        const oauthSpec: KeySpec = { ...spec, canApprove: false }
        const projectIds = yield* checkSpec(person, person.orgId, oauthSpec)
        const secret = newKeySecret()
        const key = yield* insert(person.orgId, oauthSpec, projectIds, secret, person, clientId)
        yield* Effect.logInfo("oauth key created").pipe(Effect.annotateLogs({ keyId: key.keyId, scope: key.scope, clientId }))
        return { key, secret }
      }).pipe(Effect.withSpan("KeyStore.createOAuthKey"))

    /**
     * A refreshed OAuth grant: the key gets a new secret (the new access token) and expiry; the old token stops at
     * once, on every instance. None when the key is revoked or its person disabled.
     */
    const rotateOAuthKey = (keyId: string, expiresAt: string) =>
      Effect.gen(function*() {
        const secret = newKeySecret()
        const rows = yield* invalidating(sql, "k", sql`
          UPDATE api_keys k SET secret_hash = ${sha256(secret)}, expires_at = ${expiresAt}
          FROM (SELECT key_id, secret_hash FROM api_keys WHERE key_id = ${keyId} FOR UPDATE) old
          WHERE k.key_id = old.key_id AND k.kind = 'oauth' AND k.revoked_at IS NULL
            AND NOT EXISTS (SELECT 1 FROM people p WHERE p.person_id = k.root_person_id AND p.disabled_at IS NOT NULL)
          RETURNING k.scope, old.secret_hash, ${invalidateKey(sql, sql`old.secret_hash`)}`).pipe(
          Effect.orDie,
          Effect.flatMap(decodeRotated)
        )
        const row = rows[0]
        if (row === undefined) return Option.none<{ readonly secret: string; readonly scope: ApiKey["scope"] }>()
        liveKeys.invalidate(row.secretHash)
        return Option.some({ secret, scope: row.scope })
      }).pipe(Effect.withSpan("KeyStore.rotateOAuthKey"))

    /** The OAuth key a presented access token is the secret of, live or not. */
    const findOAuthKey = (secret: string) =>
      sql`SELECT key_id, org_id FROM api_keys WHERE secret_hash = ${sha256(secret)} AND kind = 'oauth'`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeRows(Schema.Struct({ keyId: Schema.String, orgId: Schema.String }))),
        Effect.map((rows) => Option.fromNullable(rows[0]))
      )

    const isEmpty = sql`SELECT count(*)::int AS n FROM api_keys`.pipe(
      Effect.orDie,
      Effect.flatMap(countOf),
      Effect.map((n) => n === 0)
    )

    return {
      create,
      createAsOperator,
      checkOAuthSpec,
      createOAuthKey,
      rotateOAuthKey,
      findOAuthKey,
      list,
      listInOrg,
      listOwn,
      revoke,
      revokeOwn,
      revokeInOrg,
      revokeRootedAt,
      authenticate,
      isEmpty
    } as const
  }),
  dependencies: [Invalidation.Default]
}) {}
