/** Key lifecycle over HTTP against the started server: create, use, list, revoke, uniform 401. */
import { CreatedKey } from "@acs/domain/ApiKeys"
import { ErrorBodies } from "@acs/domain/Errors"
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ApiClient, withApi } from "./support/apiClient.ts"
import { createDatabase, insertAccount, query } from "./support/database.ts"
import { BOOTSTRAP_KEY, call, type RunningServer, startServer } from "./support/server.ts"

let database: string
let server: RunningServer
let second: RunningServer
let orgId: string

beforeAll(async () => {
  database = await createDatabase()
  const env = { DATABASE_URL: database, ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY }
  server = await startServer(env)
  second = await startServer(env)
  orgId = (await query<{ org_id: string }>(database, "SELECT org_id FROM orgs"))[0]!.org_id
  await insertAccount(database, orgId, "prj_one")
  await insertAccount(database, orgId, "prj_two")
})

afterAll(async () => {
  await Promise.all([server?.stop(), second?.stop()])
})

/** `key`'s typed client of the first server, inside another client's program. */
const withKey = <A, E>(key: string, use: (client: ApiClient) => Effect.Effect<A, E>) =>
  Effect.promise(() => withApi(server.baseUrl, key, use))

/** A key made by the bootstrap admin, through the typed client. */
const createKey = (request: Parameters<ApiClient["keys"]["createKey"]>[0]["payload"]) =>
  withApi(server.baseUrl, BOOTSTRAP_KEY, (admin) => admin.keys.createKey({ payload: request }))

const unauthorizedBody = {
  error: { code: "unauthorized", message: "missing, invalid, revoked or expired credentials: send Authorization: Bearer <API key>" }
}

