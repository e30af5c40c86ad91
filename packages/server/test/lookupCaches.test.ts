/**
 * The key, account, org settings, target band, guardrails and session lookups are cached per instance
 * (db/Invalidation.ts) and dropped on every instance when the change commits: two server processes on one database.
 * The owner module of a row notifies in the changing transaction (no trigger does): a change through instance A, or
 * an owner module's statement run here, is seen at once on instance B; a change made by hand on the database says so
 * itself, with the same notification. Each test first shows the cache is really answering on instance B (a change made without
 * the notification is not seen), so what follows proves the invalidation, not an uncached lookup.
 */
import { AcsClient } from "@acs/domain/AcsClient"
import { isProposalResponse } from "@acs/domain/Actions"
import { DEFAULT_GUARDRAILS } from "@acs/domain/Guardrails"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Either, Layer } from "effect"
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { accountWrites, markReadOnly } from "../src/accounts/Accounts.ts"
import { databaseLayer } from "../src/db/Database.ts"
import { withApi } from "./support/apiClient.ts"
import { createDatabase, insertAccount, insertOrg, query } from "./support/database.ts"
import { type Answer, BOOTSTRAP_KEY, call, errorCode, type RunningServer, startServer } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

let database: string
let a: RunningServer
let b: RunningServer
let orgId: string
const ADMIN_EMAIL = "admin@caches.example"
const ADMIN_PASSWORD = "lookup caches admin password"

beforeAll(async () => {
  database = await createDatabase()
  const env = {
    DATABASE_URL: database,
    ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    ADMIN_EMAIL: ADMIN_EMAIL,
    ADMIN_PASSWORD: ADMIN_PASSWORD,
    RATE_LIMIT_READ: "100000",
    RATE_LIMIT_WRITE: "100000",
    RATE_LIMIT_LOGIN: "100000",
    // Longer than any test's steps: within a test only a notification, or a session's own expiry, ends an entry.
    LOOKUP_CACHE_TTL_MS: "120000"
  }
  ;[a, b] = await Promise.all([startServer(env), startServer(env)])
  orgId = (await query<{ org_id: string }>(database, "SELECT org_id FROM orgs"))[0]!.org_id
  await insertAccount(database, orgId, "prj_cached")
  await insertAccount(database, orgId, "prj_moved")
  await insertOrg(database, "org_elsewhere")
})

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()])
})

/** Runs statements by hand on the database, without a notification: the change commits and nobody is told. */
const silently = (statements: string) => query(database, statements)

/** Runs an owner module's statement against the database, as an instance would. */
const asOwner = <A>(statement: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, statement).pipe(
      Effect.provide(databaseLayer("lookup caches test").pipe(
        Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", database]]))))
      )),
      Effect.scoped
    )
  )

/** An account changed by hand on the database, with the notification its owner's statements send. */
const moveByHand = (set: string, projectId: string) =>
  query(database, `UPDATE accounts SET ${set} WHERE project_id = $1 RETURNING pg_notify('acs_invalidate', 'a:' || project_id)`, [projectId])

const newKey = async (name: string) => {
  const created = await withApi(a.baseUrl, BOOTSTRAP_KEY, (client) => client.keys.createKey({ payload: { name, scope: "write" } }))
  return { secret: created.secret, keyId: created.key.keyId }
}

const ledgerPage = (server: RunningServer, secret: string, projectId = "prj_cached") =>
  call(`${server.api}/accounts/${projectId}/actions?limit=5`, { key: secret })

