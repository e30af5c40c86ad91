/**
 * The front door (docs/contract.md 5.3), from outside as a hostile client meets it:
 * content types other than JSON answered at once (they hung before), bodies cut at 1 MiB whatever the
 * framing and never read for a caller who is not signed in, session cookies that count only same-origin
 * (CSRF), and the headers every answer carries.
 */
import * as Net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase, insertAccount, query } from "./support/database.ts"
import { type Answer, BOOTSTRAP_KEY, call, errorCode, type RunningServer, startServer } from "./support/server.ts"

const EMAIL = "owner@frontdoor.example"
const PASSWORD = "front-door-password-0123456789"
const PROJECT = "prj_front_door"
const CONSOLE_ORIGIN = "https://console.frontdoor.example"
const MiB = 1024 * 1024

let server: RunningServer
let database: string
let cookie: string
let orgId: string
let actionCounter = 0

beforeAll(async () => {
  database = await createDatabase()
  server = await startServer({
    DATABASE_URL: database,
    ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    ADMIN_EMAIL: EMAIL,
    ADMIN_PASSWORD: PASSWORD,
    ALLOWED_ORIGINS: CONSOLE_ORIGIN
  })
  orgId = (await query<{ org_id: string }>(database, "SELECT org_id FROM orgs"))[0]!.org_id
  await insertAccount(database, orgId, PROJECT)
  const login = await call(`${server.api}/auth/login`, { method: "POST", body: { email: EMAIL, password: PASSWORD } })
  expect(login.status).toBe(200)
  cookie = login.headers.getSetCookie()[0]!.split(";")[0]!
})

afterAll(async () => {
  await server?.stop()
})

/** A queued action the bootstrap key proposed, as the ledger holds it. */
const pendingAction = async (): Promise<string> => {
  const actionId = `act_front_door_${++actionCounter}`
  await query(
    database,
    `INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, summary, reason, payload, proposed_by, created_at)
     VALUES ($1, $2, $3, 'campaign_status', 'queued', 'proposed', 'review', 'pause campaign 1', 'front door', '{}',
             '{"kind":"key","id":"key_elsewhere","name":"a script"}', clock_timestamp())`,
    [actionId, orgId, PROJECT]
  )
  return actionId
}

const statusOf = async (actionId: string): Promise<string | undefined> =>
  (await query<{ status: string }>(database, "SELECT status FROM actions WHERE action_id = $1", [actionId]))[0]?.status

const killSwitch = async (): Promise<boolean> =>
  (await query<{ platform_auto_apply: boolean }>(database, "SELECT platform_auto_apply FROM orgs WHERE org_id = $1", [orgId]))[0]!
    .platform_auto_apply

/** fetch with exactly these headers: a Uint8Array body gets no Content-Type of its own. */
const raw = async (path: string, init: { readonly method: string; readonly headers: Record<string, string>; readonly body?: string }) => {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: init.method,
    headers: init.headers,
    ...(init.body === undefined ? {} : { body: new TextEncoder().encode(init.body) })
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, code: text.length > 0 ? (JSON.parse(text) as { error?: { code?: string } }).error?.code : undefined }
}

interface Streamed {
  readonly status: number
  readonly text: string
  /** Body bytes the client had written when the answer came. */
  readonly written: number
}

/**
 * A chunked POST on a raw socket that keeps sending (up to `maxBytes`) until the server answers: the answer
 * shows what the server decided without the rest of the body. Write errors after the answer (the server
 * closed a connection whose body it will not read) are expected.
 */
