/**
 * Malformed input against the started server: random methods, paths, headers and bodies, with and without
 * a valid key. Every answer is a 2xx or a docs/contract.md 7 status, and every non-2xx body is exactly the SPEC
 * envelope whose `error.code` matches the status. Requests go through node:http so that raw paths (`%`
 * garbage, `..`, long segments) and odd headers reach the server as written.
 *
 * The generators stay within what Node's HTTP parser accepts (ASCII request targets, header lines under
 * its 16 KB limit, known methods): beyond that Node answers itself before the application sees the request.
 */
import { Api } from "@acs/domain/Api"
import { ErrorCodes } from "@acs/domain/Errors"
import * as fc from "fast-check"
import * as Http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase, insertAccount, query } from "./support/database.ts"
import { BOOTSTRAP_KEY, NO_RATE_LIMITS, type RunningServer, startServer } from "./support/server.ts"

const MiB = 1024 * 1024

let server: RunningServer
let port: number

beforeAll(async () => {
  const database = await createDatabase()
  server = await startServer({
    DATABASE_URL: database,
    ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    ...NO_RATE_LIMITS
  })
  port = Number(new URL(server.baseUrl).port)
  // One real account, so that account routes get past the account lookup and decode their bodies.
  const orgId = (await query<{ org_id: string }>(database, "SELECT org_id FROM orgs"))[0]!.org_id
  await insertAccount(database, orgId, "prj_x")
})

afterAll(async () => {
  await server?.stop()
})

// ---------------------------------------------------------------------------------------------------------
// Bodies are described, not materialised, so that a failing counterexample prints short.

type Body =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "bytes"; readonly bytes: ReadonlyArray<number> }
  | { readonly kind: "nested"; readonly depth: number; readonly object: boolean }
  | { readonly kind: "huge"; readonly bytes: number; readonly json: boolean }

const materialise = (body: Body): Buffer => {
  switch (body.kind) {
    case "text":
      return Buffer.from(body.text, "utf8")
    case "bytes":
      return Buffer.from(body.bytes)
    case "nested":
      return Buffer.from(
        body.object ? `${'{"a":'.repeat(body.depth)}1${"}".repeat(body.depth)}` : `${"[".repeat(body.depth)}${"]".repeat(body.depth)}`
      )
    case "huge": {
      // `{"name":"xxx…"}` or bare `xxx…`, exactly `bytes` long.
      if (!body.json) return Buffer.alloc(body.bytes, "x")
      const frame = '{"name":""}'
      return Buffer.from(`{"name":"${"x".repeat(Math.max(0, body.bytes - frame.length))}"}`)
    }
  }
}

interface Probe {
  readonly method: string
  readonly path: string
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: Body | undefined
  readonly chunked: boolean
}

interface Reply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly text: string
}

/** One request on its own connection; a reset after the answer arrived (an early 400) is not an error. */
const send = (request: Probe): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const payload = request.body === undefined ? undefined : materialise(request.body)
    // As an array, the headers go out exactly as given: Node adds neither Host (its server refuses a request
    // without one) nor the body's framing. Keep-alive lets the server drain a body it answered early (an
    // oversized one) instead of closing on unread data, which would reset the connection before the answer.
    const headers: Array<[string, string]> = [
      ["host", `127.0.0.1:${port}`],
      ["connection", "keep-alive"],
      ...request.headers.map(([name, value]): [string, string] => [name, value])
    ]
    if (payload !== undefined) {
      headers.push(request.chunked ? ["transfer-encoding", "chunked"] : ["content-length", String(payload.length)])
    }
    let answered = false
    const outgoing = Http.request({
      host: "127.0.0.1",
      port,
      method: request.method,
      path: request.path,
      headers: headers.flat(),
      agent: false,
      timeout: 20_000
    }, (incoming) => {
      answered = true
      // A live stream (GET /events/stream) never ends: its status and headers are the answer.
      if (String(incoming.headers["content-type"] ?? "").startsWith("text/event-stream")) {
        resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, text: "" })
        outgoing.destroy()
        return
      }
      const chunks: Array<Buffer> = []
      let ended = false
      incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
      incoming.on("end", () => {
        ended = true
        resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, text: Buffer.concat(chunks).toString("utf8") })
        outgoing.destroy()
      })
      incoming.on("error", reject)
      incoming.on("close", () => {
        if (!ended) reject(new Error(`the answer (${incoming.statusCode}) was cut before its end`))
      })
    })
    outgoing.on("timeout", () => outgoing.destroy(new Error("timed out")))
    outgoing.on("error", (error) => {
      if (!answered) reject(error)
    })
    if (payload !== undefined) {
      if (request.chunked) {
        // Several chunks, so the server cannot learn the size before reading.
        for (let offset = 0; offset < payload.length; offset += 64 * 1024) outgoing.write(payload.subarray(offset, offset + 64 * 1024))
      } else {
        outgoing.write(payload)
      }
    }
    outgoing.end()
  })

