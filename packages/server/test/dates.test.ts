/**
 * Impossible dates and times are 400 `invalid_request` naming the field, never 500 (docs/contract.md
 * 5.3). The fields are found in the served OpenAPI document (every query, path, header and body field
 * documented with the `date` or `date-time` format), so a new date field is swept without touching this
 * file; a field whose name says it is a date but that lacks the format fails the first test instead.
 * Bodies around the bad value are generated valid from the endpoint's own payload schema, so the only
 * thing wrong with each request is the date.
 */
import SwaggerParser from "@apidevtools/swagger-parser"
import { ActionList } from "@acs/domain/Actions"
import { operationEndpoints } from "@acs/domain/Rpcs"
import { Arbitrary, FastCheck, Option, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase, insertAccount, query } from "./support/database.ts"
import { type Answer, BOOTSTRAP_KEY, NO_RATE_LIMITS, call, errorCode, type RunningServer, startServer } from "./support/server.ts"

type Json = Record<string, unknown>
type ApiDocument = Exclude<Parameters<typeof SwaggerParser.validate>[0], string>

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const METHODS = ["get", "put", "post", "delete", "patch"] as const
const PROJECT_ID = "prj_dates"

type Format = "date" | "date-time"

/** One date field of one operation: where it goes, and its name as the error message must give it. */
interface DateField {
  readonly method: string
  readonly path: string
  readonly operationId: string
  readonly in: "query" | "path" | "header" | "body"
  /** The body path (`["expiresAt"]`, or deeper); the parameter name otherwise. */
  readonly at: ReadonlyArray<string>
  readonly format: Format
}

const label = (field: DateField) => `${field.method.toUpperCase()} ${field.path} ${field.in} ${field.at.join(".")}`

/** Impossible or malformed values; each must be refused naming the field. */
const BAD: Record<Format, ReadonlyArray<string>> = {
  "date-time": [
    "2026-02-30T00:00:00Z",
    "2026-02-29T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "2026-01-01T25:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-00-10T00:00:00Z",
    "2026-01-00T00:00:00Z",
    "2026-01-01T00:61:00Z",
    "2026-01-01T00:60:00Z",
    "2026-01-01T00:00:61Z",
    "2026-01-01T00:00:00+25:00",
    "2026-01-01T00:00:00+01:61",
    "0000-01-01T00:00:00Z",
    "2026-01-01T00:00:00.1234567Z",
    "2026-01-01T00:00:00",
    "2026-01-01",
    "garbage",
    ""
  ],
  date: [
    "2026-02-30",
    "2026-02-29",
    "2026-04-31",
    "2026-13-01",
    "2026-00-10",
    "2026-01-00",
    "0000-01-01",
    "2026-01-01T25:00:00Z",
    "2026-1-1",
    "garbage",
    ""
  ]
}

/** Valid values: accepted by the date check (the operation may still refuse them for its own reasons). */
const GOOD: Record<Format, ReadonlyArray<string>> = {
  "date-time": ["2024-02-29T23:59:59.999999Z", "2026-11-22T10:00:00+05:30", "2026-11-22T10:00:00-0800"],
  date: ["2024-02-29", "2026-12-31"]
}

/** Input names that say they hold a date or time; each must be documented with a date format. */
const LOOKS_LIKE_A_DATE = /(^|[a-z])(Date|Time|At)$|^(date|time|before|after|since|until|from|to)$/

/** Inputs named like a date that hold an id: the events' cursor is the last event's id (docs/contract.md 6). */
const ID_CURSORS: ReadonlySet<string> = new Set(["GET /api/v1/events query after"])

let server: RunningServer
let database: string
let doc: Json
let fields: Array<DateField>
let unformatted: Array<string>

beforeAll(async () => {
  database = await createDatabase()
  server = await startServer({
    DATABASE_URL: database,
    ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    ...NO_RATE_LIMITS
  })
  // One real account, so that account routes get past the account lookup and decode their input.
  const orgId = (await query<{ org_id: string }>(database, "SELECT org_id FROM orgs"))[0]!.org_id
  await insertAccount(database, orgId, PROJECT_ID)
  const answer = await call(`${server.api}/openapi.json`)
  expect(answer.status).toBe(200)
  if (!isRecord(answer.body)) throw new Error("openapi.json is not a JSON object")
  doc = (await SwaggerParser.dereference(structuredClone(answer.body) as unknown as ApiDocument)) as unknown as Json
  ;({ fields, unformatted } = dateFields(doc))
})

afterAll(async () => {
  await server?.stop()
})

