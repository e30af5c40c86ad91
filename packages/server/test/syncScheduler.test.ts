/**
 * The sync scheduler over HTTP (warehouse/SyncScheduler.ts): two acs instances over one database, two orgs each
 * with an Apple Ads API client of its own on the simulator, one org importing eight small accounts and the other two.
 * The simulator enforces a request budget per API client, answering 429 with Retry-After beyond it; once the syncs
 * run, the test spends what is left of the big org's budget with that org's own API client (as another tool of the
 * agency would), so acs meets the 429 whatever the machine's speed. Every account ends fresh; the small org is not
 * kept behind the big one; no more syncs ran at once than the bounds allow, per instance pair and per org, whatever
 * instance started them; the big org's credential was rate-limited and waited out; and the queue said why accounts
 * waited, as the metric counts them.
 */
import { type AppleCredentials, signClientSecret } from "@acs/upstream/ClientSecret"
import { type Simulator, startSimulator } from "@acs/upstream/simulator/Simulator"
import { ACCOUNT_MANAGER, type AccountPlan } from "@acs/upstream/simulator/SimulatorSize"
import { SyncQueue } from "@acs/domain/Warehouse"
import { Schema } from "effect"
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase, query } from "./support/database.ts"
import { BOOTSTRAP_KEY, call, NO_RATE_LIMITS, type RunningServer, startServer } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"
import { mostAtOnce } from "./support/intervals.ts"

const ORG_B = "org_scheduler_b"
const ORG_B_KEY = "acs_test_scheduler_org_b_0123456789abcdefghijklm"

/** A small account: one campaign, two ad groups of five keywords. */
const small = (n: number): AccountPlan => ({
  name: `Small ${n}`,
  currency: "USD",
  timeZone: "America/New_York",
  roleNames: [ACCOUNT_MANAGER],
  countriesOrRegions: ["US"],
  campaigns: 1,
  adGroupsPerCampaign: 2,
  keywordsPerAdGroup: 5
})

/** Per instance one sync at a time, per org two: the instances, not the orgs, are what is scarce. */
const BOUNDS = { SYNC_CONCURRENCY: "1", SYNC_CONCURRENCY_PER_ORG: "2" }

let simulator: Simulator
let database: string
let servers: Array<RunningServer> = []

const env = () => ({
  DATABASE_URL: database,
  ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
  UPSTREAM: "apple",
  APPLE_V1_API_URL: simulator.apiV1Url,
  APPLE_TOKEN_URL: simulator.tokenUrl,
  SYNC_INTERVAL_MINUTES: "60",
  SYNC_INITIAL_DAYS: "14",
  // A 429's Retry-After (up to the 10 s window here) is waited out by the client; more tries than the default.
  UPSTREAM_MAX_RETRIES: "10",
  UPSTREAM_RETRY_MAX_MS: "15000",
  METRICS_ENABLED: "true",
  ...BOUNDS,
  ...NO_RATE_LIMITS
})

beforeAll(async () => {
  // 40 requests per 10 s per API client, enforced: a small account's sync makes about 20.
  simulator = await startSimulator({
    seed: 39,
    size: { accounts: Array.from({ length: 10 }, (_, n) => small(n)) },
    rateLimit: { limit: 40, windowSeconds: 10, enforce: true }
  })
  database = await createDatabase()
  servers = [await startServer(env())]
  await query(database, "INSERT INTO orgs (org_id, name) VALUES ($1, 'Scheduler B')", [ORG_B])
  await query(
    database,
    `INSERT INTO api_keys (key_id, org_id, name, secret_hash, scope, can_approve, binding_kind, project_ids, created_by)
     VALUES ('key_scheduler_b', $1, 'org B admin', encode(sha256($2::bytea), 'hex'), 'admin', false, 'org', '[]', 'operator')`,
    [ORG_B, ORG_B_KEY]
  )
  servers.push(await startServer(env()))
}, 600_000)

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()))
  await simulator?.close()
})