// ---------------------------------------------------------------------------------------------------------
// The property.

const ALLOWED_ERROR_STATUSES = new Set([400, 401, 403, 404, 409, 422, 429, 502, 503])

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** A client's X-Request-Id the server adopts (RequestLog); any other gets replaced by a fresh id. */
const SANE_REQUEST_ID = /^[\w.:-]{1,128}$/

/** Longer error bodies than this would be echoing the request back. */
const MAX_ERROR_BODY = 4096

/** Why a reply breaks docs/contract.md 7 (or the request-id contract), or undefined when it does not. */
const MCP_TRANSPORT_STATUSES: ReadonlySet<number> = new Set([400, 405, 406, 415])

const violation = (request: Probe, reply: Reply): string | undefined => {
  const requestId = reply.headers["x-request-id"]
  if (typeof requestId !== "string" || requestId.length === 0) return "no X-Request-Id header"
  const sent = request.headers.find(([name]) => name === "x-request-id")?.[1].trim()
  if (sent !== undefined && SANE_REQUEST_ID.test(sent) && requestId !== sent) return `X-Request-Id ${sent} came back as ${requestId}`
  if (reply.status >= 200 && reply.status < 300) return undefined
  // After the key check, /mcp speaks the MCP transport: its refusals of a request that is no MCP message
  // (405 for a GET probing for an event stream, the server being stateless; 406 without the Accept it needs;
  // 415 for another content type; 400 for a body that is no JSON-RPC) are JSON-RPC errors, as MCP clients expect.
  if (request.path.split("?")[0] === "/mcp" && MCP_TRANSPORT_STATUSES.has(reply.status)) {
    return /"jsonrpc":"2\.0"/.test(reply.text) || request.method === "HEAD" ? undefined : `${reply.status} on /mcp without a JSON-RPC error`
  }
  if (!ALLOWED_ERROR_STATUSES.has(reply.status)) return `status ${reply.status} is not in the table of docs/contract.md 7`
  if (request.method === "HEAD") return undefined // no body to check
  if (!/^application\/json\b/.test(reply.headers["content-type"] ?? "")) {
    return `content-type ${reply.headers["content-type"]} is not JSON`
  }
  if (reply.text.length > MAX_ERROR_BODY) return `error body of ${reply.text.length} characters`
  let body: unknown
  try {
    body = JSON.parse(reply.text)
  } catch {
    return "body is not JSON"
  }
  if (!isRecord(body) || !isRecord(body["error"])) return "body has no `error` object"
  const extra = Object.keys(body).filter((key) => key !== "error" && key !== "retry_after_ms")
  if (extra.length > 0) return `body has keys besides the envelope: ${extra.join(", ")}`
  const { code, message } = body["error"]
  if (typeof code !== "string" || !(code in ErrorCodes)) return `error.code ${JSON.stringify(code)} is not a SPEC code`
  if (ErrorCodes[code as keyof typeof ErrorCodes] !== reply.status) return `error.code ${code} does not go with status ${reply.status}`
  if (typeof message !== "string" || message.length === 0) return "error.message is not a non-empty string"
  if ("retry_after_ms" in body && (code !== "rate_limited" && code !== "upstream_unavailable")) {
    return `retry_after_ms on ${code}`
  }
  return undefined
}