/** The date format of a (dereferenced) schema, looking through `anyOf`/`oneOf` (nullable, unions). */
const formatOf = (schema: unknown): Format | undefined => {
  if (!isRecord(schema)) return undefined
  if (schema["format"] === "date" || schema["format"] === "date-time") return schema["format"]
  for (const union of ["anyOf", "oneOf", "allOf"] as const) {
    const branches = schema[union]
    if (Array.isArray(branches)) {
      for (const branch of branches) {
        const format = formatOf(branch)
        if (format !== undefined) return format
      }
    }
  }
  return undefined
}

/** Every property path of a body schema with its schema, through unions and array items (as `0`). */
const properties = (schema: unknown, at: ReadonlyArray<string> = []): Array<[ReadonlyArray<string>, unknown]> => {
  if (!isRecord(schema)) return []
  const out: Array<[ReadonlyArray<string>, unknown]> = []
  for (const union of ["anyOf", "oneOf", "allOf"] as const) {
    const branches = schema[union]
    if (Array.isArray(branches)) for (const branch of branches) out.push(...properties(branch, at))
  }
  if (isRecord(schema["properties"])) {
    for (const [name, property] of Object.entries(schema["properties"])) {
      out.push([[...at, name], property], ...properties(property, [...at, name]))
    }
  }
  if (schema["items"] !== undefined) out.push(...properties(schema["items"], [...at, "0"]))
  return out
}

const dateFields = (document: Json): { fields: Array<DateField>; unformatted: Array<string> } => {
  const found = new Map<string, DateField>()
  const suspicious: Array<string> = []
  const paths = isRecord(document["paths"]) ? document["paths"] : {}
  for (const [path, item] of Object.entries(paths)) {
    if (!isRecord(item)) continue
    for (const method of METHODS) {
      const operation = item[method]
      if (!isRecord(operation)) continue
      const operationId = String(operation["operationId"])
      const add = (where: DateField["in"], at: ReadonlyArray<string>, schema: unknown) => {
        const format = formatOf(schema)
        const name = at[at.length - 1] ?? ""
        if (format === undefined) {
          const input = `${method.toUpperCase()} ${path} ${where} ${at.join(".")}`
          if (LOOKS_LIKE_A_DATE.test(name) && !ID_CURSORS.has(input)) suspicious.push(input)
          return
        }
        const field: DateField = { method, path, operationId, in: where, at, format }
        found.set(label(field), field)
      }
      const parameters = Array.isArray(operation["parameters"]) ? operation["parameters"] : []
      for (const parameter of parameters) {
        if (!isRecord(parameter)) continue
        const where = parameter["in"]
        if (where === "query" || where === "path" || where === "header") add(where, [String(parameter["name"])], parameter["schema"])
      }
      const body = isRecord(operation["requestBody"]) && isRecord(operation["requestBody"]["content"])
        ? operation["requestBody"]["content"]["application/json"]
        : undefined
      if (isRecord(body)) for (const [at, schema] of properties(body["schema"])) add("body", at, schema)
    }
  }
  return { fields: [...found.values()], unformatted: suspicious }
}

/** The endpoint of an OpenAPI `operationId` (the endpoint's name, unique across groups) in the HttpApi declaration. */
const endpointOf = (operationId: string) => {
  const endpoint = operationEndpoints.get(operationId)
  if (endpoint === undefined) throw new Error(`no endpoint for operationId ${operationId}`)
  // The endpoints' schemas need no services; the generic endpoint type cannot say so.
  return { payloadSchema: endpoint.payloadSchema as Option.Option<Schema.Schema<unknown, unknown>> }
}

/** A valid wire body for the operation: generated from its payload schema (fixed seed), then encoded. */
const validBody = (operationId: string): unknown => {
  const schema = Option.getOrThrow(endpointOf(operationId).payloadSchema)
  const [value] = FastCheck.sample(Arbitrary.make(schema), { numRuns: 1, seed: 42 })
  return Schema.encodeSync(schema)(value)
}

/** `body` with `value` at `at`; arrays on the way are made to hold one element. */
const placed = (body: unknown, at: ReadonlyArray<string>, value: string): unknown => {
  const [head, ...rest] = at
  if (head === undefined) return value
  if (/^\d+$/.test(head)) {
    const items = Array.isArray(body) ? [...body] : []
    items[0] = placed(items[0] ?? {}, rest, value)
    return items.length === 0 ? [placed({}, rest, value)] : items
  }
  const object = isRecord(body) ? { ...body } : {}
  object[head] = placed(object[head], rest, value)
  return object
}

