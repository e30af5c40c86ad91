/**
 * Connecting an org over REST: credentials are tested before they are saved and stored sealed; the key pair
 * acs generates for an Apple Ads API client (v1); the API version and the v5 sunset warning; discovery lists
 * what they reach; importing twice never duplicates an account.
 */
import { type Simulator, startSimulator } from "@acs/upstream/simulator/Simulator"
import { Connection, ConnectionKeyPair, Discovery } from "@acs/domain/Connection"
import { ErrorBodies } from "@acs/domain/Errors"
import * as Crypto from "node:crypto"
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { withApi } from "./support/apiClient.ts"
import { createDatabase, query } from "./support/database.ts"
import { type Answer, BOOTSTRAP_KEY, call, errorCode, type RunningServer, startServer } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

let simulator: Simulator
let database: string
let server: RunningServer

beforeAll(async () => {
  simulator = await startSimulator({ seed: 5, size: "demo" })
  database = await createDatabase()
  // "Apple" credentials are sent to the simulator's endpoints, so the real client path is exercised.
  server = await startServer({
    DATABASE_URL: database,
    ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    SIMULATOR_URL: simulator.url,
    APPLE_API_URL: simulator.apiUrl,
    APPLE_V1_API_URL: simulator.apiV1Url,
    APPLE_TOKEN_URL: simulator.tokenUrl,
    SYNC_INTERVAL_MINUTES: "0",
    RATE_LIMIT_EXPENSIVE: "5"
  })
})

afterAll(async () => {
  await server?.stop()
  await simulator?.close()
})

const put = (body: unknown) => call(`${server.api}/connection`, { method: "PUT", key: BOOTSTRAP_KEY, body })
const getConnection = () => withApi(server.baseUrl, BOOTSTRAP_KEY, (client) => client.connection.getConnection())
/** A 400's message, decoded with the contract's `invalid_request` envelope. */
const invalidRequestMessage = (answer: Answer) => {
  expect(answer.status, answer.text).toBe(400)
  return Schema.decodeUnknownSync(ErrorBodies.InvalidRequest)(answer.body).message
}
const ids = (credentials: { clientId: string; teamId: string; keyId: string }) => ({
  clientId: credentials.clientId,
  teamId: credentials.teamId,
  keyId: credentials.keyId
})