const bodyBytes = (body: Body | undefined): number => (body === undefined ? 0 : materialise(body).length)

const errorCodeOf = (reply: Reply): unknown => {
  try {
    const body: unknown = JSON.parse(reply.text)
    return isRecord(body) && isRecord(body["error"]) ? body["error"]["code"] : undefined
  } catch {
    return undefined
  }
}

const check = async (request: Probe): Promise<void> => {
  const reply = await send(request)
  const problem = violation(request, reply)
  if (problem !== undefined) throw new Error(`${problem}: ${reply.status} ${reply.text.slice(0, 300)}`)
  // A body over the limit, however framed, is never taken: refused for its size (400), or earlier, by the
  // checks that come before any body is read (no route, no credentials, no access).
  if (bodyBytes(request.body) > MiB) {
    if (reply.status < 400 || (reply.status === 400 && request.method !== "HEAD" && errorCodeOf(reply) !== "invalid_request")) {
      throw new Error(`a body over 1 MiB got ${reply.status} ${reply.text.slice(0, 300)}`)
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Generators.

const method = fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "PROPFIND", "MKCOL", "PURGE")

/** Percent-encodes every UTF-8 byte of a string (lone surrogates become U+FFFD). */
const percentEncode = (s: string): string =>
  Array.from(Buffer.from(s, "utf8"), (byte) => `%${byte.toString(16).toUpperCase().padStart(2, "0")}`).join("")

const printable = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 24 })
  .map((s) => s.replace(/[/?#]/g, "_"))

const segment = fc.oneof(
  fc.constantFrom(
    "api", "v1", "accounts", "keys", "current", "auth", "me", "login", "logout", "settings", "connection",
    "openapi.json", "healthz", "readyz", "docs", "mcp", "rpc", "prj_x", "key_x", "..", ".", "", "%", "%%", "%zz",
    "%E0%A4%A", "%C0%AF", "%FF%FE", "%00", "%2F", "%2e%2e", "..%2F..", "%u0041", "~", "null", "undefined"
  ),
  printable,
  fc.string({ unit: "binary", maxLength: 12 }).map(percentEncode),
  fc.string({ unit: "grapheme", maxLength: 12 }).map(encodeURIComponent),
  fc.tuple(fc.integer({ min: 256, max: 4000 }), fc.constantFrom("a", "%", "..", "%41", "é")).map(([n, unit]) =>
    (unit === "é" ? percentEncode(unit) : unit).repeat(Math.ceil(n / unit.length)).slice(0, n)
  )
)

const segments = fc.array(segment, { maxLength: 8 }).map((parts) => parts.join("/"))

const queryString = fc.oneof(
  fc.constant(""),
  fc.constantFrom("?", "?a", "?a=%zz", "?limit=-1&limit=x", "?=&&=", "?%"),
  printable.map((s) => `?${s}`)
)

const randomPath = fc.oneof(
  segments.map((s) => `/${s}`),
  fc.tuple(fc.constantFrom("/api/v1", "/api/v1/accounts", "/api/v1/keys", "/api/v1/auth", "//api/v1", "/api/v1/"), segments)
    .map(([prefix, s]) => `${prefix}/${s}`),
  segment.map((s) => `/api/v1/accounts/${s}/keys`),
  segment.map((s) => `/api/v1/accounts/${s}`),
  segment.map((s) => `/api/v1/keys/${s}`),
  fc.constantFrom("/docs", "/docs/", "/mcp", "/rpc", "*")
)

/** Every endpoint the API declares, as [METHOD, path with `:param`]. */
const endpoints: Array<readonly [string, string]> = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => [endpoint.method.toUpperCase(), endpoint.path] as const)
)

/** A declared endpoint, its parameters a real id, a dummy or garbage, usually with its own method. */
const endpoint = fc.tuple(
  fc.constantFrom(...endpoints),
  fc.oneof(fc.constantFrom("prj_x", "current", "key_x"), segment),
  fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: method })
).map(([[declared, template], param, other]) => ({
  method: other ?? declared,
  path: template.replace(/:\w+/g, () => param)
}))