describe("the key lookup cache", () => {
  it("answers from the cache on instance B (a revocation made without its notification is not seen)", async () => {
    // Until B's listener is up and has seen its own ping, B does not cache: retry with a fresh key.
    await waitFor("instance B to serve a key from its cache", async () => {
      const key = await newKey("probe")
      expect((await ledgerPage(b, key.secret)).status).toBe(200)
      await silently(`UPDATE api_keys SET revoked_at = now() WHERE key_id = '${key.keyId}'`)
      return (await ledgerPage(b, key.secret)).status
    }, (status) => status === 200)
  })

  it("refuses a key revoked through instance A on its very next request on instance B", async () => {
    for (let round = 0; round < 10; round++) {
      const key = await newKey(`revoked ${round}`)
      expect((await ledgerPage(b, key.secret)).status).toBe(200)
      expect((await ledgerPage(b, key.secret)).status).toBe(200)
      expect((await call(`${a.api}/keys/${key.keyId}`, { method: "DELETE", key: BOOTSTRAP_KEY })).status).toBe(204)
      const onB = await ledgerPage(b, key.secret)
      expect(onB.status).toBe(401)
      expect(errorCode(onB)).toBe("unauthorized")
      expect((await ledgerPage(a, key.secret)).status).toBe(401)
    }
  })

  it("sees a key's reach narrowed by hand on the database, with its notification, at once on both instances", async () => {
    const key = await newKey("narrowed")
    expect((await ledgerPage(b, key.secret, "prj_moved")).status).toBe(200)
    expect((await ledgerPage(a, key.secret, "prj_moved")).status).toBe(200)
    await query(
      database,
      `UPDATE api_keys SET binding_kind = 'subset', project_ids = '["prj_cached"]' WHERE key_id = $1
       RETURNING pg_notify('acs_invalidate', 'k:' || secret_hash)`,
      [key.keyId]
    )
    expect(errorCode(await ledgerPage(b, key.secret, "prj_moved"))).toBe("account_mismatch")
    expect(errorCode(await ledgerPage(a, key.secret, "prj_moved"))).toBe("account_mismatch")
    expect((await ledgerPage(b, key.secret, "prj_cached")).status).toBe(200)
  })
})

describe("the account lookup cache", () => {
  it("answers from the cache on instance B (a change made without its notification is not seen)", async () => {
    await insertAccount(database, orgId, "prj_probe")
    expect((await ledgerPage(b, BOOTSTRAP_KEY, "prj_probe")).status).toBe(200)
    await waitFor("instance B to serve an account from its cache", async () => {
      expect((await ledgerPage(b, BOOTSTRAP_KEY, "prj_probe")).status).toBe(200)
      await silently(`UPDATE accounts SET org_id = 'org_elsewhere' WHERE project_id = 'prj_probe'`)
      const status = (await ledgerPage(b, BOOTSTRAP_KEY, "prj_probe")).status
      await silently(`UPDATE accounts SET org_id = '${orgId}' WHERE project_id = 'prj_probe'`)
      return status
    }, (status) => status === 200)
  })

  it("sees an account turned read-only (the statement of an apply the upstream refused) at once on the other instance", async () => {
    const propose = (server: RunningServer) =>
      call(`${server.api}/accounts/prj_cached/actions/budget-change`, {
        method: "POST",
        key: BOOTSTRAP_KEY,
        body: { campaignId: "1", newDailyBudgetMicros: 1_000_000, reason: "cache" }
      })
    // Not read-only: the proposal gets past the account check (the campaign is unknown here).
    expect(errorCode(await propose(b))).not.toBe("read_only_account")
    await asOwner((sql) => markReadOnly(sql, "prj_cached"))
    const refused = await propose(b)
    expect(refused.status).toBe(403)
    expect(errorCode(refused)).toBe("read_only_account")
    await moveByHand("read_only = false", "prj_cached")
    expect(errorCode(await propose(b))).not.toBe("read_only_account")
  })

  it("sees an account disconnected by a sync's statement at once on the other instance", async () => {
    await insertAccount(database, orgId, "prj_gone")
    const status = async () =>
      (await withApi(b.baseUrl, BOOTSTRAP_KEY, (client) => client.accounts.getAccount({ path: { projectId: "prj_gone" } }))).account.status
    expect(await status()).toBe("active")
    expect(await status()).toBe("active")
    await asOwner((sql) => accountWrites(sql).markDisconnected("prj_gone"))
    expect(await status()).toBe("disconnected")
  })

  it("sees an account moved to another org by hand, with its notification, at once on the other instance", async () => {
    expect((await ledgerPage(b, BOOTSTRAP_KEY, "prj_moved")).status).toBe(200)
    await moveByHand("org_id = 'org_elsewhere'", "prj_moved")
    expect(errorCode(await ledgerPage(b, BOOTSTRAP_KEY, "prj_moved"))).toBe("account_mismatch")
  })
})