/** Connects the org with an API client of its own: a key pair from acs, registered as Apple Ads would. */
const connect = async (key: string) => {
  const api = servers[0]!.api
  const pair = await call(`${api}/connection/keypair`, { method: "POST", key })
  expect(pair.status, pair.text).toBe(201)
  const client = simulator.control.registerApiClient((pair.body as { readonly publicKeyPem: string }).publicKeyPem)!
  const saved = await call(`${api}/connection`, { method: "PUT", key, body: { clientId: client.clientId, teamId: client.teamId, keyId: client.keyId } })
  expect(saved.status, saved.text).toBe(200)
}

/** Connects the org with a key pair the test holds too, so it can spend the client's budget itself. */
const connectHeld = async (key: string): Promise<AppleCredentials> => {
  const { privateKey, publicKey } = Crypto.generateKeyPairSync("ec", { namedCurve: "P-256" })
  const ids = simulator.control.registerApiClient(publicKey.export({ type: "spki", format: "pem" }).toString())!
  const credentials = { ...ids, privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() }
  const saved = await call(`${servers[0]!.api}/connection`, { method: "PUT", key, body: credentials })
  expect(saved.status, saved.text).toBe(200)
  return credentials
}

/**
 * Reads with the API client until the platform refuses one with 429 and at least 5 s left in its window, so acs's
 * next call on that client is refused too.
 */
const spendBudget = async (credentials: AppleCredentials, account: string) => {
  const query = new URLSearchParams({
    grant_type: "client_credentials",
    client_id: credentials.clientId,
    client_secret: signClientSecret(credentials, Math.floor(Date.now() / 1000)),
    scope: "searchadsorg"
  })
  const token = ((await (await fetch(`${simulator.tokenUrl}?${query.toString()}`, { method: "POST" })).json()) as { access_token: string }).access_token
  await waitFor("the big org's budget to be spent for at least 5 s", async () => {
    const response = await fetch(`${simulator.apiV1Url}/campaigns/query`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "x-ap-context": `adAccountId=${account}`, "content-type": "application/json" },
      body: "{}"
    })
    await response.text()
    return { status: response.status, retryAfter: Number(response.headers.get("retry-after") ?? 0) }
  }, (answer) => answer.status === 429 && answer.retryAfter >= 5, { intervalMs: 10 })
}

const queueOf = async (server: RunningServer, key: string) => {
  const answer = await call(`${server.api}/sync-queue`, { key })
  expect(answer.status, answer.text).toBe(200)
  return Schema.decodeUnknownSync(SyncQueue)(answer.body)
}

interface SyncRow {
  readonly org_id: string
  readonly project_id: string
  readonly status: string
  readonly trigger: string
  readonly started_at: Date
  readonly finished_at: Date | null
}

/** The most syncs that ran at once, over the rows given (intervals from start to finish). */
const mostRunning = (rows: ReadonlyArray<SyncRow>): number =>
  mostAtOnce(rows.map((row) => [row.started_at.getTime(), row.finished_at!.getTime()] as const))