const target = fc.tuple(
  fc.oneof(endpoint, fc.tuple(method, randomPath).map(([m, p]) => ({ method: m, path: p }))),
  queryString
).map(([{ method, path }, q]) => ({ method, path: path + q }))

/** A header value Node will send: tab, printable ASCII and Latin-1, no control characters. */
const headerValue = fc.oneof(
  fc.string({ maxLength: 64 }).map((s) => s.replace(/[^\t\x20-\x7e]/g, "")),
  fc.string({ unit: fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 16 }),
  fc.integer({ min: 600, max: 4000 }).map((n) => "k".repeat(n))
)

const authorization = fc.oneof(
  { weight: 3, arbitrary: fc.constant(`Bearer ${BOOTSTRAP_KEY}`) },
  fc.constantFrom("Bearer", "bearer", "BEARER", "Basic", "Token", "Digest", "", "Bearer ", "Bearer  ").chain((scheme) =>
    fc.oneof(fc.constant(BOOTSTRAP_KEY), headerValue, fc.constant(`${BOOTSTRAP_KEY}x`), fc.constant("acs_")).map((token) =>
      `${scheme} ${token}`
    )
  ),
  headerValue
)

const cookie = fc.oneof(
  headerValue.map((v) => `acs_session=${v}`),
  fc.constantFrom("acs_session=", "acs_session", "=;=;;", "acs_session=a; acs_session=b", "acs_session=%zz"),
  headerValue
)

const contentType = fc.oneof(
  fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "application/json; charset=latin1",
    "APPLICATION/JSON",
    "application/json;",
    "text/plain",
    "text/json",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "multipart/form-data; boundary=",
    "multipart/form-data; boundary=xyz",
    "multipart/mixed; boundary=--",
    "text/plain; multipart/form-data",
    "application/json, multipart/form-data",
    "application/octet-stream",
    "application/*",
    ""
  ),
  headerValue
)

const optional = <A>(arbitrary: fc.Arbitrary<A>) => fc.option(arbitrary, { nil: undefined, freq: 2 })

const headers = fc.record({
  authorization: optional(authorization),
  cookie: optional(cookie),
  "content-type": optional(contentType),
  "x-request-id": optional(fc.oneof(headerValue, fc.stringMatching(SANE_REQUEST_ID))),
  accept: optional(fc.constantFrom("*/*", "text/html", "application/xml", "")),
  "content-encoding": optional(fc.constantFrom("gzip", "br", "identity", "x"))
}).map((record) =>
  Object.entries(record).flatMap(([name, value]): Array<readonly [string, string]> => (value === undefined ? [] : [[name, value]]))
)

const wrongTypes = fc.record({
  name: fc.jsonValue({ maxDepth: 2 }),
  scope: fc.oneof(fc.constantFrom("read", "write", "admin", "approve", "READ", ""), fc.jsonValue({ maxDepth: 1 })),
  projectIds: fc.oneof(fc.array(fc.string()), fc.jsonValue({ maxDepth: 2 })),
  email: fc.jsonValue({ maxDepth: 1 }),
  password: fc.jsonValue({ maxDepth: 1 }),
  canApprove: fc.jsonValue({ maxDepth: 1 }),
  expiresAt: fc.jsonValue({ maxDepth: 1 })
}, { requiredKeys: [] })

