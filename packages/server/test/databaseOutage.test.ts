/**
 * A database outage (docs/contract.md 7): PostgreSQL is stopped for 10 s while requests keep coming on every surface.
 * Meanwhile each answer is 503 `database_unavailable` with `Retry-After` (REST by key and by session, typed RPC,
 * MCP, `/readyz`), none is 500 and none hangs; once PostgreSQL is back the same server answers again, without a
 * restart. The cluster is this file's own (support/postgres.ts), so stopping it stops no other test's database.
 * A pool that cannot hand out a connection within DATABASE_CONNECT_TIMEOUT_MS answers the same, not a hang.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import pg from "pg"
import { createDatabase, query } from "./support/database.ts"
import { type Cluster, startCluster } from "./support/postgres.ts"
import { BOOTSTRAP_KEY, call, NO_RATE_LIMITS, type RunningServer, startServer } from "./support/server.ts"
import { sleep, waitFor } from "./support/wait.ts"

const OUTAGE_MS = 10_000
/** The bound no answer may pass, outage or not (the slowest measured on a loaded 2-core machine: see the report). */
const ANSWER_BOUND_MS = 30_000
const EMAIL = "owner@outage.example"
const PASSWORD = "outage owner password 0123"

let cluster: Cluster
let server: RunningServer
let cookie: string

beforeAll(async () => {
  cluster = await startCluster()
  await query(cluster.url("postgres"), "CREATE DATABASE acs")
  server = await startServer({
    DATABASE_URL: cluster.url("acs"),
    ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    ADMIN_EMAIL: EMAIL,
    ADMIN_PASSWORD: PASSWORD,
    ...NO_RATE_LIMITS
  })
  const login = await call(`${server.api}/auth/login`, { method: "POST", body: { email: EMAIL, password: PASSWORD } })
  expect(login.status).toBe(200)
  cookie = login.headers.getSetCookie().find((line) => line.startsWith("acs_session="))!.split(";")[0]!
})

afterAll(async () => {
  await server?.stop()
  cluster?.stop()
})

type Surface = "rest-key" | "rest-session" | "rpc" | "mcp" | "readyz"

const SURFACES: ReadonlyArray<Surface> = ["rest-key", "rest-session", "rpc", "mcp", "readyz"]

/** One answer as a client saw it: whether it succeeded, else its HTTP status, SPEC code and retry advice. */
interface Observation {
  readonly surface: Surface
  readonly startedAt: number
  readonly endedAt: number
  readonly ok: boolean
  readonly status: number | "no answer"
  readonly code?: string | undefined
  readonly retryAfter?: string | null | undefined
  readonly retryAfterMs?: unknown
  readonly detail: string
}

const record = (value: unknown): Record<string, unknown> => (typeof value === "object" && value !== null ? value as Record<string, unknown> : {})

/** The SPEC envelope's code and `retry_after_ms`, from a JSON body. */
const envelopeOf = (body: unknown) => {
  const envelope = record(body)
  return { code: record(envelope["error"])["code"] as string | undefined, retryAfterMs: envelope["retry_after_ms"] }
}