describe("connection", () => {
  it("refuses credentials the platform refuses, and saves nothing", async () => {
    const { privateKey } = Crypto.generateKeyPairSync("ec", { namedCurve: "P-256" })
    const stranger = privateKey.export({ type: "sec1", format: "pem" }).toString()
    const refused = await put({ ...simulator.credentials, privateKeyPem: stranger })
    expect(refused.status).toBe(409)
    expect(errorCode(refused)).toBe("connection_error")
    expect((await call(`${server.api}/connection`, { key: BOOTSTRAP_KEY })).body).toMatchObject({
      connected: false,
      status: "not_connected"
    })
    const malformed = await put({ ...simulator.credentials, privateKeyPem: "-----BEGIN NOTHING-----" })
    expect(invalidRequestMessage(malformed)).toContain("privateKeyPem")
  })

  it("needs a private key: the request's own, or a generated key pair", async () => {
    const none = await put(ids(simulator.credentials))
    expect(invalidRequestMessage(none)).toContain("POST /connection/keypair")
    expect(await getConnection()).toMatchObject({ connected: false, apiVersion: null, warning: null, keyPair: null })
  })

  it("on v5, works and warns of Apple's sunset until the connection moves to v1", async () => {
    const saved = await put({ ...simulator.credentials, apiVersion: "v5" })
    expect(saved.status).toBe(200)
    expect(saved.body).toMatchObject({ connected: true, apiVersion: "v5" })
    expect(Schema.decodeUnknownSync(Connection)(saved.body).warning).toContain("2027-01-26")
    expect(await getConnection()).toMatchObject({ apiVersion: "v5", warning: expect.stringContaining("v1") })
    expect(simulator.control.listCalls({ path: /^\/api\/v5\/acls$/ }).length).toBeGreaterThan(0)
  })

  it("generates a key pair, keeps the private half sealed, and connects over v1 with the ids Apple Ads gives for its public half", async () => {
    const generated = await call(`${server.api}/connection/keypair`, { method: "POST", key: BOOTSTRAP_KEY })
    expect(generated.status).toBe(201)
    const pair = Schema.decodeUnknownSync(ConnectionKeyPair)(generated.body)
    expect(pair.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----/)
    expect(pair.fingerprint).toBe(Crypto.createHash("sha256").update(Crypto.createPublicKey(pair.publicKeyPem).export({ type: "spki", format: "der" })).digest("hex"))
    expect(JSON.stringify(generated.body)).not.toContain("PRIVATE KEY")
    const stored = await query<{ private_key_sealed: string }>(database, "SELECT private_key_sealed FROM connection_key_pairs")
    expect(stored[0]!.private_key_sealed).not.toContain("PRIVATE KEY")
    // The public half stays readable (to paste again); the connection is untouched until the next PUT.
    expect(await getConnection()).toMatchObject({ apiVersion: "v5", keyPair: pair })

    // What an Apple Ads admin does with the public key: create an API client, which shows its ids.
    const apiClient = simulator.control.registerApiClient(pair.publicKeyPem)!
    const saved = await put(ids(apiClient))
    expect(saved.status).toBe(200)
    expect(saved.body).toMatchObject({ connected: true, provider: "apple", apiVersion: "v1", warning: null, keyPair: pair })
    expect(simulator.control.listCalls({ path: /^\/v1\/acls$/ }).length).toBeGreaterThan(0)

    // A key pair generated since is for the next PUT: the saved connection keeps its own key.
    expect((await call(`${server.api}/connection/keypair`, { method: "POST", key: BOOTSTRAP_KEY })).status).toBe(201)
    expect((await call(`${server.api}/connection/discover`, { method: "POST", key: BOOTSTRAP_KEY })).status).toBe(200)
    expect((await put(ids(apiClient))).status).toBe(409) // the new key is not the one Apple Ads knows for that client
  })

  it("saves working credentials sealed, and reports the connection", async () => {
    const saved = await put(simulator.credentials)
    expect(saved.status).toBe(200)
    expect(saved.body).toMatchObject({ connected: true, provider: "apple", apiVersion: "v1", status: "ok", upstreamOrgId: String(simulator.parentOrgId) })
    const stored = await query<{ credentials_encrypted: string }>(database, "SELECT credentials_encrypted FROM connections")
    expect(stored[0]!.credentials_encrypted).not.toContain("PRIVATE KEY")
    expect(stored[0]!.credentials_encrypted).not.toContain(simulator.credentials.clientId)
  })

  it("discovers the accounts the credentials reach, in the expensive bucket", async () => {
    const discovered = await call(`${server.api}/connection/discover`, { method: "POST", key: BOOTSTRAP_KEY })
    expect(discovered.status).toBe(200)
    expect(discovered.headers.get("ratelimit-policy")).toBe("5;w=60;name=\"expensive\"")
    const { accounts } = Schema.decodeUnknownSync(Discovery)(discovered.body)
    expect(accounts.map((a) => a.upstreamAccountId).sort()).toEqual(simulator.accounts.map((a) => String(a.orgId)).sort())
    expect(accounts.filter((a) => a.readOnly)).toHaveLength(simulator.accounts.filter((a) => a.readOnly).length)
    expect(accounts.every((a) => a.projectId === null)).toBe(true)
  })

  it("imports accounts once: a second import returns the same projects", () =>
    withApi(server.baseUrl, BOOTSTRAP_KEY, (client) =>
      Effect.gen(function*() {
        const upstreamAccountIds = simulator.accounts.slice(0, 2).map((a) => String(a.orgId))
        const first = yield* client.accounts.importAccounts({ payload: { upstreamAccountIds } })
        const second = yield* client.accounts.importAccounts({ payload: { upstreamAccountIds } })
        expect(second.accounts.map((a) => a.projectId)).toEqual(first.accounts.map((a) => a.projectId))
        const rows = yield* Effect.promise(() => query<{ n: number }>(database, "SELECT count(*)::int AS n FROM accounts"))
        expect(rows[0]!.n).toBe(2)
        const unknown = yield* Effect.flip(client.accounts.importAccounts({ payload: { upstreamAccountIds: ["999"] } }))
        expect(unknown).toMatchObject({ _tag: "InvalidRequest", message: expect.stringContaining("upstreamAccountIds") })
        expect((yield* client.accounts.listAccounts()).total).toBe(2)
      })))

  it("marks the connection broken when the platform stops accepting the credentials", async () => {
    simulator.control.addFaults([{ kind: "tokenRefused", times: "always" }])
    try {
      const account = (await query<{ project_id: string }>(database, "SELECT project_id FROM accounts LIMIT 1"))[0]!.project_id
      const refused = await call(`${server.api}/accounts/${account}/syncs`, { method: "POST", key: BOOTSTRAP_KEY })
      expect(refused.status).toBe(409)
      expect(errorCode(refused)).toBe("connection_error")
      expect((await call(`${server.api}/connection`, { key: BOOTSTRAP_KEY })).body).toMatchObject({ connected: false, status: "error" })
      // The moment it broke is an event (docs/contract.md 6), org-level.
      const broken = await waitFor("the connection.broken event", () =>
        withApi(server.baseUrl, BOOTSTRAP_KEY, (client) =>
          Effect.map(client.events.listEvents({ urlParams: { type: "connection.broken" } }), (page) => page.events)), (events) => events.length > 0)
      expect(broken[0]).toMatchObject({ projectId: null, data: { connection: { status: "error" } } })
    } finally {
      simulator.control.clearFaults()
    }
    const discovered = await call(`${server.api}/connection/discover`, { method: "POST", key: BOOTSTRAP_KEY })
    expect(discovered.status).toBe(200)
    expect((await call(`${server.api}/connection`, { key: BOOTSTRAP_KEY })).body).toMatchObject({ connected: true, status: "ok", error: null })
  })
})