const streamBody = (path: string, headers: Record<string, string>, options: { readonly maxBytes: number }) =>
  new Promise<Streamed>((resolve, reject) => {
    const port = Number(new URL(server.baseUrl).port)
    const socket = Net.connect(port, "127.0.0.1")
    let received = Buffer.alloc(0)
    let written = 0
    let answer: Streamed | undefined
    const parse = () => {
      const text = received.toString("utf8")
      const end = text.indexOf("\r\n\r\n")
      if (end < 0) return
      const length = Number(/content-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? "0")
      if (Buffer.byteLength(text.slice(end + 4)) < length) return
      answer = { status: Number(text.slice(9, 12)), text: text.slice(end + 4, end + 4 + length), written }
      socket.destroy()
      resolve(answer)
    }
    socket.on("data", (data: Buffer) => {
      received = Buffer.concat([received, data])
      if (answer === undefined) parse()
    })
    socket.on("error", () => undefined)
    socket.on("close", () => {
      if (answer === undefined) reject(new Error(`closed without an answer after ${written} bytes: ${received.toString("utf8")}`))
    })
    const head = Object.entries({ host: `127.0.0.1:${port}`, ...headers, "transfer-encoding": "chunked" })
      .map(([name, value]) => `${name}: ${value}\r\n`).join("")
    socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n`)
    const chunk = `4000\r\n${"a".repeat(0x4000)}\r\n`
    const pump = () => {
      while (answer === undefined && !socket.destroyed && written < options.maxBytes) {
        written += 0x4000
        if (!socket.write(chunk)) return void socket.once("drain", pump)
      }
    }
    pump()
  })

describe("content types: REST takes JSON and nothing else, answered at once", () => {
  it.each([
    "application/ndjson",
    "application/merge-patch+json",
    "application/vnd.api+json",
    "text/plain",
    "application/x-www-form-urlencoded"
  ])("refuses %s on a REST body with 400 naming Content-Type", async (type) => {
    const answer = await raw("/api/v1/keys", {
      method: "POST",
      headers: { authorization: `Bearer ${BOOTSTRAP_KEY}`, "content-type": type },
      body: JSON.stringify({ name: "typed", scope: "read" })
    })
    expect(answer.status).toBe(400)
    expect(answer.code).toBe("invalid_request")
    expect(answer.text).toContain("Content-Type")
  })

  it("refuses a body sent with no Content-Type", async () => {
    const answer = await raw("/api/v1/keys", {
      method: "POST",
      headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` },
      body: JSON.stringify({ name: "untyped", scope: "read" })
    })
    expect(answer.status).toBe(400)
    expect(answer.text).toContain("Content-Type")
  })

  it("takes application/json in any case and with a charset", async () => {
    const answer = await raw("/api/v1/keys", {
      method: "POST",
      headers: { authorization: `Bearer ${BOOTSTRAP_KEY}`, "content-type": "Application/JSON; charset=UTF-8" },
      body: JSON.stringify({ name: "json", scope: "read" })
    })
    expect(answer.status).toBe(201)
  })

  it("lets a POST without a body through with a key: reject needs no body, its reason is optional", async () => {
    const actionId = await pendingAction()
    const answer = await raw(`/api/v1/accounts/${PROJECT}/approvals/${actionId}/reject`, {
      method: "POST",
      headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` }
    })
    expect(answer.status).toBe(200)
    expect(await statusOf(actionId)).toBe("rejected")
  })
})

describe("bodies: at most 1 MiB whatever the framing, and none read before the caller is known", () => {
  it("answers an unauthenticated chunked body with 401 before it ends", async () => {
    // The body never ends: the answer can only come from a server that did not wait for it.
    const answer = await streamBody("/api/v1/keys", { "content-type": "application/json" }, { maxBytes: 64 * MiB })
    expect(answer.status).toBe(401)
    expect(answer.written).toBeLessThan(64 * MiB)
  })

  it("cuts an authenticated chunked body at 1 MiB with 400, without reading the rest", async () => {
    const answer = await streamBody(
      "/api/v1/keys",
      { authorization: `Bearer ${BOOTSTRAP_KEY}`, "content-type": "application/json" },
      { maxBytes: 64 * MiB }
    )
    expect(answer.status).toBe(400)
    expect(answer.text).toContain("larger than 1 MiB")
    expect(answer.written).toBeLessThan(64 * MiB)
  })

  it("refuses a declared length over 1 MiB before reading, and a refused caller before that", async () => {
    const big = "x".repeat(MiB + 1)
    const keyed = await raw("/api/v1/keys", {
      method: "POST",
      headers: { authorization: `Bearer ${BOOTSTRAP_KEY}`, "content-type": "application/json" },
      body: big
    })
    expect([keyed.status, keyed.code]).toEqual([400, "invalid_request"])
    const anonymous = await raw("/api/v1/keys", { method: "POST", headers: { "content-type": "application/json" }, body: big })
    expect([anonymous.status, anonymous.code]).toEqual([401, "unauthorized"])
  })

  it("holds /rpc and /mcp to the same limit, and reads little of an unauthenticated /rpc body", async () => {
    const big = "x".repeat(MiB + 1)
    const rpc = await raw("/rpc", { method: "POST", headers: { authorization: `Bearer ${BOOTSTRAP_KEY}`, "content-type": "application/ndjson" }, body: big })
    expect([rpc.status, rpc.code]).toEqual([400, "invalid_request"])
    const mcp = await raw("/mcp", { method: "POST", headers: { authorization: `Bearer ${BOOTSTRAP_KEY}`, "content-type": "application/json" }, body: big })
    expect([mcp.status, mcp.code]).toEqual([400, "invalid_request"])
    const anonymousRpc = await raw("/rpc", { method: "POST", headers: { "content-type": "application/ndjson" }, body: "x".repeat(65 * 1024) })
    expect(anonymousRpc.status).toBe(400)
    expect(anonymousRpc.text).toContain("64 KiB")
    const anonymousMcp = await raw("/mcp", { method: "POST", headers: { "content-type": "application/json" }, body: big })
    expect(anonymousMcp.status).toBe(401)
  })
})

describe("session cookies count only same-origin (CSRF)", () => {
  const asPerson = (path: string, method: string, headers: Record<string, string>, body?: string) =>
    raw(path, { method, headers: { cookie, ...headers }, ...(body === undefined ? {} : { body }) })

  it("ignores the cookie on a cross-site form POST: the queued action stays queued", async () => {
    const actionId = await pendingAction()
    const answer = await asPerson(`/api/v1/accounts/${PROJECT}/approvals/${actionId}/reject`, "POST", {
      origin: "https://evil.example",
      "content-type": "application/x-www-form-urlencoded"
    })
    expect([answer.status, answer.code]).toEqual([401, "unauthorized"])
    expect(await statusOf(actionId)).toBe("proposed")
  })

  it("ignores the cookie on a body sent without Content-Type: the kill switch stays", async () => {
    const before = await killSwitch()
    const answer = await asPerson("/api/v1/settings", "PUT", {}, JSON.stringify({ platformAutoApply: !before }))
    expect([answer.status, answer.code]).toEqual([401, "unauthorized"])
    expect(await killSwitch()).toBe(before)
  })

  it("needs Content-Type: application/json on an unsafe method even without a body", async () => {
    const actionId = await pendingAction()
    const bare = await asPerson(`/api/v1/accounts/${PROJECT}/approvals/${actionId}/reject`, "POST", {})
    expect(bare.status).toBe(401)
    const typed = await asPerson(`/api/v1/accounts/${PROJECT}/approvals/${actionId}/reject`, "POST", { "content-type": "application/json" })
    expect(typed.status).toBe(200)
    expect(await statusOf(actionId)).toBe("rejected")
  })

  it("refuses Sec-Fetch-Site: cross-site and a foreign Origin, even with JSON", async () => {
    const json = { "content-type": "application/json" }
    const body = JSON.stringify({ platformAutoApply: true })
    expect((await asPerson("/api/v1/settings", "PUT", { ...json, "sec-fetch-site": "cross-site" }, body)).status).toBe(401)
    expect((await asPerson("/api/v1/settings", "PUT", { ...json, origin: "https://evil.example" }, body)).status).toBe(401)
    expect((await asPerson("/api/v1/settings", "PUT", { ...json, origin: "null" }, body)).status).toBe(401)
  })

  it("takes the server's own origin and the ones in ALLOWED_ORIGINS", async () => {
    const json = { "content-type": "application/json" }
    const body = JSON.stringify({ platformAutoApply: true })
    expect((await asPerson("/api/v1/settings", "PUT", { ...json, origin: server.baseUrl, "sec-fetch-site": "same-origin" }, body)).status)
      .toBe(200)
    expect((await asPerson("/api/v1/settings", "PUT", { ...json, origin: CONSOLE_ORIGIN }, body)).status).toBe(200)
    // Reads stay open to the cookie: SameSite=Strict already keeps it off cross-site navigations.
    expect((await asPerson("/api/v1/auth/me", "GET", { origin: "https://evil.example" })).status).toBe(200)
  })

  it("leaves keys alone: a key works whatever the Origin", async () => {
    const answer = await raw("/api/v1/auth/me", { method: "GET", headers: { authorization: `Bearer ${BOOTSTRAP_KEY}`, origin: "https://evil.example" } })
    expect(answer.status).toBe(200)
  })
})

describe("headers on every answer", () => {
  const expectHardened = (answer: Answer | Awaited<ReturnType<typeof raw>>) => {
    expect(answer.headers.get("cache-control")).toBe("no-store")
    expect(answer.headers.get("x-content-type-options")).toBe("nosniff")
  }

  it("says no-store and nosniff on successes, refusals and unknown routes, and on the answer carrying a secret", async () => {
    const created = await call(`${server.api}/keys`, { method: "POST", key: BOOTSTRAP_KEY, body: { name: "secret shown once", scope: "read" } })
    expect(created.status).toBe(201)
    expectHardened(created)
    expectHardened(await call(`${server.api}/accounts`, { key: BOOTSTRAP_KEY }))
    expectHardened(await call(`${server.api}/no-such-route`, { key: BOOTSTRAP_KEY }))
    expectHardened(await call(`${server.api}/keys`, { method: "POST", key: BOOTSTRAP_KEY, body: [1] }))
    expectHardened(await call(`${server.baseUrl}/healthz`))
  })

  it("names the Bearer scheme on a 401, and takes the scheme in any case", async () => {
    const refused = await call(`${server.api}/auth/me`)
    expect(refused.status).toBe(401)
    expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer/)
    expect(errorCode(refused)).toBe("unauthorized")
    for (const scheme of ["bearer", "BEARER", "Bearer"]) {
      const answer = await call(`${server.api}/auth/me`, { headers: { authorization: `${scheme} ${BOOTSTRAP_KEY}` } })
      expect([scheme, answer.status]).toEqual([scheme, 200])
    }
  })
})