const fetchAnswer = async (url: string, init: RequestInit) => {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(ANSWER_BOUND_MS * 4) })
  return { status: response.status, retryAfter: response.headers.get("retry-after"), text: await response.text() }
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** One request on `surface`, as its client would read the answer. */
const probe = async (surface: Surface): Promise<Omit<Observation, "surface" | "startedAt" | "endedAt">> => {
  switch (surface) {
    case "rest-key":
    case "rest-session": {
      const headers = surface === "rest-key" ? { authorization: `Bearer ${BOOTSTRAP_KEY}` } : { cookie }
      const answer = await fetchAnswer(`${server.api}/settings`, { headers })
      return { ok: answer.status === 200, status: answer.status, retryAfter: answer.retryAfter, ...envelopeOf(parse(answer.text)), detail: answer.text }
    }
    case "readyz": {
      const answer = await fetchAnswer(`${server.baseUrl}/readyz`, {})
      return { ok: answer.status === 200, status: answer.status, retryAfter: answer.retryAfter, ...envelopeOf(parse(answer.text)), detail: answer.text }
    }
    case "rpc": {
      const request = { _tag: "Request", id: "1", tag: "getSettings", payload: {}, headers: [] }
      const answer = await fetchAnswer(`${server.baseUrl}/rpc`, {
        method: "POST",
        headers: { authorization: `Bearer ${BOOTSTRAP_KEY}`, "content-type": "application/ndjson" },
        body: `${JSON.stringify(request)}\n`
      })
      // The protocol's own answer: the Exit of request 1, failing with the SPEC error class when it fails.
      const exit = answer.text.split("\n").map(parse).map(record).find((message) => message["_tag"] === "Exit")
      const outcome = record(exit?.["exit"])
      const error = record(record(outcome["cause"])["error"])
      return {
        ok: answer.status === 200 && outcome["_tag"] === "Success",
        status: answer.status,
        retryAfter: answer.retryAfter,
        code: error["_tag"] === "DatabaseUnavailable" ? "database_unavailable" : (error["_tag"] as string | undefined),
        retryAfterMs: error["retry_after_ms"],
        detail: answer.text
      }
    }
    case "mcp": {
      const answer = await fetchAnswer(`${server.baseUrl}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${BOOTSTRAP_KEY}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "platform_get_settings", arguments: {} } })
      })
      const body = record(parse(answer.text))
      const result = record(body["result"])
      if (answer.status !== 200 || result["isError"] === true) {
        // Refused before the tool ran (HTTP, the SPEC envelope) or by the tool (its result carries the envelope as text).
        const content = Array.isArray(result["content"]) ? record(result["content"][0]) : {}
        const envelope = answer.status === 200 ? envelopeOf(parse(String(content["text"]))) : envelopeOf(body)
        return { ok: false, status: answer.status, retryAfter: answer.retryAfter, ...envelope, detail: answer.text }
      }
      return { ok: "structuredContent" in result, status: answer.status, detail: answer.text }
    }
  }
}

const observe = async (surface: Surface): Promise<Observation> => {
  const startedAt = Date.now()
  try {
    const answer = await probe(surface)
    return { surface, startedAt, endedAt: Date.now(), ...answer }
  } catch (error) {
    return { surface, startedAt, endedAt: Date.now(), ok: false, status: "no answer", detail: String(error) }
  }
}

describe("a database outage", () => {
  it("answers 503 database_unavailable with Retry-After on every surface while PostgreSQL is stopped, and recovers", async () => {
    for (const surface of SURFACES) {
      const before = await observe(surface)
      expect(before.ok, `${surface} before the outage: ${before.detail}`).toBe(true)
    }

    const observations: Array<Observation> = []
    let running = true
    // Two clients per surface, one request at a time each, for as long as the test runs.
    const clients = SURFACES.flatMap((surface) =>
      [0, 1].map(async () => {
        while (running) {
          observations.push(await observe(surface))
          await sleep(50)
        }
      })
    )

    let haltedAt = 0
    let resumingAt = Number.POSITIVE_INFINITY
    let resumedAt = Number.POSITIVE_INFINITY
    try {
      await cluster.halt()
      haltedAt = Date.now()
      const since = (at: number, surface: Surface) => observations.filter((o) => o.surface === surface && o.startedAt >= at)
      // The stop lasts 10 s, and long enough for every surface to have been asked a few times during it.
      await waitFor(
        "10 s of outage with answers on every surface",
        () => Promise.resolve({ elapsed: Date.now() - haltedAt, counts: SURFACES.map((s) => since(haltedAt, s).length) }),
        ({ counts, elapsed }) => elapsed >= OUTAGE_MS && counts.every((n) => n >= 3)
      )
      resumingAt = Date.now()
      await cluster.resume()
      resumedAt = Date.now()
      // Back without restarting acs: each surface answers again.
      await waitFor(
        "every surface to answer again once PostgreSQL is back",
        () => Promise.resolve(SURFACES.map((s) => since(resumedAt, s).some((o) => o.ok))),
        (back) => back.every(Boolean),
        { show: (back) => SURFACES.filter((_, i) => !back[i]).join(", ") + " not back yet" }
      )
    } finally {
      running = false
      await Promise.all(clients)
      if (resumedAt === Number.POSITIVE_INFINITY) await cluster.resume().catch(() => undefined)
    }

    const show = (o: Observation) => `${o.surface} ${o.status} ${o.code ?? ""} after ${o.endedAt - o.startedAt} ms: ${o.detail.slice(0, 300)}`
    // Asked and answered entirely while PostgreSQL was down: every one of them the outage's answer.
    const during = observations.filter((o) => o.startedAt >= haltedAt && o.endedAt <= resumingAt)
    for (const surface of SURFACES) expect(during.filter((o) => o.surface === surface).length, surface).toBeGreaterThanOrEqual(3)
    for (const o of during) {
      expect(o.ok, show(o)).toBe(false)
      expect(o.code, show(o)).toBe("database_unavailable")
      // Refused before the MCP tool ran, or by the tool: an HTTP 503 with Retry-After, or the tool's error envelope.
      if (o.surface !== "mcp" || o.status !== 200) {
        expect(o.status, show(o)).toBe(503)
        expect(Number(o.retryAfter), show(o)).toBe(5)
      }
      expect(o.retryAfterMs, show(o)).toBe(5000)
    }
    // Around the stop and the start too: a request either succeeded or met the outage; none was a 500 or hung.
    for (const o of observations) {
      if (!o.ok) expect(o.code, show(o)).toBe("database_unavailable")
      expect(o.status, show(o)).not.toBe(500)
      expect(o.endedAt - o.startedAt, show(o)).toBeLessThan(ANSWER_BOUND_MS)
    }
    const slowest = Math.max(...observations.map((o) => o.endedAt - o.startedAt))
    console.info(`database outage: ${observations.length} answers (${during.length} during the stop), slowest ${slowest} ms`)
  })
})

describe("a pool with no connection to give", () => {
  it("answers 503 database_unavailable after DATABASE_CONNECT_TIMEOUT_MS instead of waiting for one", async () => {
    const database = await createDatabase()
    const tight = await startServer({ DATABASE_URL: database, ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY, DATABASE_POOL_SIZE: "1", DATABASE_CONNECT_TIMEOUT_MS: "1000", ...NO_RATE_LIMITS })
    const locker = new pg.Client({ connectionString: database })
    await locker.connect()
    try {
      // A request blocked on a lock holds the pool's one connection...
      await locker.query("BEGIN")
      await locker.query("LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE")
      const blocked = call(`${tight.api}/accounts`, { key: BOOTSTRAP_KEY })
      await waitFor(
        "acs's statement to wait on the lock",
        () => query<{ n: number }>(database, "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'acs' AND wait_event_type = 'Lock'"),
        (rows) => rows[0]!.n > 0
      )
      // ...so the next one has none to get: it is answered while the first still waits, not after.
      const refused = await call(`${tight.api}/accounts`, { key: BOOTSTRAP_KEY })
      expect(refused.status, refused.text).toBe(503)
      expect(refused.body).toMatchObject({ error: { code: "database_unavailable" }, retry_after_ms: 5000 })
      expect(refused.headers.get("retry-after")).toBe("5")
      await locker.query("COMMIT")
      expect((await blocked).status).toBe(200)
      expect((await call(`${tight.api}/accounts`, { key: BOOTSTRAP_KEY })).status).toBe(200)
    } finally {
      await locker.end()
      await tight.stop()
    }
  })
})
