/**
 * Who may approve, and keys bounded by their people (docs/contract.md 5.1 and 5.2), end to end on the real
 * server with the simulator: the outside review's cases as regression tests, on REST, RPC and MCP, and on a
 * second instance.
 *
 * - An admin mints a chain of 18 keys; the last one tries to approve the admin's own +73 % budget raise (the
 *   old walk stopped after 16 keys, and it applied).
 * - A disabled admin's key tried to create a new admin key with the approval grant; a demoted person's keys
 *   kept their old scope.
 * - Revoking every key of one person, and a key's root, recorded when it is made, is what a walk of the
 *   creator chain finds, for every key (no chain loops).
 */
import { AcsClient } from "@acs/domain/AcsClient"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Cause, Effect, Exit, ManagedRuntime, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Pipeline, startPipeline } from "./support/pipeline.ts"
import { type Answer, call, errorCode, type RunningServer } from "./support/server.ts"

let p: Pipeline
let twin: RunningServer

beforeAll(async () => {
  // No worker: an approved action stays approved, so what this file asserts is the decision alone.
  p = await startPipeline({ seed: 32, env: { WORKER_CONCURRENCY: "0" } })
  twin = await p.startTwin()
}, 600_000)

afterAll(async () => {
  await p?.close()
})

interface Made {
  readonly keyId: string
  readonly secret: string
}

const errorOf = (answer: Answer) => (answer.body as { error: Record<string, unknown> }).error

/** A session cookie of a person, by email and password. */
const signIn = async (email: string, password: string): Promise<string> => {
  const login = await call(`${p.server.api}/auth/login`, { method: "POST", body: { email, password } })
  expect(login.status, login.text).toBe(200)
  return login.headers.getSetCookie().find((line) => line.startsWith("acs_session="))!.split(";")[0]!
}

/** A person added by the admin, signed in. */
const addPerson = async (role: string): Promise<{ readonly personId: string; readonly cookie: string; readonly name: string }> => {
  const email = `${role}-${Math.random().toString(36).slice(2, 10)}@people.example`
  const name = `${role} ${email.slice(role.length + 1, role.length + 9)}`
  const password = "a long enough password 0123456789"
  const added = await p.as("person", "POST", "/people", { email, name, role, password })
  expect(added.status, added.text).toBe(201)
  return { personId: (added.body as { person: { personId: string } }).person.personId, cookie: await signIn(email, password), name }
}

const makeKey = async (credential: { readonly cookie: string } | { readonly secret: string }, name: string, scope = "admin"): Promise<Made> => {
  const headers = "cookie" in credential ? { cookie: credential.cookie } : { authorization: `Bearer ${credential.secret}` }
  const answer = await call(`${p.server.api}/keys`, { method: "POST", headers, body: { name, scope, canApprove: true } })
  expect(answer.status, answer.text).toBe(201)
  const created = answer.body as { key: { keyId: string }; secret: string }
  return { keyId: created.key.keyId, secret: created.secret }
}

const withKey = (key: Made, method: string, path: string, body?: unknown, server: RunningServer = p.server) =>
  call(`${server.api}${path}`, { method, key: key.secret, ...(body === undefined ? {} : { body }) })

/** The answer to `getMe` over RPC: the principal, or the failure's tag. */
const rpcMe = async (key: Made, server: RunningServer = p.server) => {
  const runtime = ManagedRuntime.make(AcsClient.layer({ url: server.baseUrl, key: key.secret }))
  try {
    const exit = await runtime.runPromiseExit(Effect.flatMap(AcsClient, (client) => client.getMe({})))
    return Exit.isSuccess(exit)
      ? { ok: true as const, principal: exit.value.principal }
      : { ok: false as const, tag: Cause.failureOption(exit.cause).pipe(Option.map((e) => e._tag), Option.getOrUndefined) }
  } finally {
    await runtime.dispose()
  }
}

const rpcApprove = async (key: Made, actionId: string) => {
  const runtime = ManagedRuntime.make(AcsClient.layer({ url: p.server.baseUrl, key: key.secret }))
  try {
    const exit = await runtime.runPromiseExit(Effect.flatMap(AcsClient, (client) =>
      client.approveAction({ path: { projectId: p.account.projectId, actionId } })))
    return Exit.isSuccess(exit) ? undefined : Option.getOrUndefined(Cause.failureOption(exit.cause))
  } finally {
    await runtime.dispose()
  }
}

