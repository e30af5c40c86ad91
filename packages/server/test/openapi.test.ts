/**
 * The OpenAPI document served by the started server: valid OpenAPI 3.1, the security schemes, the docs/contract.md 7
 * envelope on every error response, the documented headers, agreement in both directions with the routes
 * the server answers, and schemas that a strict JSON Schema 2020-12 validator accepts.
 */
import SwaggerParser from "@apidevtools/swagger-parser"
import { Api } from "@acs/domain/Api"
import { type OperationName, Operations } from "@acs/domain/Operations"
import Ajv2020 from "ajv/dist/2020"
import addFormats from "ajv-formats"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase } from "./support/database.ts"
import { BOOTSTRAP_KEY, call, errorCode, type RunningServer, startServer } from "./support/server.ts"

type Json = Record<string, unknown>
type ApiDocument = Exclude<Parameters<typeof SwaggerParser.validate>[0], string>

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"] as const

let server: RunningServer
let doc: Json
/** The document with every `$ref` replaced by its target. */
let resolved: Json

beforeAll(async () => {
  const database = await createDatabase()
  server = await startServer({ DATABASE_URL: database, ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY })
  const answer = await call(`${server.api}/openapi.json`)
  expect(answer.status).toBe(200)
  expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
  if (!isRecord(answer.body)) throw new Error(`openapi.json is not a JSON object: ${answer.text.slice(0, 200)}`)
  doc = answer.body
  resolved = (await SwaggerParser.dereference(structuredClone(doc) as unknown as ApiDocument)) as unknown as Json
})

afterAll(async () => {
  await server?.stop()
})

const record = (u: unknown, what: string): Json => {
  if (!isRecord(u)) throw new Error(`${what} is not an object: ${JSON.stringify(u)}`)
  return u
}

interface Operation {
  readonly path: string
  readonly method: string
  readonly operation: Json
}

const operations = (document: Json): Array<Operation> => {
  const result: Array<Operation> = []
  for (const [path, item] of Object.entries(record(document["paths"], "paths"))) {
    for (const method of METHODS) {
      const operation = record(item, path)[method]
      if (operation !== undefined) result.push({ path, method, operation: record(operation, `${method} ${path}`) })
    }
  }
  return result
}

const responsesOf = (operation: Operation): Array<[string, Json]> =>
  Object.entries(record(operation.operation["responses"], `${operation.method} ${operation.path} responses`)).map((
    [status, response]
  ) => [status, record(response, `${operation.method} ${operation.path} ${status}`)])

/** Header names of a response, lower-cased (HTTP header names are case-insensitive). */
const headerNames = (response: Json): Array<string> =>
  Object.keys(isRecord(response["headers"]) ? response["headers"] : {}).map((name) => name.toLowerCase())

/**
 * Whether a (dereferenced) schema only admits the SPEC envelope: an object whose required `error`
 * property is an object with a required string `code`. Every branch of a union must be one.
 */
const isEnvelopeSchema = (schema: unknown): boolean => {
  if (!isRecord(schema)) return false
  for (const union of ["anyOf", "oneOf"] as const) {
    const branches = schema[union]
    if (Array.isArray(branches)) return branches.length > 0 && branches.every(isEnvelopeSchema)
  }
  if (Array.isArray(schema["allOf"])) return schema["allOf"].some(isEnvelopeSchema)
  const properties = schema["properties"]
  const required = schema["required"]
  if (schema["type"] !== "object" || !isRecord(properties) || !Array.isArray(required) || !required.includes("error")) {
    return false
  }
  const error = properties["error"]
  if (!isRecord(error) || error["type"] !== "object" || !isRecord(error["properties"])) return false
  const errorRequired = error["required"]
  const code = error["properties"]["code"]
  return Array.isArray(errorRequired) && errorRequired.includes("code") && errorRequired.includes("message") &&
    isRecord(code) && (code["type"] === "string" || typeof code["const"] === "string" || Array.isArray(code["enum"]))
}

/** `/a/{b}/c` to a concrete path, with a dummy for each parameter. */
const concrete = (path: string): string =>
  path.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (name === "projectId") return "prj_x"
    if (name === "keyId") return "key_x"
    return `${name}_x`
  })

