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
import { rpcApprove } from "./support/rpcApprove.ts"
import { AcsClient } from "@acs/domain/AcsClient"
import { ProposalResponse } from "@acs/domain/Actions"
import { ErrorBodies } from "@acs/domain/Errors"
import type { Role, ScopeSchema } from "@acs/domain/Principal"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Cause, Effect, Exit, ManagedRuntime, Option, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ApiClient, withApi } from "./support/apiClient.ts"
import { ADMIN_EMAIL, ADMIN_PASSWORD, type Pipeline, startPipeline } from "./support/pipeline.ts"
import { type Answer, call, type RunningServer } from "./support/server.ts"

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

/**
 * A proposal over REST, decoded with the contract's schema (the typed REST client's proposal endpoints are
 * generated in a loop its types cannot follow).
 */
const proposalOf = (answer: Answer) => {
  expect(answer.status, answer.text).toBe(201)
  return Schema.decodeUnknownSync(ProposalResponse)(answer.body)
}

/** A proposal's refusal for lack of scope over REST, decoded to its error class. */
const forbiddenScopeOf = (answer: Answer) => Schema.decodeUnknownSync(ErrorBodies.ForbiddenScope)(answer.body)

/** A session cookie of a person, by email and password. */
const signIn = async (email: string, password: string): Promise<string> => {
  const login = await call(`${p.server.api}/auth/login`, { method: "POST", body: { email, password } })
  expect(login.status, login.text).toBe(200)
  return login.headers.getSetCookie().find((line) => line.startsWith("acs_session="))!.split(";")[0]!
}

/** A person added by the admin, signed in. */
const addPerson = async (role: Role): Promise<{ readonly personId: string; readonly cookie: string; readonly name: string }> => {
  const email = `${role}-${Math.random().toString(36).slice(2, 10)}@people.example`
  const name = `${role} ${email.slice(role.length + 1, role.length + 9)}`
  const password = "a long enough password 0123456789"
  const added = await p.api("person", (client) => client.people.createPerson({ payload: { email, name, role, password } }))
  return { personId: added.person.personId, cookie: await signIn(email, password), name }
}

const makeKey = async (
  credential: { readonly cookie: string } | { readonly secret: string },
  name: string,
  scope: typeof ScopeSchema.Type = "admin"
): Promise<Made> => {
  const created = await withApi(p.server.baseUrl, "cookie" in credential ? credential : credential.secret, (client) =>
    client.keys.createKey({ payload: { name, scope, canApprove: true } }))
  return { keyId: created.key.keyId, secret: created.secret }
}

/** The typed REST client with a key, on an instance. */
const withKey = <A, E>(key: Made, use: (client: ApiClient) => Effect.Effect<A, E>, server: RunningServer = p.server) =>
  withApi(server.baseUrl, key.secret, use)

/** What the typed REST client refuses a key: the error, as its class (a success fails the test). */
const refusalOf = <A, E>(key: Made, use: (client: ApiClient) => Effect.Effect<A, E>, server: RunningServer = p.server) =>
  withKey(key, (client) => Effect.flip(use(client)), server)

