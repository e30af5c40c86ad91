/**
 * What a simulator handler returns or throws: an `Answer` (status, JSON body, headers) or a
 * `WireFailure`, rendered as the v5 error envelope. Shared by every route module.
 */
import { Either, ParseResult, Schema } from "effect"
import type { WireErrorItem } from "../Wire.ts"

export interface Answer {
  readonly status: number
  /** A JSON value, or a JsonText already written (sent as it is). */
  readonly body: unknown
  readonly headers?: Readonly<Record<string, string>>
  /** Why the simulator refused: kept in the call log, never sent. */
  readonly reason?: string
}

/**
 * A body already written as JSON (report pages: see SimulatorReportJson), sent as these UTF-8 bytes.
 * Anything that still needs it as a value (or stringifies it inside another) gets the parsed value.
 */
export class JsonText {
  constructor(readonly bytes: Buffer) {}

  toJSON(): unknown {
    return JSON.parse(this.bytes.toString("utf8"))
  }
}

/*
 * On this V8 (node 20), an object literal that spreads an object with keys and then adds keys of its own,
 * `{...headers, "content-length": n}`, takes a slow path costing microseconds each time; answers and requests
 * made on every call are built key by key instead.
 */

/** A fresh copy of `headers` (none: empty), to add headers to. */
export const copyHeaders = (headers: Readonly<Record<string, string>> | undefined): Record<string, string> => {
  const copy: Record<string, string> = {}
  if (headers !== undefined) for (const name of Object.keys(headers)) copy[name] = headers[name]!
  return copy
}

/** `{...answer, headers}`. */
export const withHeaders = (answer: Answer, headers: Readonly<Record<string, string>>): Answer =>
  "reason" in answer ? { status: answer.status, body: answer.body, headers, reason: answer.reason } : { status: answer.status, body: answer.body, headers }

/** The JSON bytes of an answer's body. */
export const bodyBytes = (body: unknown): Buffer => body instanceof JsonText ? body.bytes : Buffer.from(JSON.stringify(body))

/** A refused request: thrown by handlers, answered as `{data:null,pagination:null,error:{errors}}`. */
export class WireFailure extends Error {
  constructor(
    readonly status: number,
    readonly errors: ReadonlyArray<WireErrorItem>,
    readonly headers: Readonly<Record<string, string>> = {}
  ) {
    super(errors[0]?.message ?? `HTTP ${status}`)
  }
}

export const failure = (status: number, messageCode: string, message: string, field: string | null = null): WireFailure =>
  new WireFailure(status, [{ messageCode, message, field }])

export const notFound = (what: string): WireFailure => failure(404, "NOT_FOUND", `${what} not found`)

export const invalid = (message: string, field: string | null = null): WireFailure =>
  failure(400, "INVALID_INPUT", message, field)

export interface Pagination {
  readonly totalResults: number
  readonly startIndex: number
  readonly itemsPerPage: number
}

export const errorEnvelope = (errors: ReadonlyArray<WireErrorItem>) => ({ data: null, pagination: null, error: { errors } })

export const ok = (data: unknown, pagination: Pagination | null = null): Answer => ({
  status: 200,
  body: { data, pagination, error: null }
})

/** A bulk answer: HTTP 200 with the rows that worked in `data` and one error per failing row. */
export const bulkAnswer = (data: ReadonlyArray<unknown>, errors: ReadonlyArray<WireErrorItem>): Answer => ({
  status: 200,
  body: { data, pagination: null, error: errors.length === 0 ? null : { errors } }
})

export const DEFAULT_LIMIT = 20
export const MAX_LIMIT = 1000

export interface PageRequest {
  readonly offset: number
  readonly limit: number
}

const nonNegativeInt = (text: string | null, name: string, fallback: number): number => {
  if (text === null || text === "") return fallback
  if (!/^\d+$/.test(text)) throw invalid(`${name} must be a non-negative integer`, name)
  return Number(text)
}

/** `?limit=&offset=` of a GET list: limit defaults to 20, at most 1000. */
export const pageFromQuery = (query: URLSearchParams): PageRequest => {
  const limit = nonNegativeInt(query.get("limit"), "limit", DEFAULT_LIMIT)
  const offset = nonNegativeInt(query.get("offset"), "offset", 0)
  if (limit < 1 || limit > MAX_LIMIT) throw invalid(`limit must be between 1 and ${MAX_LIMIT}`, "limit")
  return { offset, limit }
}

export const pageOf = <A>(items: ReadonlyArray<A>, page: PageRequest): { readonly items: Array<A>; readonly pagination: Pagination } => {
  const slice = items.slice(page.offset, page.offset + page.limit)
  return { items: slice, pagination: { totalResults: items.length, startIndex: page.offset, itemsPerPage: slice.length } }
}

/**
 * Decodes a request body (or one bulk row) with a Schema; the first problem becomes a 400 whose
 * `field` is the path of the offending value, prefixed with `fieldPrefix`.
 */
export const decodeInput = <A, I>(schema: Schema.Schema<A, I>, value: unknown, fieldPrefix = ""): A => {
  const result = Schema.decodeUnknownEither(schema, { errors: "first" })(value)
  if (Either.isRight(result)) return result.right
  const issue = ParseResult.ArrayFormatter.formatErrorSync(result.left)[0]
  const path = issue?.path.map(String).join(".") ?? ""
  const field = [fieldPrefix, path].filter((part) => part !== "").join(".")
  throw invalid(issue?.message ?? "invalid input", field === "" ? null : field)
}