const body: fc.Arbitrary<Body> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v): Body => ({ kind: "text", text: JSON.stringify(v) ?? "null" })) },
  { weight: 3, arbitrary: wrongTypes.map((v): Body => ({ kind: "text", text: JSON.stringify(v) })) },
  {
    weight: 3,
    arbitrary: fc.oneof(
      fc.constantFrom("{", "}", "{\"name\":", "[1,2", "nul", "'x'", "{\"name\": \"x\",}", "NaN", "1e99999", "\u0000", "\"\\ud800\"",
        "{\"__proto__\": {\"scope\": \"admin\"}}", "{\"email\": \"a\\u0000b\", \"password\": \"x\"}",
        "{\"name\": \"\\u0000\", \"scope\": \"read\"}", "{\"platformAutoApply\": \"true\"}",
        // Well-formed ones too, so that the happy paths next to the failures are exercised.
        "{\"name\": \"fuzz\", \"scope\": \"read\"}", "{\"name\": \"fuzz\", \"scope\": \"write\", \"projectIds\": [\"prj_x\"]}",
        "{\"name\": \"fuzz\", \"scope\": \"admin\", \"expiresAt\": \"2001-01-01T00:00:00Z\"}", "{\"platformAutoApply\": true}",
        "{\"email\": \"nobody@example.com\", \"password\": \"x\"}", "{\"constructor\": {\"prototype\": 1}}", "", " ", "\uFEFF{}"),
      fc.string({ unit: "binary", maxLength: 200 })
    ).map((text): Body => ({ kind: "text", text }))
  },
  { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 200 }).map((bytes): Body => ({ kind: "bytes", bytes })) },
  {
    // Deeper than this is the known bug below.
    weight: 1,
    arbitrary: fc.record({ depth: fc.integer({ min: 1, max: 1000 }), object: fc.boolean() }).map((v): Body => ({ kind: "nested", ...v }))
  },
  {
    weight: 1,
    arbitrary: fc.record({ bytes: fc.integer({ min: MiB - 2048, max: MiB + 2048 }), json: fc.boolean() }).map((v): Body => ({
      kind: "huge",
      ...v
    }))
  }
)

/** Node's HTTP parser refuses a request line plus headers over 16 KB (431) before the application runs. */
const HEADER_BUDGET = 14 * 1024

const request: fc.Arbitrary<Probe> = fc.record({
  target,
  headers,
  body: optional(body),
  chunked: fc.boolean()
}).map(({ target, ...rest }): Probe => ({ ...target, ...rest })).filter((r) =>
  r.path.length + r.headers.reduce((total, [name, value]) => total + name.length + value.length + 4, 0) < HEADER_BUDGET
)

// ---------------------------------------------------------------------------------------------------------