describe("the org settings cache", () => {
  const settingsOn = async (server: RunningServer) =>
    (await withApi(server.baseUrl, BOOTSTRAP_KEY, (client) => client.settings.getSettings())).platformAutoApply

  it("answers from the cache on instance B (a change made without its notification is not seen)", async () => {
    await waitFor("instance B to serve the org's settings from its cache", async () => {
      expect(await settingsOn(b)).toBe(true)
      await silently(`UPDATE orgs SET platform_auto_apply = false WHERE org_id = '${orgId}'`)
      const seen = await settingsOn(b)
      await silently(`UPDATE orgs SET platform_auto_apply = true WHERE org_id = '${orgId}'`)
      return seen
    }, (seen) => seen)
  })

  it("sees the kill switch turned off through instance A at once on instance B, and on again", async () => {
    for (const enabled of [false, true]) {
      expect(await settingsOn(b)).toBe(!enabled)
      const changed = await call(`${a.api}/settings`, { method: "PUT", key: BOOTSTRAP_KEY, body: { platformAutoApply: enabled } })
      expect(changed.status).toBe(200)
      expect(await settingsOn(b)).toBe(enabled)
    }
  })
})

describe("the target band cache", () => {
  const previewReasons = async (server: RunningServer) => {
    const answer = await withApi(server.baseUrl, BOOTSTRAP_KEY, (client) =>
      client.proposals.proposeBudgetChange({
        path: { projectId: "prj_band" },
        payload: { campaignId: "77", newDailyBudgetMicros: 110_000_000, reason: "band" },
        urlParams: { preview: true },
        headers: {}
      }))
    // A preview (200), not a proposal (201, with an actionId).
    expect(isProposalResponse(answer)).toBe(false)
    return answer.policyReasons.join(" | ")
  }
  const noBand = /none is set/

  beforeAll(async () => {
    await insertAccount(database, orgId, "prj_band")
    await query(database, `INSERT INTO campaigns (project_id, campaign_id, name, adam_id, daily_budget_micros, status, bid_strategy)
      VALUES ('prj_band', '77', 'Banded', '1', 100000000, 'ENABLED', 'MANUAL_CPT')`)
  })

  it("answers from the cache on instance B (a band set without its notification is not seen)", async () => {
    await waitFor("instance B to serve the account's band from its cache", async () => {
      expect(await previewReasons(b)).toMatch(noBand)
      await silently(`INSERT INTO targets (project_id, cpa_band) VALUES ('prj_band', '{"minMicros": 1, "maxMicros": 9000000}')`)
      const reasons = await previewReasons(b)
      await silently(`DELETE FROM targets WHERE project_id = 'prj_band'`)
      return reasons
    }, (reasons) => noBand.test(reasons))
  })

  it("sees a band set through instance A at once in instance B's policy", async () => {
    expect(await previewReasons(b)).toMatch(noBand)
    const put = await call(`${a.api}/accounts/prj_band/targets`, {
      method: "PUT",
      key: BOOTSTRAP_KEY,
      body: { cpaBand: { minMicros: 1, maxMicros: 9_000_000 }, campaigns: {} }
    })
    expect(put.status).toBe(200)
    // Past the band, the rule asks for the campaign's evidence (it has no metrics): the band was seen.
    expect(await previewReasons(b)).toMatch(/needs at least 7 complete days and 20 installs/)
    // Deleted by hand, with the notification (no statement of acs deletes a band).
    await query(database, `DELETE FROM targets WHERE project_id = 'prj_band' RETURNING pg_notify('acs_invalidate', 't:' || project_id)`)
    expect(await previewReasons(b)).toMatch(noBand)
  })
})