describe("the sync scheduler", () => {
  it("syncs every account of two orgs fairly, within its bounds, waiting out a rate-limited credential and saying why accounts wait", async () => {
    const credentialsA = await connectHeld(BOOTSTRAP_KEY)
    await connect(ORG_B_KEY)
    const ids = simulator.accounts.map((a) => String(a.orgId))
    // The big org imports first: by age alone its eight accounts would all go before the small org's two.
    const importA = await call(`${servers[0]!.api}/accounts/import`, { method: "POST", key: BOOTSTRAP_KEY, body: { upstreamAccountIds: ids.slice(0, 8) } })
    expect(importA.status, importA.text).toBe(201)
    const importB = await call(`${servers[1]!.api}/accounts/import`, { method: "POST", key: ORG_B_KEY, body: { upstreamAccountIds: ids.slice(8) } })
    expect(importB.status, importB.text).toBe(201)
    await spendBudget(credentialsA, ids[0]!)

    // While they sync, the queue (asked of either instance) says why each due account waits.
    const reasons = new Set<string>()
    const untilOf = new Map<string, string>()
    await waitFor(
      "every account of both orgs to be fresh",
      async () => {
        for (const [server, key] of [[servers[0]!, BOOTSTRAP_KEY], [servers[1]!, ORG_B_KEY], [servers[1]!, BOOTSTRAP_KEY]] as const) {
          for (const entry of (await queueOf(server, key)).accounts) {
            if (entry.reason === null) continue
            reasons.add(entry.reason)
            if (entry.until !== null) untilOf.set(entry.reason, entry.until)
          }
        }
        return (await query<{ n: number }>(database, "SELECT count(*)::int AS n FROM accounts WHERE last_synced_at IS NOT NULL"))[0]!.n
      },
      (fresh) => fresh === 10,
      { intervalMs: 50 }
    )

    const rows = await query<SyncRow & Record<string, unknown>>(
      database,
      "SELECT org_id, project_id, status, trigger, started_at, finished_at FROM syncs ORDER BY started_at, sync_id"
    )
    // One sync each, each one the import's first, none failed (a 429 is waited out, not a failure).
    expect(rows.map((r) => [r.status, r.trigger])).toEqual(Array.from({ length: 10 }, () => ["succeeded", "import"]))
    expect(new Set(rows.map((r) => r.project_id)).size).toBe(10)
    // Bounds: one at a time on each of the two instances, at most two in an org, across instances.
    expect(mostRunning(rows)).toBeLessThanOrEqual(2)
    for (const inB of [false, true]) expect(mostRunning(rows.filter((r) => (r.org_id === ORG_B) === inB))).toBeLessThanOrEqual(2)
    // Fairness: the orgs take turns, so the small org's two syncs start among the first five, not after the eight.
    const order = rows.map((r) => r.org_id === ORG_B ? "B" : "A")
    expect(order.lastIndexOf("B"), order.join("")).toBeLessThanOrEqual(4)

    // The big org's credential ran out of budget: acs heard the 429 (or a RateLimit-Remaining of 0), recorded when the
    // budget resets and held the org's due accounts until then, and every sync still succeeded (above).
    const limits = await query<{ credential_key: string; status: number }>(database, "SELECT credential_key, status FROM credential_limits")
    expect(limits.length).toBeGreaterThan(0)
    const credentialA = (await query<{ credential_key: string }>(database, "SELECT credential_key FROM connections WHERE org_id <> $1", [ORG_B]))[0]!
    expect(limits.map((l) => l.credential_key)).toContain(credentialA.credential_key)
    expect(credentialA.credential_key).not.toContain(credentialsA.clientId)
    expect(reasons.has("rate_limited"), [...reasons].join(", ")).toBe(true)
    expect(Date.parse(untilOf.get("rate_limited")!)).toBeGreaterThan(0)
    expect(reasons.has("instance_at_bound") || reasons.has("org_at_bound"), [...reasons].join(", ")).toBe(true)

    // Once all are fresh, the queue says so, and the metric counts them by state.
    const settled = await queueOf(servers[0]!, BOOTSTRAP_KEY)
    expect(settled).toMatchObject({ scheduled: true, freshnessTargetMinutes: 60, bounds: { instance: 1, perOrg: 2 }, total: 8 })
    expect(settled.accounts.every((a) => a.state === "fresh")).toBe(true)
    expect((await queueOf(servers[0]!, ORG_B_KEY)).accounts.map((a) => a.state)).toEqual(["fresh", "fresh"])
    await waitFor(
      "the metric to count ten fresh accounts",
      async () => (await call(`${servers[0]!.baseUrl}/metrics`)).text,
      (text) => /acs_sync_queue_accounts\{state="fresh"\} 10\b/.test(text) && /acs_sync_queue_accounts\{state="waiting"\} 0\b/.test(text),
      { show: (text) => text.split("\n").filter((line) => line.startsWith("acs_sync_queue")).join("\n") }
    )
  })
})