const meOf = (key: Made, server: RunningServer = p.server) => withKey(key, (client) => client.auth.getMe(), server)
const keyList = () => p.api("key", (client) => client.keys.listKeys()).then(({ keys }) => keys)

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
    const { campaigns } = await p.api("key", (client) =>
      client.warehouse.listCampaigns({ path: { projectId: p.account.projectId }, urlParams: { limit: 20 } }))
    const campaign = campaigns.find((c) => (c.dailyBudgetMicros ?? 0) >= 10_000_000)!
    // +73 %, in whole cents: far past the 30 % a person's raise may auto-apply, so it queues for a second person.
    const newDailyBudgetMicros = Math.round((campaign.dailyBudgetMicros! * 1.73) / 10_000) * 10_000
    const proposed = proposalOf(await p.propose("budget-change", { campaignId: campaign.campaignId, newDailyBudgetMicros, reason: "+73 %" }))
    expect(proposed).toMatchObject({ status: "proposed", mode: "queued" })
    raise = proposed.actionId

    chain = [await makeKey({ cookie: await signIn(ADMIN_EMAIL, ADMIN_PASSWORD) }, "chain 1")]
    for (let n = 2; n <= 18; n++) chain.push(await makeKey(chain[n - 2]!, `chain ${n}`))
  }, 600_000)

  it("records the admin as the root of every key of the chain, however deep", async () => {
    const keys = await keyList()
    const me = await p.api("person", (client) => client.auth.getMe())
    for (const key of chain) expect(keys.find((k) => k.keyId === key.keyId)?.root).toMatchObject({ kind: "person", id: me.principal.id })
  })

  it("refuses the 18th key the admin's own +73 % raise on REST, RPC and MCP, and it stays proposed", async () => {
    const last = chain[17]!
    const rest = await refusalOf(last, (client) => client.actions.approveAction({ path: { projectId: p.account.projectId, actionId: raise } }))
    expect(rest).toMatchObject({ _tag: "ForbiddenScope", required_grant: "second_approver" })
    expect(rest.message).toMatch(/a key never approves its own person's proposals/)
    expect(await rpcApprove(p.server.baseUrl, last.secret, p.account.projectId, raise)).toMatchObject({ _tag: "ForbiddenScope", required_grant: "second_approver" })
    expect(await mcpApprove(last, raise)).toMatchObject({ code: "forbidden_scope", required_grant: "second_approver" })
    expect(await statusOf(raise)).toBe("proposed")
  })

  it("refuses any key of the chain what another key of the chain proposed, and lets the admin's session review it", async () => {
    const { campaigns } = await p.api("key", (client) =>
      client.warehouse.listCampaigns({ path: { projectId: p.account.projectId }, urlParams: { limit: 1 } }))
    const campaign = campaigns[0]!
    const { actionId } = proposalOf(await call(`${p.server.api}/accounts/${p.account.projectId}/actions/budget-change`, {
      method: "POST",
      key: chain[0]!.secret,
      body: {
        campaignId: campaign.campaignId,
        newDailyBudgetMicros: Math.round((campaign.dailyBudgetMicros! * 0.9) / 10_000) * 10_000,
        reason: "the chain's first key proposes"
      }
    }))
    const byLast = await refusalOf(chain[17]!, (client) => client.actions.approveAction({ path: { projectId: p.account.projectId, actionId } }))
    expect(byLast).toMatchObject({ _tag: "ForbiddenScope", required_grant: "second_approver" })
    const bySession = await p.api("person", (client) => client.actions.approveAction({ path: { projectId: p.account.projectId, actionId } }))
    expect(bySession).toMatchObject({ status: "approved", decidedBy: { kind: "person" } })
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
      expect((await meOf(key, server)).principal.id).toBe(key.keyId)
      expect((await meOf(minted, server)).principal.id).toBe(minted.keyId)
    }
    const disabled = await p.api("person", (client) => client.people.updatePerson({ path: { personId: admin2.personId }, payload: { disabled: true } }))
    expect(disabled).toMatchObject({ personId: admin2.personId, disabledAt: expect.any(String) })

    for (const server of [p.server, twin]) {
      for (const k of [key, minted]) {
        expect(await refusalOf(k, (client) => client.auth.getMe(), server)).toMatchObject({ _tag: "Unauthorized" })
        expect(await refusalOf(k, (client) => client.keys.createKey({ payload: { name: "a new admin key", scope: "admin", canApprove: true } }), server))
          .toMatchObject({ _tag: "Unauthorized" })
        expect(await rpcMe(k, server)).toMatchObject({ ok: false, tag: "Unauthorized" })
        expect(await mcpRefusal(k, server)).toBe(401)
      }
    }
    expect((await keyList()).find((k) => k.keyId === key.keyId)).toMatchObject({ effective: null, revokedAt: null })

    // Enabled again, the keys work again: disabling suspends, revoking ends.
    const enabled = await p.api("person", (client) => client.people.updatePerson({ path: { personId: admin2.personId }, payload: { disabled: false } }))
    expect(enabled.disabledAt).toBeNull()
    for (const server of [p.server, twin]) expect((await meOf(key, server)).principal.id).toBe(key.keyId)
  })

  it("caps a demoted person's keys at the new role on every surface and instance, and lifts the cap with the role", async () => {
    const admin3 = await addPerson("admin")
    const key = await makeKey({ cookie: admin3.cookie }, "admin3's agent")
    const demote = (role: Role) => p.api("person", (client) => client.people.updatePerson({ path: { personId: admin3.personId }, payload: { role } }))
    for (const server of [p.server, twin]) {
      expect(await meOf(key, server)).toMatchObject({ principal: { scope: "admin", canApprove: true } })
    }
    expect(await demote("viewer")).toMatchObject({ role: "viewer" })

    for (const server of [p.server, twin]) {
      expect(await meOf(key, server)).toMatchObject({ principal: { scope: "read", canApprove: false } })
      const create = await refusalOf(key, (client) => client.keys.createKey({ payload: { name: "escalation", scope: "admin", canApprove: true } }), server)
      expect(create).toMatchObject({ _tag: "ForbiddenScope", required_scope: "admin", key_scope: "read" })
      const propose = await call(`${server.api}/accounts/${p.account.projectId}/actions/campaign-status`, {
        method: "POST",
        key: key.secret,
        body: { campaignId: "1", status: "PAUSED", reason: "demoted" }
      })
      expect(forbiddenScopeOf(propose)).toMatchObject({ _tag: "ForbiddenScope", required_scope: "write" })
      expect(await rpcMe(key, server)).toMatchObject({ ok: true, principal: { scope: "read", canApprove: false } })
    }
    const read = await withKey(key, (client) => client.warehouse.listCampaigns({ path: { projectId: p.account.projectId }, urlParams: { limit: 1 } }))
    expect(read.campaigns, "a read is within the new role").toHaveLength(1)
    expect((await keyList()).find((k) => k.keyId === key.keyId)).toMatchObject({
      scope: "admin",
      canApprove: true,
      effective: { scope: "read", canApprove: false }
    })

    // An editor: write, still no approval grant.
    expect(await demote("editor")).toMatchObject({ role: "editor" })
    expect(await meOf(key, twin)).toMatchObject({ principal: { scope: "write", canApprove: false } })
  })

  it("revokes every key of one person, at any depth, and nobody else's", async () => {
    const approver = await addPerson("admin")
    const key = await makeKey({ cookie: approver.cookie }, "their agent")
    const minted = await makeKey(key, "minted by their agent", "read")
    const adminKey = await makeKey({ cookie: await signIn(ADMIN_EMAIL, ADMIN_PASSWORD) }, "the admin's own key", "read")

    const revokeKeysOf = (personId: string) => p.api("person", (client) => client.people.revokePersonKeys({ path: { personId } }))
    const revoked = await revokeKeysOf(approver.personId)
    expect(revoked.revokedKeyIds).toEqual([key.keyId, minted.keyId].sort())
    for (const server of [p.server, twin]) {
      expect(await refusalOf(key, (client) => client.auth.getMe(), server)).toMatchObject({ _tag: "Unauthorized" })
      expect(await refusalOf(minted, (client) => client.auth.getMe(), server)).toMatchObject({ _tag: "Unauthorized" })
      expect((await meOf(adminKey, server)).principal.id).toBe(adminKey.keyId)
    }
    // The person stays: they sign in and may make new keys.
    expect((await withApi(p.server.baseUrl, { cookie: approver.cookie }, (client) => client.auth.getMe())).principal.id).toBe(approver.personId)
    expect(await revokeKeysOf(approver.personId)).toEqual({ revokedKeyIds: [] })
    const unknown = await p.api("person", (client) => Effect.flip(client.people.revokePersonKeys({ path: { personId: "psn_nobody" } })))
    expect(unknown).toMatchObject({ _tag: "NotFound" })
  })
})