describe("the guardrails cache", () => {
  const previewReasons = async (server: RunningServer) => {
    const answer = await withApi(server.baseUrl, BOOTSTRAP_KEY, (client) =>
      client.proposals.proposeBudgetChange({
        path: { projectId: "prj_rails" },
        payload: { campaignId: "78", newDailyBudgetMicros: 110_000_000, reason: "guardrails" },
        urlParams: { preview: true },
        headers: {}
      }))
    expect(isProposalResponse(answer)).toBe(false)
    return answer.policyReasons.join(" | ")
  }
  const evidenceGate = /needs at least 7 complete days and 20 installs/
  const noEvidenceGate = JSON.stringify({ ...DEFAULT_GUARDRAILS, evidence: { minDays: 0, minInstalls: 0 } })

  beforeAll(async () => {
    await insertAccount(database, orgId, "prj_rails")
    await query(database, `INSERT INTO campaigns (project_id, campaign_id, name, adam_id, daily_budget_micros, status, bid_strategy)
      VALUES ('prj_rails', '78', 'Railed', '1', 100000000, 'ENABLED', 'MANUAL_CPT')`)
    const put = await call(`${a.api}/accounts/prj_rails/targets`, {
      method: "PUT",
      key: BOOTSTRAP_KEY,
      body: { cpaBand: { minMicros: 1, maxMicros: 9_000_000 }, campaigns: {} }
    })
    expect(put.status).toBe(200)
  })

  it("answers from the cache on instance B (guardrails set without their notification are not seen)", async () => {
    await waitFor("instance B to serve the account's guardrails from its cache", async () => {
      expect(await previewReasons(b)).toMatch(evidenceGate)
      await silently(`INSERT INTO guardrails (project_id, settings) VALUES ('prj_rails', '${noEvidenceGate}')`)
      const reasons = await previewReasons(b)
      await silently(`DELETE FROM guardrails WHERE project_id = 'prj_rails'`)
      return reasons
    }, (reasons) => evidenceGate.test(reasons))
  })

  it("sees the evidence gate lowered through instance A at once in instance B's policy", async () => {
    expect(await previewReasons(b)).toMatch(evidenceGate)
    const put = await call(`${a.api}/accounts/prj_rails/guardrails`, { method: "PUT", key: BOOTSTRAP_KEY, body: JSON.parse(noEvidenceGate) })
    expect(put.status, put.text).toBe(200)
    // Past the gate, the rule asks for the campaign's CPA (it has no installs): the new guardrails were seen.
    expect(await previewReasons(b)).toMatch(/needs a 30-day CPA inside/)
  })
})

describe("the lookups of an RPC procedure (run in the RPC server's fiber, on the request's barrier)", () => {
  const listOverRpc = (server: RunningServer, projectId: string) =>
    Effect.runPromise(
      Effect.flatMap(AcsClient, (client) => Effect.either(client.listActions({ path: { projectId }, urlParams: { limit: 5 } }))).pipe(
        Effect.provide(AcsClient.layer({ url: server.baseUrl, key: BOOTSTRAP_KEY })),
        Effect.scoped
      )
    )

  it("see an account moved to another org (by hand, with its notification) at once on the other instance", async () => {
    await insertAccount(database, orgId, "prj_rpc")
    expect(Either.isRight(await listOverRpc(b, "prj_rpc"))).toBe(true)
    expect(Either.isRight(await listOverRpc(b, "prj_rpc"))).toBe(true)
    await moveByHand("org_id = 'org_elsewhere'", "prj_rpc")
    const refused = await listOverRpc(b, "prj_rpc")
    expect(Either.isLeft(refused) ? refused.left._tag : "answered").toBe("AccountMismatch")
  })
})