/** Sends one request with `value` in the field; every other input valid. */
const send = (field: DateField, value: string): Promise<Answer> => {
  const name = field.at[0] ?? ""
  let path = field.path.replace(/\{(\w+)\}/g, (_, param: string) => {
    if (field.in === "path" && param === name) return encodeURIComponent(value)
    return param === "projectId" ? PROJECT_ID : `${param}_x`
  })
  if (field.in === "query") path += `?${new URLSearchParams({ [name]: value }).toString()}`
  const hasBody = field.method !== "get" && field.method !== "delete"
  return call(`${server.baseUrl}${path}`, {
    method: field.method.toUpperCase(),
    key: BOOTSTRAP_KEY,
    ...(field.in === "header" ? { headers: { [name]: value } } : {}),
    ...(hasBody
      ? { body: field.in === "body" ? placed(validBody(field.operationId), field.at, value) : validBody(field.operationId) }
      : {})
  })
}

const messageOf = (answer: Answer): string =>
  isRecord(answer.body) && isRecord(answer.body["error"]) ? String(answer.body["error"]["message"]) : answer.text

/** A few requests at a time: the server is shared and the machine may be small. */
const inBatches = async <A, B>(items: ReadonlyArray<A>, size: number, run: (a: A) => Promise<B>): Promise<Array<B>> => {
  const out: Array<B> = []
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(run))))
  return out
}

describe("date and time inputs", () => {
  it("are found in the OpenAPI document, each with a date format", () => {
    expect(unformatted).toEqual([])
    const found = fields.map((field) => `${field.operationId} ${field.in} ${field.at.join(".")} ${field.format}`)
    // The ones known today; a new one joins the sweep by itself.
    expect(found).toEqual(expect.arrayContaining([
      "listActions query before date-time",
      "createKey body expiresAt date-time",
      "createAccountKey body expiresAt date-time",
      "runReport body startDate date",
      "runReport body endDate date"
    ]))
  })

  it("answer 400 invalid_request naming the field for impossible or malformed values, never 500", async () => {
    const cases = fields.flatMap((field) => BAD[field.format].map((value) => ({ field, value })))
    const answers = await inBatches(cases, 4, ({ field, value }) => send(field, value))
    const wrong = answers.flatMap((answer, i) => {
      const { field, value } = cases[i]!
      const name = field.in === "body" ? field.at.join(".") : field.at[0]!
      const ok = answer.status === 400 && errorCode(answer) === "invalid_request" && messageOf(answer).includes(name)
      return ok ? [] : [`${label(field)} = ${JSON.stringify(value)}: ${answer.status} ${messageOf(answer)}`]
    })
    expect(wrong).toEqual([])
  })

  it("accept real dates and times, microseconds and offsets included", async () => {
    const cases = fields.flatMap((field) => GOOD[field.format].map((value) => ({ field, value })))
    const answers = await inBatches(cases, 4, ({ field, value }) => send(field, value))
    const wrong = answers.flatMap((answer, i) => {
      const { field, value } = cases[i]!
      // The operation may refuse a real date for its own reasons (a key expiry in the past, a report
      // window in the future), but never as malformed, and never with a 500.
      const refusedAsDate = /not a real date|expected an ISO 8601|expected a date/.test(messageOf(answer))
      return answer.status < 500 && !refusedAsDate ? [] : [`${label(field)} = ${value}: ${answer.status} ${messageOf(answer)}`]
    })
    expect(wrong).toEqual([])
  })

  it("keep the ledger cursor's microseconds, whatever the offset", async () => {
    // Three rows one microsecond apart, written directly: the cursor must tell each from the next.
    const orgId = (await query<{ org_id: string }>(database, "SELECT org_id FROM orgs"))[0]!.org_id
    for (const micros of ["123455", "123456", "123457"]) {
      await query(
        database,
        `INSERT INTO actions (action_id, org_id, project_id, kind, status, risk_tier, summary, reason, payload, proposed_by, created_at)
         VALUES ($1, $2, $3, 'budget_change', 'rejected', 'review', 'cursor', 'cursor', '{}', $4, $5)`,
        [`act_us${micros}`, orgId, PROJECT_ID, JSON.stringify({ kind: "system", id: "test", name: "test" }), `2026-11-22T10:00:00.${micros}Z`]
      )
    }
    const page = async (params: Record<string, string>) => {
      const answer = await call(`${server.api}/accounts/${PROJECT_ID}/actions?${new URLSearchParams(params).toString()}`, { key: BOOTSTRAP_KEY })
      expect(answer.status).toBe(200)
      return Schema.decodeUnknownSync(ActionList)(answer.body)
    }
    const first = await page({ limit: "1" })
    expect(first.actions.map((a) => a.actionId)).toEqual(["act_us123457"])
    expect(first.nextBefore).toBe("2026-11-22T10:00:00.123457Z")
    const second = await page({ limit: "1", before: first.nextBefore! })
    expect(second.actions.map((a) => a.actionId)).toEqual(["act_us123456"])
    // The same instant written with an offset.
    const shifted = await page({ before: "2026-11-22T11:30:00.123456+01:30" })
    expect(shifted.actions.map((a) => a.actionId)).toEqual(["act_us123455"])
  })
})