describe("GET /api/v1/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    expect(doc["openapi"]).toMatch(/^3\.1\./)
    await expect(SwaggerParser.validate(structuredClone(doc) as unknown as ApiDocument)).resolves.toBeDefined()
  })

  it("lists the Bearer and session-cookie security schemes", () => {
    const components = record(doc["components"], "components")
    const schemes = record(components["securitySchemes"], "securitySchemes")
    const values = Object.values(schemes).map((scheme) => record(scheme, "security scheme"))
    expect(values).toContainEqual(expect.objectContaining({ type: "http", scheme: "bearer" }))
    expect(values).toContainEqual(expect.objectContaining({ type: "apiKey", in: "cookie", name: "acs_session" }))
  })

  it("documents every 4xx and 5xx response with the SPEC envelope", () => {
    const offenders: Array<string> = []
    for (const operation of operations(resolved)) {
      for (const [status, response] of responsesOf(operation)) {
        if (!/^[45]/.test(status)) continue
        const content = response["content"]
        const schema = isRecord(content) && isRecord(content["application/json"])
          ? content["application/json"]["schema"]
          : undefined
        if (!isEnvelopeSchema(schema)) offenders.push(`${operation.method.toUpperCase()} ${operation.path} ${status}`)
      }
    }
    expect(offenders).toEqual([])
  })

  it("documents the rate-limit headers on rate-limited successes, Retry-After on 429 and 503 and Location on 201", () => {
    const offenders: Array<string> = []
    for (const operation of operations(doc)) {
      const security = operation.operation["security"]
      const id = operation.operation["operationId"]
      // Logout counts against no bucket (docs/contract.md 8): its answer has no RateLimit-* headers, and says so.
      const unlimited = typeof id === "string" && Object.hasOwn(Operations, id) && Operations[id as OperationName].bucket === "none"
      const authenticated = Array.isArray(security) && security.length > 0
      const name = `${operation.method.toUpperCase()} ${operation.path}`
      for (const [status, response] of responsesOf(operation)) {
        const headers = headerNames(response)
        const missing = (header: string) => {
          if (!headers.includes(header.toLowerCase())) offenders.push(`${name} ${status} lacks ${header}`)
        }
        const rateLimitHeaders = ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Policy"]
        if (status.startsWith("2") && authenticated && !unlimited) for (const header of rateLimitHeaders) missing(header)
        if (status.startsWith("2") && unlimited && rateLimitHeaders.some((h) => headers.includes(h.toLowerCase()))) {
          offenders.push(`${name} ${status} documents RateLimit-* headers it never sends`)
        }
        if (status === "429" || status === "503") missing("Retry-After")
        if (status === "201") missing("Location")
      }
    }
    expect(offenders).toEqual([])
  })

  it("has every endpoint declared in Api", () => {
    const documented = new Set(operations(doc).map((o) => `${o.method.toUpperCase()} ${o.path}`))
    const declared: Array<string> = []
    for (const group of Object.values(Api.groups)) {
      for (const endpoint of Object.values(group.endpoints)) {
        declared.push(`${endpoint.method.toUpperCase()} ${endpoint.path.replace(/:(\w+)/g, "{$1}")}`)
      }
    }
    expect(declared.length).toBeGreaterThan(0)
    expect(declared.filter((route) => !documented.has(route))).toEqual([])
  })

  it("has only routes the server answers", async () => {
    const unanswered: Array<string> = []
    for (const operation of operations(doc)) {
      const method = operation.method.toUpperCase()
      const url = `${server.baseUrl}${concrete(operation.path)}`
      // A stream (Server-Sent Events) answers with its headers and goes on: only its status is read.
      if (JSON.stringify(operation.operation["responses"]).includes("text/event-stream")) {
        const abort = new AbortController()
        const streamed = await fetch(url, { headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` }, signal: abort.signal })
        abort.abort()
        if (streamed.status === 404) unanswered.push(`${method} ${operation.path}: 404`)
        continue
      }
      const answer = await call(url, {
        method,
        key: BOOTSTRAP_KEY,
        ...(method === "GET" || method === "HEAD" || method === "DELETE" ? {} : { body: {} })
      })
      const message = isRecord(answer.body) && isRecord(answer.body["error"]) ? answer.body["error"]["message"] : undefined
      if (answer.status === 404 && errorCode(answer) === "not_found" && typeof message === "string" && message.startsWith("no route")) {
        unanswered.push(`${method} ${operation.path}: ${message}`)
      }
    }
    expect(unanswered).toEqual([])
  })
})

/** Every `$id` in the document, with where it is. */
const ids = (u: unknown, at: string, out: Array<[string, string]> = []): Array<[string, string]> => {
  if (Array.isArray(u)) u.forEach((item, i) => ids(item, `${at}/${i}`, out))
  else if (isRecord(u)) {
    for (const [key, value] of Object.entries(u)) {
      if (key === "$id" && typeof value === "string") out.push([value, at])
      ids(value, `${at}/${key}`, out)
    }
  }
  return out
}

/** Where the component schemas live for ajv: one schema whose `$defs` are the document's components. */
const COMPONENTS_ID = "https://acs.invalid/openapi/components"

/** A copy with each `#/components/schemas/X` reference pointed at the components schema's `$defs`. */
const retarget = (u: unknown): unknown => {
  if (Array.isArray(u)) return u.map(retarget)
  if (!isRecord(u)) return u
  return Object.fromEntries(Object.entries(u).map(([key, value]) => [
    key,
    key === "$ref" && typeof value === "string" && value.startsWith("#/components/schemas/")
      ? `${COMPONENTS_ID}#/$defs/${value.slice("#/components/schemas/".length)}`
      : retarget(value)
  ]))
}

/** Each schema of an operation (parameters, request body, responses) with where it is. */
const operationSchemas = (operation: Operation): Array<[string, unknown]> => {
  const name = `${operation.method.toUpperCase()} ${operation.path}`
  const out: Array<[string, unknown]> = []
  const content = (where: string, holder: unknown) => {
    if (!isRecord(holder) || !isRecord(holder["content"])) return
    for (const [type, media] of Object.entries(holder["content"])) {
      if (isRecord(media) && media["schema"] !== undefined) out.push([`${name} ${where} ${type}`, media["schema"]])
    }
  }
  const parameters = Array.isArray(operation.operation["parameters"]) ? operation.operation["parameters"] : []
  for (const parameter of parameters) {
    if (isRecord(parameter)) out.push([`${name} ${String(parameter["in"])} ${String(parameter["name"])}`, parameter["schema"]])
  }
  content("request body", operation.operation["requestBody"])
  for (const [status, response] of responsesOf(operation)) {
    content(`response ${status}`, response)
    for (const [header, value] of Object.entries(isRecord(response["headers"]) ? response["headers"] : {})) {
      if (isRecord(value)) out.push([`${name} response ${status} header ${header}`, value["schema"]])
    }
  }
  return out
}

describe("the schemas of the OpenAPI document", () => {
  it("repeat no $id", () => {
    const seen = new Map<string, Array<string>>()
    for (const [id, at] of ids(doc, "#")) seen.set(id, [...(seen.get(id) ?? []), at])
    expect([...seen].filter(([, places]) => places.length > 1)).toEqual([])
  })

  it("each compile under ajv's JSON Schema 2020-12 draft in strict mode", async () => {
    const ajv = new Ajv2020({ strict: true, allErrors: true })
    addFormats(ajv)
    const components = record(record(doc["components"], "components")["schemas"], "components.schemas")
    const refused: Array<string> = []
    const failure = (where: string, error: unknown) =>
      refused.push(`${where}: ${error instanceof Error ? error.message : String(error)}`)
    // The components first, as one schema, so that the operations' references resolve against it.
    try {
      ajv.addSchema({ $id: COMPONENTS_ID, $defs: retarget(components) })
    } catch (error) {
      failure("components", error)
    }
    const schemas: Array<[string, unknown]> = Object.keys(components).map((name) => [
      `components.schemas.${name}`,
      { $ref: `${COMPONENTS_ID}#/$defs/${name}` }
    ])
    for (const operation of operations(doc)) {
      for (const [where, schema] of operationSchemas(operation)) schemas.push([where, retarget(schema)])
    }
    // Each distinct schema once (the error envelopes repeat on every operation).
    const compiled = new Set<string>()
    for (const [where, schema] of schemas) {
      const text = JSON.stringify(schema)
      if (compiled.has(text)) continue
      compiled.add(text)
      try {
        ajv.compile(typeof schema === "boolean" ? schema : record(schema, where))
      } catch (error) {
        failure(where, error)
      }
      // Compiling is synchronous: let the event loop run between schemas, so that the HTTP client's
      // keep-alive sockets are not left stale for the next test.
      await new Promise((resolve) => setImmediate(resolve))
    }
    expect(compiled.size).toBeGreaterThan(Object.keys(components).length)
    expect(refused).toEqual([])
  })
})

describe("GET /docs", () => {
  it("is an HTML page", async () => {
    const answer = await call(`${server.baseUrl}/docs`)
    expect(answer.status).toBe(200)
    expect(answer.headers.get("content-type")).toMatch(/^text\/html/)
    expect(answer.text).toMatch(/<html/i)
  })
})