describe("malformed input", () => {
  it("always gets a 2xx or a docs/contract.md 7 status with exactly the envelope", async () => {
    await fc.assert(fc.asyncProperty(request, check), { numRuns: Number(process.env["FUZZ_RUNS"] ?? 300) })
  }, 120_000)

  const oversized = (bytes: number, json: boolean, chunked: boolean) =>
    send({
      method: "POST",
      path: "/api/v1/keys",
      headers: [["authorization", `Bearer ${BOOTSTRAP_KEY}`], ["content-type", "application/json"]],
      body: { kind: "huge", bytes, json },
      chunked
    })

  it("answers 400 invalid_request to a body over 1 MiB sent with its Content-Length", async () => {
    for (const [bytes, json] of [[MiB + 1, true], [3 * MiB, false]] as const) {
      const reply = await oversized(bytes, json, false)
      expect({ bytes, status: reply.status, body: JSON.parse(reply.text) }).toEqual({
        bytes,
        status: 400,
        body: { error: { code: "invalid_request", message: "invalid request: the body is larger than 1 MiB" } }
      })
    }
  })

  it("answers 400 invalid_request to a chunked body over 1 MiB", async () => {
    const reply = await oversized(MiB + 1, true, true)
    expect(reply.status).toBe(400)
    expect(errorCodeOf(reply)).toBe("invalid_request")
  })

  it("refuses a body over 1 MiB sent to the console's page too, never answering the page past it", async () => {
    for (const chunked of [false, true]) {
      const reply = await send({ method: "GET", path: "/?", headers: [], body: { kind: "huge", bytes: MiB + 1, json: false }, chunked })
      expect({ chunked, status: reply.status, code: errorCodeOf(reply) }).toEqual({ chunked, status: 400, code: "invalid_request" })
    }
    // Without a body the page is served.
    expect((await send({ method: "GET", path: "/", headers: [], body: undefined, chunked: false })).status).toBe(200)
  })

  const post = (path: string, body: Body, headers: ReadonlyArray<readonly [string, string]> = []) =>
    send({
      method: "POST",
      path,
      headers: [["authorization", `Bearer ${BOOTSTRAP_KEY}`], ["content-type", "application/json"], ...headers],
      body,
      chunked: false
    })

  it("refuses multipart bodies with 400 invalid_request, however the boundary is written", async () => {
    for (const type of ["multipart/form-data", "multipart/form-data; boundary=", "multipart/form-data; boundary=xyz"]) {
      const reply = await post("/api/v1/auth/login", { kind: "text", text: "--xyz\r\n\r\n--xyz--" }, [["content-type", type]])
      expect({ type, status: reply.status, code: errorCodeOf(reply) }).toEqual({ type, status: 400, code: "invalid_request" })
    }
  })

  it("answers 400 invalid_request to a NUL character in a path parameter or a body field", async () => {
    const answers = [
      await send({ method: "GET", path: "/api/v1/accounts/%00", headers: [["authorization", `Bearer ${BOOTSTRAP_KEY}`]], body: undefined, chunked: false }),
      await send({ method: "DELETE", path: "/api/v1/keys/a%00", headers: [["authorization", `Bearer ${BOOTSTRAP_KEY}`]], body: undefined, chunked: false }),
      await post("/api/v1/auth/login", { kind: "text", text: JSON.stringify({ email: "a\u0000b", password: "x" }) }),
      await post("/api/v1/keys", { kind: "text", text: JSON.stringify({ name: "a\u0000b", scope: "read" }) })
    ]
    expect(answers.map((reply) => [reply.status, errorCodeOf(reply)])).toEqual(Array(4).fill([400, "invalid_request"]))
  })

  it("names the bad field without echoing a large value back", async () => {
    const reply = await post("/api/v1/keys", { kind: "text", text: JSON.stringify({ name: "a", scope: "x".repeat(900_000) }) })
    expect(reply.status).toBe(400)
    expect(reply.text).toMatch(/scope/)
    expect(reply.text.length).toBeLessThan(MAX_ERROR_BODY)
  })

  it("answers 400 invalid_request to a deeply nested body", async () => {
    const reply = await post("/api/v1/keys", { kind: "nested", depth: 5000, object: false })
    expect(reply.status).toBe(400)
    expect(errorCodeOf(reply)).toBe("invalid_request")
  })

  it("accepts a body just under 1 MiB as far as the size goes", async () => {
    const reply = await send({
      method: "POST",
      path: "/api/v1/keys",
      headers: [["authorization", `Bearer ${BOOTSTRAP_KEY}`], ["content-type", "application/json"]],
      body: { kind: "huge", bytes: MiB - 64, json: true },
      chunked: false
    })
    // The name is far too long for the schema, so this is a 400 about the field, not about the size.
    expect(reply.status).toBe(400)
    expect(errorCodeOf(reply)).toBe("invalid_request")
    expect(reply.text).toMatch(/name/)
    expect(reply.text).not.toMatch(/1 MiB/)
    expect(violation({ method: "POST", path: "/", headers: [], body: undefined, chunked: false }, reply)).toBeUndefined()
  })
})
