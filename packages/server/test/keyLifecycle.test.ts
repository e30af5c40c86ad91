/** Key lifecycle over HTTP against the started server: create, use, list, revoke, uniform 401. */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase, insertAccount, query } from "./support/database.ts"
import { BOOTSTRAP_KEY, call, errorCode, type RunningServer, startServer } from "./support/server.ts"

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
    const { key, secret } = created.body as { key: { keyId: string; scope: string; binding: unknown }; secret: string }
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
    expect((listed.body as { keys: Array<{ keyId: string }> }).keys.map((k) => k.keyId)).toContain(key.keyId)
  })

  it("binds keys to a subset or to one account, and `current` resolves to the bound account", async () => {
    const subset = await call(`${server.api}/keys`, {
      method: "POST",
      key: BOOTSTRAP_KEY,
      body: { name: "subset", scope: "read", projectIds: ["prj_one"] }
    })
    expect(subset.status).toBe(201)
    const subsetSecret = (subset.body as { secret: string }).secret
    expect((await call(`${server.api}/accounts/prj_one`, { key: subsetSecret })).status).toBe(200)
    expect(errorCode(await call(`${server.api}/accounts/prj_two`, { key: subsetSecret }))).toBe("account_mismatch")
    const visible = await call(`${server.api}/accounts`, { key: subsetSecret })
    expect((visible.body as { accounts: Array<{ projectId: string }> }).accounts.map((a) => a.projectId)).toEqual(["prj_one"])

    const bound = await call(`${server.api}/accounts/prj_two/keys`, {
      method: "POST",
      key: BOOTSTRAP_KEY,
      body: { name: "one account", scope: "write" }
    })
    expect(bound.status).toBe(201)
    expect((bound.body as { key: { binding: unknown } }).key.binding).toEqual({ kind: "account", projectId: "prj_two" })
    const boundSecret = (bound.body as { secret: string }).secret
    const current = await call(`${server.api}/accounts/current`, { key: boundSecret })
    expect(current.status).toBe(200)
    expect(current.body).toMatchObject({ account: { projectId: "prj_two" } })
    expect(errorCode(await call(`${server.api}/accounts/current`, { key: BOOTSTRAP_KEY }))).toBe("invalid_request")
  })

  it("answers every kind of bad credential with the same 401 body", async () => {
    const expired = await call(`${server.api}/keys`, {
      method: "POST",
      key: BOOTSTRAP_KEY,
      body: { name: "expiring", scope: "read", expiresAt: new Date(Date.now() + 3_600_000).toISOString() }
    })
    expect(expired.status).toBe(201)
    const expiredBody = expired.body as { secret: string; key: { keyId: string } }
    const expiredSecret = expiredBody.secret
    // Its hour passes at once: the expiry moved to now, rather than a wait a busy machine could outrun.
    await query(database, "UPDATE api_keys SET expires_at = now() WHERE key_id = $1", [expiredBody.key.keyId])
    const revoked = await call(`${server.api}/keys`, { method: "POST", key: BOOTSTRAP_KEY, body: { name: "revoked", scope: "read" } })
    const revokedBody = revoked.body as { secret: string; key: { keyId: string } }
    expect((await call(`${server.api}/keys/${revokedBody.key.keyId}`, { method: "DELETE", key: BOOTSTRAP_KEY })).status).toBe(204)

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
    const created = await call(`${server.api}/keys`, { method: "POST", key: BOOTSTRAP_KEY, body: { name: "shared", scope: "read" } })
    const { key, secret } = created.body as { secret: string; key: { keyId: string } }
    expect((await call(`${second.api}/accounts`, { key: secret })).status).toBe(200)
    expect((await call(`${server.api}/keys/${key.keyId}`, { method: "DELETE", key: BOOTSTRAP_KEY })).status).toBe(204)
    const after = await call(`${second.api}/accounts`, { key: secret })
    expect(after.status).toBe(401)
    expect(after.body).toEqual(unauthorizedBody)
  })

  it("refuses to hand out more than the creator holds", async () => {
    const reader = await call(`${server.api}/keys`, { method: "POST", key: BOOTSTRAP_KEY, body: { name: "admin, no approve", scope: "admin" } })
    const secret = (reader.body as { secret: string }).secret
    const escalate = await call(`${server.api}/keys`, { method: "POST", key: secret, body: { name: "x", scope: "write", canApprove: true } })
    expect(escalate.status).toBe(403)
    expect(escalate.body).toMatchObject({ error: { code: "forbidden_scope", required_grant: "approve" } })
    const unknown = await call(`${server.api}/keys`, { method: "POST", key: BOOTSTRAP_KEY, body: { name: "x", scope: "read", projectIds: ["prj_nope"] } })
    expect(unknown.status).toBe(403)
    expect(unknown.body).toMatchObject({ error: { code: "account_mismatch" } })
    expect((unknown.body as { error: { message: string } }).error.message).toContain("prj_nope")
  })

  it("lets a subset-bound admin key see and revoke only keys within its reach", async () => {
    const subsetAdmin = await call(`${server.api}/keys`, {
      method: "POST",
      key: BOOTSTRAP_KEY,
      body: { name: "team one admin", scope: "admin", projectIds: ["prj_one"] }
    })
    const secret = (subsetAdmin.body as { secret: string }).secret
    const orgWide = await call(`${server.api}/keys`, { method: "POST", key: BOOTSTRAP_KEY, body: { name: "org wide", scope: "read" } })
    const orgWideId = (orgWide.body as { key: { keyId: string } }).key.keyId

    const mine = await call(`${server.api}/keys`, { method: "POST", key: secret, body: { name: "team one reader", scope: "read", projectIds: ["prj_one"] } })
    expect(mine.status).toBe(201)
    const mineId = (mine.body as { key: { keyId: string } }).key.keyId
    const wider = await call(`${server.api}/keys`, { method: "POST", key: secret, body: { name: "wider", scope: "read", projectIds: ["prj_one", "prj_two"] } })
    expect(errorCode(wider)).toBe("account_mismatch")

    const listed = await call(`${server.api}/keys`, { key: secret })
    const ids = (listed.body as { keys: Array<{ keyId: string }> }).keys.map((k) => k.keyId)
    expect(ids).toContain(mineId)
    expect(ids).not.toContain(orgWideId)

    const refused = await call(`${server.api}/keys/${orgWideId}`, { method: "DELETE", key: secret })
    expect(refused.status).toBe(404)
    expect((await call(`${server.api}/auth/me`, { key: (orgWide.body as { secret: string }).secret })).status).toBe(200)
    expect((await call(`${server.api}/keys/${mineId}`, { method: "DELETE", key: secret })).status).toBe(204)
  })
})