describe("the lookups of an MCP tool call (run in a fiber of its own, on the request's barrier)", () => {
  const listOverMcp = async (server: RunningServer, projectId: string) => {
    const answer = await call(`${server.baseUrl}/mcp`, {
      method: "POST",
      key: BOOTSTRAP_KEY,
      headers: { accept: "application/json, text/event-stream" },
      body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "platform_list_actions", arguments: { projectId, limit: 5 } } }
    })
    expect(answer.status).toBe(200)
    return answer.text
  }

  it("see an account moved to another org (by hand, with its notification) at once on the other instance", async () => {
    await insertAccount(database, orgId, "prj_mcp")
    expect(await listOverMcp(b, "prj_mcp")).not.toContain("account_mismatch")
    expect(await listOverMcp(b, "prj_mcp")).not.toContain("account_mismatch")
    await moveByHand("org_id = 'org_elsewhere'", "prj_mcp")
    expect(await listOverMcp(b, "prj_mcp")).toContain("account_mismatch")
  })
})

describe("the session lookup cache", () => {
  const email = "sam@caches.example"
  const password = "sam's password 0123"
  let admin: string
  let personId: string

  const cookieOf = (answer: Answer) => {
    expect(answer.status, answer.text).toBe(200)
    return answer.headers.getSetCookie().find((line) => line.startsWith("acs_session="))!.split(";")[0]!
  }
  const signIn = async (who = email, secret = password) =>
    cookieOf(await call(`${a.api}/auth/login`, { method: "POST", body: { email: who, password: secret } }))
  const tokenHash = (cookie: string) => Crypto.createHash("sha256").update(cookie.slice("acs_session=".length)).digest("hex")
  const me = (server: RunningServer, cookie: string) => call(`${server.api}/auth/me`, { headers: { cookie } })
  const roleOn = async (server: RunningServer, cookie: string) =>
    (await withApi(server.baseUrl, { cookie }, (client) => client.auth.getMe())).principal.role
  const personByHand = (set: string) =>
    query(
      database,
      `UPDATE people SET ${set} WHERE person_id = $1
       RETURNING pg_notify('acs_invalidate', 's:*'), pg_notify('acs_invalidate', 'k:*')`,
      [personId]
    )
  const changePerson = async (change: { role?: string; disabled?: boolean }) => {
    const answer = await call(`${a.api}/people/${personId}`, { method: "PUT", headers: { cookie: admin }, body: change })
    expect(answer.status, answer.text).toBe(200)
  }
  /** A write on the session: an editor gets past the scope check (the campaign is unknown here), a viewer does not. */
  const propose = (server: RunningServer, cookie: string) =>
    call(`${server.api}/accounts/prj_cached/actions/budget-change`, {
      method: "POST",
      headers: { cookie },
      body: { campaignId: "1", newDailyBudgetMicros: 1_000_000, reason: "session cache" }
    })

  beforeAll(async () => {
    admin = await signIn(ADMIN_EMAIL, ADMIN_PASSWORD)
    const added = await withApi(a.baseUrl, { cookie: admin }, (client) =>
      client.people.createPerson({ payload: { email, name: "Sam", role: "editor", password } }))
    personId = added.person.personId
  })

  it("answers from the cache on instance B (a sign-out made without its notification is not seen)", async () => {
    await waitFor("instance B to serve a session from its cache", async () => {
      const cookie = await signIn()
      expect((await me(b, cookie)).status).toBe(200)
      await silently(`UPDATE sessions SET ended_at = now() WHERE token_hash = '${tokenHash(cookie)}'`)
      return (await me(b, cookie)).status
    }, (status) => status === 200)
  })

  it("refuses a session signed out through instance A on its very next request on instance B", async () => {
    for (let round = 0; round < 5; round++) {
      const cookie = await signIn()
      expect((await me(b, cookie)).status).toBe(200)
      expect((await me(b, cookie)).status).toBe(200)
      expect((await call(`${a.api}/auth/logout`, { method: "POST", headers: { cookie } })).status).toBe(204)
      const onB = await me(b, cookie)
      expect(onB.status).toBe(401)
      expect(errorCode(onB)).toBe("unauthorized")
      expect((await propose(b, cookie)).status).toBe(401)
      expect((await me(a, cookie)).status).toBe(401)
    }
  })

  it("refuses the keys of a person revoked through instance A at once on instance B", async () => {
    const adminId = (await withApi(a.baseUrl, { cookie: admin }, (client) => client.auth.getMe())).principal.id
    const created = await withApi(a.baseUrl, { cookie: admin }, (client) => client.keys.createKey({ payload: { name: "the admin's agent", scope: "write" } }))
    expect((await ledgerPage(b, created.secret)).status).toBe(200)
    expect((await ledgerPage(b, created.secret)).status).toBe(200)
    const revoked = await call(`${a.api}/people/${adminId}/keys/revoke`, { method: "POST", key: BOOTSTRAP_KEY })
    expect(revoked.status, revoked.text).toBe(200)
    expect(revoked.body).toMatchObject({ revokedKeyIds: [created.key.keyId] })
    const onB = await ledgerPage(b, created.secret)
    expect(onB.status).toBe(401)
    expect(errorCode(onB)).toBe("unauthorized")
  })

  it("refuses the session of a person disabled through instance A, or on the database, at once on instance B", async () => {
    const cookie = await signIn()
    expect((await me(b, cookie)).status).toBe(200)
    expect((await me(b, cookie)).status).toBe(200)
    await changePerson({ disabled: true })
    expect((await me(b, cookie)).status).toBe(401)
    await changePerson({ disabled: false })
    expect((await me(b, cookie)).status, "disabling ended the session").toBe(401)

    // The person's own notification, alone: disabled by hand on the database with the notifications People.ts's
    // statements send, their session left as it was.
    const again = await signIn()
    expect((await me(b, again)).status).toBe(200)
    expect((await me(b, again)).status).toBe(200)
    await personByHand("disabled_at = now()")
    expect((await me(b, again)).status).toBe(401)
    expect((await propose(b, again)).status).toBe(401)
    await personByHand("disabled_at = NULL")
    expect((await me(b, again)).status).toBe(200)
  })

  it("sees a role changed through instance A at once on instance B", async () => {
    const cookie = await signIn()
    expect(await roleOn(b, cookie)).toBe("editor")
    expect(errorCode(await propose(b, cookie))).not.toBe("forbidden_scope")
    await changePerson({ role: "viewer" })
    expect(await roleOn(b, cookie)).toBe("viewer")
    const refused = await propose(b, cookie)
    expect(refused.status).toBe(403)
    expect(errorCode(refused)).toBe("forbidden_scope")
    await changePerson({ role: "editor" })
    expect(await roleOn(b, cookie)).toBe("editor")
    expect(errorCode(await propose(b, cookie))).not.toBe("forbidden_scope")
  })

  it("refuses a cached session once it expires, though the database then extended it without a notification", async () => {
    // B caches the session with a near expiry; the database then says it lasts an hour, telling nobody. Only the
    // cached entry's own expiry can refuse it (a reload would find it live), and it must. Both changes are
    // made without notifications: none may race B's load (a load that raced one is not stored).
    const { cookie } = await waitFor("instance B to load a session before its near expiry", async () => {
      const candidate = await signIn()
      await silently(`UPDATE sessions SET expires_at = now() + interval '3 seconds' WHERE token_hash = '${tokenHash(candidate)}'`)
      return { cookie: candidate, status: (await me(b, candidate)).status }
    }, ({ status }) => status === 200)
    await silently(`UPDATE sessions SET expires_at = now() + interval '1 hour' WHERE token_hash = '${tokenHash(cookie)}'`)
    const refused = await waitFor("instance B to refuse the expired session", () => me(b, cookie), (answer) => answer.status !== 200)
    expect(refused.status).toBe(401)
    expect(errorCode(refused)).toBe("unauthorized")
    expect((await me(a, cookie)).status, "the database says the session lasts").toBe(200)
  })
})