describe("API keys end to end", () => {
  it("creates a key whose secret is shown once and stored only as a SHA-256", async () => {
    const created = await call(`${server.api}/keys`, {
      method: "POST",
      key: BOOTSTRAP_KEY,
      body: { name: "reporting script", scope: "read" }
    })
    expect(created.status).toBe(201)
    const { key, secret } = Schema.decodeUnknownSync(CreatedKey)(created.body)
    expect(secret).toMatch(/^acs_[\w-]{43}$/)
    expect(key.scope).toBe("read")
    expect(key.binding).toEqual({ kind: "org" })

    const stored = await query<{ secret_hash: string }>(database, "SELECT secret_hash FROM api_keys WHERE key_id = $1", [key.keyId])
    expect(stored[0]!.secret_hash).toMatch(/^[0-9a-f]{64}$/)
    expect(JSON.stringify(stored)).not.toContain(secret)

    const me = await call(`${server.api}/auth/me`, { key: secret })
    expect(me.status).toBe(200)
    expect(me.body).toMatchObject({ principal: { kind: "key", id: key.keyId, scope: "read", canApprove: false } })

    const listed = await call(`${server.api}/keys`, { key: BOOTSTRAP_KEY })
    expect(listed.status).toBe(200)
    expect(listed.text).not.toContain(secret)
    expect(listed.text).not.toContain(stored[0]!.secret_hash)
    expect((await withApi(server.baseUrl, BOOTSTRAP_KEY, (admin) => admin.keys.listKeys())).keys.map((k) => k.keyId)).toContain(key.keyId)
  })

  it("binds keys to a subset or to one account, and `current` resolves to the bound account", () =>
    withApi(server.baseUrl, BOOTSTRAP_KEY, (admin) =>
      Effect.gen(function*() {
        const subset = yield* admin.keys.createKey({ payload: { name: "subset", scope: "read", projectIds: ["prj_one"] } })
        expect(subset.key.binding).toEqual({ kind: "subset", projectIds: ["prj_one"] })
        yield* withKey(subset.secret, (client) =>
          Effect.gen(function*() {
            expect((yield* client.accounts.getAccount({ path: { projectId: "prj_one" } })).account.projectId).toBe("prj_one")
            expect(yield* Effect.flip(client.accounts.getAccount({ path: { projectId: "prj_two" } }))).toMatchObject({ _tag: "AccountMismatch" })
            expect((yield* client.accounts.listAccounts()).accounts.map((a) => a.projectId)).toEqual(["prj_one"])
          }))

        const bound = yield* admin.keys.createAccountKey({ path: { projectId: "prj_two" }, payload: { name: "one account", scope: "write" } })
        expect(bound.key.binding).toEqual({ kind: "account", projectId: "prj_two" })
        yield* withKey(bound.secret, (client) =>
          Effect.map(client.accounts.getAccount({ path: { projectId: "current" } }), (current) => expect(current.account.projectId).toBe("prj_two")))
        expect(yield* Effect.flip(admin.accounts.getAccount({ path: { projectId: "current" } }))).toMatchObject({ _tag: "InvalidRequest" })
      })))

  it("answers every kind of bad credential with the same 401 body", async () => {
    const expired = await createKey({ name: "expiring", scope: "read", expiresAt: new Date(Date.now() + 3_600_000).toISOString() })
    const expiredSecret = expired.secret
    // Its hour passes at once: the expiry moved to now, rather than a wait a busy machine could outrun.
    await query(database, "UPDATE api_keys SET expires_at = now() WHERE key_id = $1 RETURNING pg_notify('acs_invalidate', 'k:' || secret_hash)", [
      expired.key.keyId
    ])
    const revokedBody = await createKey({ name: "revoked", scope: "read" })
    await withApi(server.baseUrl, BOOTSTRAP_KEY, (admin) => admin.keys.revokeKey({ path: { keyId: revokedBody.key.keyId } }))

    const answers = await Promise.all([
      call(`${server.api}/accounts`),
      call(`${server.api}/accounts`, { headers: { authorization: "Basic abc" } }),
      call(`${server.api}/accounts`, { headers: { authorization: "Bearer" } }),
      call(`${server.api}/accounts`, { key: "acs_unknown" }),
      call(`${server.api}/accounts`, { key: revokedBody.secret }),
      call(`${server.api}/accounts`, { key: expiredSecret })
    ])
    for (const answer of answers) {
      expect(answer.status).toBe(401)
      expect(answer.body).toEqual(unauthorizedBody)
    }
  })

  it("sees a revocation on a second server process on its very next request", async () => {
    const { key, secret } = await createKey({ name: "shared", scope: "read" })
    expect((await call(`${second.api}/accounts`, { key: secret })).status).toBe(200)
    expect((await call(`${server.api}/keys/${key.keyId}`, { method: "DELETE", key: BOOTSTRAP_KEY })).status).toBe(204)
    const after = await call(`${second.api}/accounts`, { key: secret })
    expect(after.status).toBe(401)
    expect(after.body).toEqual(unauthorizedBody)
  })

  it("refuses to hand out more than the creator holds", async () => {
    const { secret } = await createKey({ name: "admin, no approve", scope: "admin" })
    const escalate = await call(`${server.api}/keys`, { method: "POST", key: secret, body: { name: "x", scope: "write", canApprove: true } })
    expect(escalate.status).toBe(403)
    expect(escalate.body).toMatchObject({ error: { code: "forbidden_scope", required_grant: "approve" } })
    const unknown = await call(`${server.api}/keys`, { method: "POST", key: BOOTSTRAP_KEY, body: { name: "x", scope: "read", projectIds: ["prj_nope"] } })
    expect(unknown.status).toBe(403)
    expect(unknown.body).toMatchObject({ error: { code: "account_mismatch" } })
    expect(Schema.decodeUnknownSync(ErrorBodies.AccountMismatch)(unknown.body).message).toContain("prj_nope")
  })

  it("lets a subset-bound admin key see and revoke only keys within its reach", () =>
    withApi(server.baseUrl, BOOTSTRAP_KEY, (admin) =>
      Effect.gen(function*() {
        const subsetAdmin = yield* admin.keys.createKey({ payload: { name: "team one admin", scope: "admin", projectIds: ["prj_one"] } })
        const orgWide = yield* admin.keys.createKey({ payload: { name: "org wide", scope: "read" } })
        yield* withKey(subsetAdmin.secret, (client) =>
          Effect.gen(function*() {
            const mine = yield* client.keys.createKey({ payload: { name: "team one reader", scope: "read", projectIds: ["prj_one"] } })
            const wider = yield* Effect.flip(client.keys.createKey({ payload: { name: "wider", scope: "read", projectIds: ["prj_one", "prj_two"] } }))
            expect(wider).toMatchObject({ _tag: "AccountMismatch" })

            const ids = (yield* client.keys.listKeys()).keys.map((k) => k.keyId)
            expect(ids).toContain(mine.key.keyId)
            expect(ids).not.toContain(orgWide.key.keyId)

            expect(yield* Effect.flip(client.keys.revokeKey({ path: { keyId: orgWide.key.keyId } }))).toMatchObject({ _tag: "NotFound" })
            yield* client.keys.revokeKey({ path: { keyId: mine.key.keyId } })
          }))
        // The org-wide key the subset admin could not revoke still works; the one it revoked does not.
        yield* withKey(orgWide.secret, (client) => client.auth.getMe())
        const listed = yield* admin.keys.listKeys()
        expect(listed.keys.find((k) => k.keyId === orgWide.key.keyId)?.revokedAt).toBeNull()
      })))
})