const mcpConnect = async (key: Made, server: RunningServer = p.server) => {
  const client = new Client({ name: "who-may-approve", version: "1" })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key.secret}` } }
  }))
  return client
}

/** What /mcp answers a key: connected (and the tool's error, if any), or refused with its HTTP status. */
const mcpApprove = async (key: Made, actionId: string) => {
  const client = await mcpConnect(key)
  try {
    const result = (await client.callTool({ name: "platform_approve_action", arguments: { projectId: p.account.projectId, actionId } })) as CallToolResult
    const text = (result.content[0] as { type: "text"; text: string }).text
    return result.isError === true ? (JSON.parse(text) as { error: Record<string, unknown> }).error : undefined
  } finally {
    await client.close()
  }
}

const mcpRefusal = async (key: Made, server: RunningServer = p.server): Promise<number | undefined> => {
  try {
    const client = await mcpConnect(key, server)
    await client.close()
    return undefined
  } catch (error) {
    if (error instanceof StreamableHTTPError) return error.code
    throw error
  }
}

const statusOf = async (actionId: string) => (await p.action(actionId)).status

describe("an admin's chain of 18 keys", () => {
  let chain: Array<Made>
  let raise: string

  beforeAll(async () => {
    const campaigns = await p.as("key", "GET", `/accounts/${p.account.projectId}/campaigns?limit=20`)
    const campaign = (campaigns.body as { campaigns: Array<{ campaignId: string; dailyBudgetMicros: number | null }> }).campaigns
      .find((c) => (c.dailyBudgetMicros ?? 0) >= 10_000_000)!
    // +73 %, in whole cents: far past the 30 % a person's raise may auto-apply, so it queues for a second person.
    const newDailyBudgetMicros = Math.round((campaign.dailyBudgetMicros! * 1.73) / 10_000) * 10_000
    const proposed = await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros, reason: "+73 %" })
    expect(proposed.body, proposed.text).toMatchObject({ status: "proposed", mode: "queued" })
    raise = (proposed.body as { actionId: string }).actionId

    chain = [await makeKey({ cookie: await signIn(ADMIN_EMAIL, ADMIN_PASSWORD) }, "chain 1")]
    for (let n = 2; n <= 18; n++) chain.push(await makeKey(chain[n - 2]!, `chain ${n}`))
  }, 600_000)

  it("records the admin as the root of every key of the chain, however deep", async () => {
    const listed = await p.as("key", "GET", "/keys")
    const keys = (listed.body as { keys: Array<{ keyId: string; root: { kind: string; id: string } }> }).keys
    const me = (await p.as("person", "GET", "/auth/me")).body as { principal: { id: string } }
    for (const key of chain) expect(keys.find((k) => k.keyId === key.keyId)?.root).toMatchObject({ kind: "person", id: me.principal.id })
  })

  it("refuses the 18th key the admin's own +73 % raise on REST, RPC and MCP, and it stays proposed", async () => {
    const last = chain[17]!
    const rest = await withKey(last, "POST", `/accounts/${p.account.projectId}/approvals/${raise}/approve`)
    expect(rest.status, rest.text).toBe(403)
    expect(errorOf(rest)).toMatchObject({ code: "forbidden_scope", required_grant: "second_approver" })
    expect(errorOf(rest)["message"]).toMatch(/a key never approves its own person's proposals/)
    expect(await rpcApprove(last, raise)).toMatchObject({ _tag: "ForbiddenScope", required_grant: "second_approver" })
    expect(await mcpApprove(last, raise)).toMatchObject({ code: "forbidden_scope", required_grant: "second_approver" })
    expect(await statusOf(raise)).toBe("proposed")
  })

  it("refuses any key of the chain what another key of the chain proposed, and lets the admin's session review it", async () => {
    const campaigns = await p.as("key", "GET", `/accounts/${p.account.projectId}/campaigns?limit=1`)
    const campaign = (campaigns.body as { campaigns: Array<{ campaignId: string; dailyBudgetMicros: number }> }).campaigns[0]!
    const proposed = await withKey(chain[0]!, "POST", `/accounts/${p.account.projectId}/actions/budget-change`, {
      campaignId: campaign.campaignId,
      newDailyBudgetMicros: Math.round((campaign.dailyBudgetMicros * 0.9) / 10_000) * 10_000,
      reason: "the chain's first key proposes"
    })
    expect(proposed.status, proposed.text).toBe(201)
    const actionId = (proposed.body as { actionId: string }).actionId
    const byLast = await withKey(chain[17]!, "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)
    expect(errorOf(byLast)).toMatchObject({ code: "forbidden_scope", required_grant: "second_approver" })
    const bySession = await p.as("person", "POST", `/accounts/${p.account.projectId}/approvals/${actionId}/approve`)
    expect(bySession.status, bySession.text).toBe(200)
    expect(bySession.body).toMatchObject({ status: "approved", decidedBy: { kind: "person" } })
  })

  it("finds, for every key, the root a walk of its creator chain ends at: no chain loops", async () => {
    // The walk follows created_by with no depth limit (UNION ALL would never end on a loop; the depth is only
    // reported): each key's walk must end at a person or an org key, and agree with the recorded root.
    const rows = await p.sql<{ keyId: string; depth: number; endsAt: string; rootPersonId: string | null; rootKeyId: string | null; atKey: string }>(
      `WITH RECURSIVE walk (key_id, at_key, link, depth) AS (
         SELECT key_id, key_id, created_by, 0 FROM api_keys
         UNION ALL
         SELECT w.key_id, k.key_id, k.created_by, w.depth + 1 FROM walk w JOIN api_keys k ON w.link = 'key:' || k.key_id
       )
       SELECT w.key_id AS "keyId", w.depth, coalesce(w.link, 'operator') AS "endsAt", k.root_person_id AS "rootPersonId",
         k.root_key_id AS "rootKeyId", w.at_key AS "atKey"
       FROM walk w JOIN api_keys k USING (key_id) WHERE w.link IS NULL OR w.link NOT LIKE 'key:%'`
    )
    const total = await p.sql<{ n: string }>("SELECT count(*) AS n FROM api_keys")
    expect(rows.length, "one end per key").toBe(Number(total[0]!.n))
    // The chain's 18th key is 17 links from its first, which the admin made.
    expect(Math.max(...rows.map((r) => r.depth))).toBeGreaterThanOrEqual(17)
    for (const row of rows) {
      if (row.endsAt.startsWith("person:")) expect(row.rootPersonId, row.keyId).toBe(row.endsAt.slice("person:".length))
      else expect(row.rootKeyId ?? row.keyId, row.keyId).toBe(row.atKey)
    }
  })
})

describe("keys bounded by their people", () => {
  it("refuses a disabled admin's keys on every surface and instance, and what they would create", async () => {
    const admin2 = await addPerson("admin")
    const key = await makeKey({ cookie: admin2.cookie }, "admin2's agent")
    const minted = await makeKey(key, "minted by admin2's agent")
    // Both instances have the keys cached.
    for (const server of [p.server, twin]) {
      expect((await withKey(key, "GET", "/auth/me", undefined, server)).status).toBe(200)
      expect((await withKey(minted, "GET", "/auth/me", undefined, server)).status).toBe(200)
    }
    const disabled = await p.as("person", "PUT", `/people/${admin2.personId}`, { disabled: true })
    expect(disabled.status, disabled.text).toBe(200)

    for (const server of [p.server, twin]) {
      for (const k of [key, minted]) {
        expect(errorCode(await withKey(k, "GET", "/auth/me", undefined, server))).toBe("unauthorized")
        expect(errorCode(await withKey(k, "POST", "/keys", { name: "a new admin key", scope: "admin", canApprove: true }, server)))
          .toBe("unauthorized")
        expect(await rpcMe(k, server)).toMatchObject({ ok: false, tag: "Unauthorized" })
        expect(await mcpRefusal(k, server)).toBe(401)
      }
    }
    const listed = await p.as("key", "GET", "/keys")
    const shown = (listed.body as { keys: Array<{ keyId: string; effective: unknown; revokedAt: string | null }> }).keys
    expect(shown.find((k) => k.keyId === key.keyId)).toMatchObject({ effective: null, revokedAt: null })

    // Enabled again, the keys work again: disabling suspends, revoking ends.
    expect((await p.as("person", "PUT", `/people/${admin2.personId}`, { disabled: false })).status).toBe(200)
    for (const server of [p.server, twin]) expect((await withKey(key, "GET", "/auth/me", undefined, server)).status).toBe(200)
  })

  it("caps a demoted person's keys at the new role on every surface and instance, and lifts the cap with the role", async () => {
    const admin3 = await addPerson("admin")
    const key = await makeKey({ cookie: admin3.cookie }, "admin3's agent")
    for (const server of [p.server, twin]) {
      expect((await withKey(key, "GET", "/auth/me", undefined, server)).body).toMatchObject({ principal: { scope: "admin", canApprove: true } })
    }
    expect((await p.as("person", "PUT", `/people/${admin3.personId}`, { role: "viewer" })).status).toBe(200)

    for (const server of [p.server, twin]) {
      expect((await withKey(key, "GET", "/auth/me", undefined, server)).body).toMatchObject({ principal: { scope: "read", canApprove: false } })
      const create = await withKey(key, "POST", "/keys", { name: "escalation", scope: "admin", canApprove: true }, server)
      expect(create.status).toBe(403)
      expect(errorOf(create)).toMatchObject({ code: "forbidden_scope", required_scope: "admin", key_scope: "read" })
      const propose = await withKey(key, "POST", `/accounts/${p.account.projectId}/actions/campaign-status`, {
        campaignId: "1",
        status: "PAUSED",
        reason: "demoted"
      }, server)
      expect(errorOf(propose)).toMatchObject({ code: "forbidden_scope", required_scope: "write" })
      expect(await rpcMe(key, server)).toMatchObject({ ok: true, principal: { scope: "read", canApprove: false } })
    }
    expect((await withKey(key, "GET", `/accounts/${p.account.projectId}/campaigns?limit=1`)).status, "a read is within the new role").toBe(200)
    const listed = await p.as("key", "GET", "/keys")
    expect((listed.body as { keys: Array<{ keyId: string }> }).keys.find((k) => k.keyId === key.keyId)).toMatchObject({
      scope: "admin",
      canApprove: true,
      effective: { scope: "read", canApprove: false }
    })

    // An editor: write, still no approval grant.
    expect((await p.as("person", "PUT", `/people/${admin3.personId}`, { role: "editor" })).status).toBe(200)
    expect((await withKey(key, "GET", "/auth/me", undefined, twin)).body).toMatchObject({ principal: { scope: "write", canApprove: false } })
  })

  it("revokes every key of one person, at any depth, and nobody else's", async () => {
    const approver = await addPerson("admin")
    const key = await makeKey({ cookie: approver.cookie }, "their agent")
    const minted = await makeKey(key, "minted by their agent", "read")
    const adminKey = await makeKey({ cookie: await signIn(ADMIN_EMAIL, ADMIN_PASSWORD) }, "the admin's own key", "read")

    const revoked = await p.as("person", "POST", `/people/${approver.personId}/keys/revoke`)
    expect(revoked.status, revoked.text).toBe(200)
    expect((revoked.body as { revokedKeyIds: Array<string> }).revokedKeyIds).toEqual([key.keyId, minted.keyId].sort())
    for (const server of [p.server, twin]) {
      expect(errorCode(await withKey(key, "GET", "/auth/me", undefined, server))).toBe("unauthorized")
      expect(errorCode(await withKey(minted, "GET", "/auth/me", undefined, server))).toBe("unauthorized")
      expect((await withKey(adminKey, "GET", "/auth/me", undefined, server)).status).toBe(200)
    }
    // The person stays: they sign in and may make new keys.
    expect((await call(`${p.server.api}/auth/me`, { headers: { cookie: approver.cookie } })).status).toBe(200)
    const again = await p.as("person", "POST", `/people/${approver.personId}/keys/revoke`)
    expect(again.body).toEqual({ revokedKeyIds: [] })
    const unknown = await p.as("person", "POST", "/people/psn_nobody/keys/revoke")
    expect(unknown.status).toBe(404)
    expect(errorCode(unknown)).toBe("not_found")
  })
})
