/**
 * The MCP tools, generated from the HttpApi declaration: one tool per authenticated endpoint whose operation
 * the operation table's `mcp` column makes one (domain/src/ToolFacts.ts), named `platform_<snake_case operation>`, whose input
 * schema merges the endpoint's path params, url params and payload, derived from the same Effect Schemas REST
 * decodes with. A tool call's arguments become the operation's input (`{path, urlParams, payload, headers}`),
 * decoded part by part with the endpoint's own schemas as REST decodes a request, and McpServer calls the
 * operation; a new endpoint is a new tool with no code here, once its operation's `mcp` column says so. For a
 * model (docs/decisions/surfaces.md): every field described where its schema declares it, schemas without noise
 * and portable (MCP Inspector's rules), an outline of the answer as `outputSchema`, the hints from `hintsOf` the
 * MCP defaults do not say, numeric ids taken as strings; the rules all tools share are said once, in the server's
 * instructions (McpServer.ts).
 */
import { Api, unauthenticatedGroups } from "@acs/domain/Api"
import { type OperationName, Operations } from "@acs/domain/Operations"
import type { Tool, ToolFacts } from "@acs/domain/ToolFacts"
import { HttpApi, type HttpApiEndpoint, HttpMethod, OpenApi } from "@effect/platform"
import { Context, Effect, Either, JSONSchema, Option, type ParseResult, Schema } from "effect"

export const TOOL_PREFIX = "platform_"

/** `proposeBudgetChange` → `platform_propose_budget_change`. */
export const toolName = (operation: string): string =>
  TOOL_PREFIX + operation.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase()

type JsonSchema = JSONSchema.JsonSchema7
type Properties = Record<string, JsonSchema>

/** The tool input schema: one JSON object, with the shared definitions its properties refer to. */
export interface ToolInputSchema {
  readonly type: "object"
  readonly properties: Properties
  readonly required: ReadonlyArray<string>
  readonly $defs?: Record<string, JsonSchema>
  readonly [key: string]: unknown
}

/** A tool call's arguments as the operation's input, not yet decoded: path params and url params as text. */
export interface RawInput {
  readonly path?: Readonly<Record<string, string>>
  readonly urlParams?: Readonly<Record<string, string | ReadonlyArray<string>>>
  readonly payload?: unknown
  readonly headers?: Readonly<Record<string, string>>
}

/** One operation as a tool: its input schema for the model, and the way from arguments to its input. */
export interface McpTool {
  readonly name: string
  readonly operation: OperationName
  readonly title: string
  readonly description: string
  readonly inputSchema: ToolInputSchema
  /** The success as JSON Schema; a success that is not a JSON object is wrapped (see `structured`). */
  readonly outputSchema: ToolOutputSchema
  readonly hints: ToolHints
  readonly method: HttpMethod.HttpMethod
  /** The endpoint's path template, `/api/v1/accounts/:projectId/policy`. */
  readonly restPath: string
  /** The operation's input for the arguments, or the message of a 400 `invalid_request` naming the field. */
  readonly toInput: (args: Readonly<Record<string, unknown>>) => Either.Either<RawInput, string>
  /** The input decoded as REST decodes a request: path, payload, headers, then url params. */
  readonly decode: (input: RawInput) => Effect.Effect<unknown, ParseResult.ParseError>
  /** The operation's success as JSON, as REST answers it. */
  readonly encodeSuccess: (success: unknown) => Effect.Effect<unknown, ParseResult.ParseError>
  /** The success JSON as `structuredContent`, matching `outputSchema`. */
  readonly structured: (json: unknown) => Record<string, unknown>
}

/** The API's schemas need no services; the generic endpoint type cannot say so. */
type ContextFree = Schema.Schema<unknown, unknown, never>

const decoderOf = <A, I>(schema: Option.Option<Schema.Schema<A, I, never>>) =>
  Option.map(schema, (s) => (u: unknown) => Effect.map(Schema.decodeUnknown(s)(u), (a): unknown => a))

const isOperation = (name: string): name is OperationName => Object.hasOwn(Operations, name)

/** The JSON Schema of an AST with no top-level `$ref` (MCP clients refuse one); nested ones go to `$defs`. */
const jsonSchemaOf = <A, I, R>(schema: Schema.Schema<A, I, R>, definitions: Record<string, JsonSchema>): JsonSchema =>
  JSONSchema.fromAST(schema.ast, { definitions, topLevelReferenceStrategy: "skip" })

/**
 * URL params travel as strings (`days=30`), but a model should send `days: 30`: describe their decoded
 * side when it has a JSON Schema (the values are stringified again), else the encoded one.
 */
const urlParamsSchemaOf = <A, I, R>(schema: Schema.Schema<A, I, R>, definitions: Record<string, JsonSchema>): JsonSchema => {
  try {
    return jsonSchemaOf(Schema.typeSchema(schema), definitions)
  } catch {
    return jsonSchemaOf(schema, definitions)
  }
}

const objectParts = (schema: JsonSchema): { readonly properties: Properties; readonly required: ReadonlyArray<string> } | undefined => {
  if ("type" in schema && schema.type === "object" && "properties" in schema) {
    return { properties: schema.properties as Properties, required: schema.required ?? [] }
  }
  // An optional body (an object or null): a tool call always sends the object, its fields as arguments.
  if ("anyOf" in schema && schema.anyOf.length === 2 && schema.anyOf.some((s) => "type" in s && s.type === "null")) {
    const object = schema.anyOf.find((s) => !("type" in s && s.type === "null"))
    return object === undefined ? undefined : objectParts(object as JsonSchema)
  }
  return undefined
}

const IDEMPOTENCY_KEY = "idempotencyKey"

// The shared rules (projectId and `current`, idempotency keys, money, errors, the safe sequence) are said once,
// in the server's instructions (McpServer.ts); a tool's description and schema say what is its own only.
// The REST header `Idempotency-Key` as an argument: described here, where the tool gains it.
const idempotencyKeySchema: JsonSchema = {
  type: "string",
  minLength: 1,
  maxLength: 255,
  description: "A retry with it replays the first answer (24 h)"
}


/** The SPEC safe automation sequence, in tool names. */
export const SAFE_SEQUENCE = "Safe automation sequence: 1. check data freshness with platform_list_syncs; " +
  "2. check platform_get_policy (kill switch, remaining auto-applies); 3. read the suggested work with " +
  "platform_get_plan; 4. propose with a platform_propose_* tool, passing an `idempotencyKey`; " +
  "5. read `mode` and `policyReasons`, then poll platform_get_action / platform_list_actions for the terminal status; " +
  "6. check `warnings` on anything that reached `applied`."

export interface ToolHints {
  readonly readOnlyHint: boolean
  readonly destructiveHint: boolean
  readonly idempotentHint: boolean
  readonly openWorldHint: boolean
}

/** A tool's MCP annotations: its scope, and its `mcp` column of the operation table (domain/src/ToolFacts.ts says why each). */
export const hintsOf = (operation: OperationName, facts: Tool): ToolHints => {
  const readOnly = Operations[operation].scope === "read" || facts.readOnly === true
  return {
    readOnlyHint: readOnly,
    destructiveHint: !readOnly && facts.destructive === true,
    idempotentHint: readOnly || facts.idempotent === true,
    openWorldHint: facts.openWorld === true
  }
}

/**
 * The hints as `tools/list` sends them: what the MCP spec's defaults (readOnly false, destructive true,
 * idempotent false, open-world true) do not already say. destructiveHint and idempotentHint mean something only
 * for a tool that is not read-only, so a read-only tool sends readOnlyHint and openWorldHint.
 */
export const annotationsOf = (hints: ToolHints): Partial<ToolHints> =>
  hints.readOnlyHint
    ? { readOnlyHint: true, openWorldHint: hints.openWorldHint }
    : { destructiveHint: hints.destructiveHint, ...(hints.idempotentHint ? { idempotentHint: true } : {}), openWorldHint: hints.openWorldHint }

type Endpoint = HttpApiEndpoint.HttpApiEndpoint<string, HttpMethod.HttpMethod>

/** The summary, the endpoint's own description (not its group's), and what only this tool needs. */
const describe = (operation: OperationName, facts: Tool, endpoint: Endpoint, isProposal: boolean): string => {
  const summary: string = Operations[operation].summary
  // A proposal endpoint's description is about REST (Location, Idempotency-Replay, ?preview); the instructions
  // say what a proposal tool answers.
  const detail = isProposal ? undefined : Option.getOrUndefined(Context.getOption(endpoint.annotations, OpenApi.Description))
  return [
    `${summary}.`,
    facts.note ?? (detail === undefined || detail.replace(/\.$/, "") === summary ? undefined : detail)
  ].filter((line): line is string => line !== undefined && line.length > 0).join(" ")
}

/** Descriptions effect gives refinements and primitives (`an integer`, `a string at most 64 character(s) long`). */
const GENERIC_DESCRIPTION = /^(an? |non-|Integer|Number|String)/

/** Keywords that constrain what a caller sends; an output schema only needs the answer's shape. */
const INPUT_CONSTRAINTS = new Set(["minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
  "pattern", "minItems", "maxItems", "default", "required"])
/** An answer's top-level fields are described with their types; the objects inside them as objects only. */
const OUTPUT_DEPTH = 0
/**
 * Bounds a model never meets (an id's 64 characters, a 10^12 budget, 1000 list items; a `limit` is clamped
 * anyway) and a `false` default: noise in an input schema. The server still enforces the bounds, answering
 * `invalid_request` naming the field.
 */
const isNoiseBound = (key: string, value: unknown): boolean =>
  key === "minLength" || key === "maxLength" ||
  (typeof value === "number" && ((key === "maximum" && value >= 500) || (key === "maxItems" && value >= 1000))) ||
  (key === "default" && value === false) ||
  // Money is a positive integer (the instructions say so once), an offset is not negative.
  ((key === "exclusiveMinimum" || key === "minimum") && value === 0)

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * An answer's outline for a model: its top-level fields and their types (OUTPUT_DEPTH), the objects and lists
 * inside them as `object` and `array`; no enums, `required` or input constraints. Looser than the answer, never
 * stricter, so the client's validation of `structuredContent` against it cannot refuse a real answer.
 */
const outline = (node: unknown, depth: number, definitions: Readonly<Record<string, unknown>>): unknown => {
  if (!isRecord(node)) return node
  // A named schema inside the answer is outlined as what it is (an object, a string), never as `{}`.
  const ref = node["$ref"]
  if (typeof ref === "string" && depth > OUTPUT_DEPTH) {
    const target = definitions[ref.replace(/^#\/\$defs\//, "")]
    return target === undefined ? { type: "object" } : outline(target, depth, definitions)
  }
  const isObjectLike = node["type"] === "object" || "properties" in node ||
    (Array.isArray(node["anyOf"]) && node["anyOf"].every((m) => isRecord(m) && m["type"] === "object"))
  if (isObjectLike && depth > OUTPUT_DEPTH) return { type: "object" }
  // A union of objects (an answer or its preview) as one object: every field, required when all require it.
  const members = node["anyOf"]
  if (Array.isArray(members) && members.length > 1 && members.every((m) => isRecord(m) && m["type"] === "object")) {
    const records = members.filter(isRecord)
    const requiredOf = (m: Record<string, unknown>): ReadonlyArray<unknown> => Array.isArray(m["required"]) ? m["required"] : []
    const merged = {
      type: "object",
      required: requiredOf(records[0]!).filter((name) => records.every((m) => requiredOf(m).includes(name))),
      properties: Object.assign({}, ...records.map((m) => (isRecord(m["properties"]) ? m["properties"] : {})))
    }
    return outline(merged, depth, definitions)
  }
  const result: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if (INPUT_CONSTRAINTS.has(key)) continue
    // The values a field answers are in the input schemas and the tool that reads them; here, the type.
    if (key === "enum") {
      if (!("type" in node) && Array.isArray(value)) Object.assign(result, typeOfValues(value))
      continue
    }
    // A list is a list: what its items hold is for the tool that reads one of them.
    if (key === "items") continue
    if (key === "properties" && isRecord(value)) {
      result[key] = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, outline(schema, depth + 1, definitions)]))
    } else if (key === "anyOf" && Array.isArray(value)) {
      result[key] = value.map((m) => outline(m, depth, definitions))
    } else {
      result[key] = value
    }
  }
  return result
}

/** The JSON type of an enum's values, for an outline that drops the values: `string` for `["a", "b"]`. */
const typeOfValues = (values: ReadonlyArray<unknown>): Record<string, unknown> => {
  const types = new Set(values.map((v) => v === null ? "null" : Number.isInteger(v) ? "integer" : typeof v))
  const known = [...types].filter((t) => ["string", "integer", "number", "boolean", "null"].includes(t))
  if (known.length !== types.size) return {}
  return known.length === 1 ? { type: known[0]! } : { anyOf: known.map((type) => ({ type })) }
}

/**
 * A JSON Schema as a model should read it: no refinement titles (`maxLength(64)`, `int`; the constraint is a
 * keyword anyway), no effect's generic descriptions (`an integer`), no noise bounds, no `additionalProperties`
 * that is `false` or the default; a nullable stays `anyOf` with null (a `type` list is not portable). For an
 * output schema (`output`), no descriptions at all.
 */
const forModel = (node: unknown, output: boolean): unknown => {
  if (Array.isArray(node)) return node.map((item) => forModel(item, output))
  if (typeof node !== "object" || node === null) return node
  const result: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if (key === "title" || key === "$schema" || key === "$id") continue
    if (key === "description" && (output || typeof value !== "string" || GENERIC_DESCRIPTION.test(value))) continue
    // `false` is noise to a model (an unknown argument is refused anyway); `{}` (any value) is the default.
    if (key === "additionalProperties" && (value === false || (isRecord(value) && Object.keys(forModel(value, output) as object).length === 0))) continue
    if (!output && isNoiseBound(key, value)) continue
    // An enum says its type.
    if (key === "type" && value === "string" && Array.isArray((node as Record<string, unknown>)["enum"])) continue
    // `format: date-time` says what the pattern spells out.
    if (key === "pattern" && "format" in node) continue
    // Property names are keys, not schemas.
    result[key] = key === "properties" && isRecord(value)
      ? Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, forModel(schema, output)]))
      : forModel(value, output)
  }
  return hoistDescription(result)
}

/**
 * A nullable field (`anyOf: [X, null]`) described on its branch gets the description on the field itself, where
 * a model (and a client listing the arguments) reads it.
 */
const hoistDescription = (node: Record<string, unknown>): Record<string, unknown> => {
  const anyOf = node["anyOf"]
  if (!Array.isArray(anyOf) || "description" in node) return node
  const described = anyOf.filter((m) => isRecord(m) && typeof m["description"] === "string")
  if (described.length !== 1) return node
  const { description, ...branch } = described[0] as Record<string, unknown>
  return { ...node, description, anyOf: anyOf.map((m) => (m === described[0] ? branch : m)) }
}

/** The tool output schema: a JSON object at the top level, as MCP requires. */
export interface ToolOutputSchema {
  readonly type: "object"
  readonly [key: string]: unknown
}

/** The key a non-object success is wrapped under in `structuredContent` (MCP wants an object). */
const RESULT = "result"

const outputSchemaOf = (endpoint: Endpoint): { readonly schema: ToolOutputSchema; readonly wrapped: boolean } => {
  const definitions: Record<string, JsonSchema> = {}
  const schema = forModel(jsonSchemaOf(endpoint.successSchema, definitions), true)
  const json = outline(schema, 0, forModel(definitions, true) as Record<string, unknown>) as Record<string, unknown>
  const defs = JSON.stringify(json).includes("\"$ref\"") ? { $defs: forModel(definitions, true) } : {}
  if (json["type"] === "object") return { schema: { ...json, ...defs, type: "object" }, wrapped: false }
  // A union of objects (a proposal's answer or its preview) is still an object.
  const anyOf = json["anyOf"]
  if (Array.isArray(anyOf) && anyOf.every((member) => typeof member === "object" && member !== null && member.type === "object")) {
    return { schema: { ...json, ...defs, type: "object" }, wrapped: false }
  }
  return { schema: { type: "object", properties: { [RESULT]: json }, required: [RESULT], ...defs }, wrapped: true }
}

/** An id field (`campaignId`, `keywordIds`) a model may send as a number, where the schema wants a string. */
const ID_FIELD = /(^id|Id)s?$/

const wantsString = (schema: unknown): boolean =>
  typeof schema === "object" && schema !== null && (schema as { type?: unknown }).type === "string"

/** Numbers sent for string ids become their decimal text, in one value or in an array of them. */
const coerceId = (schema: unknown, value: unknown): unknown => {
  if (typeof value === "number" && Number.isSafeInteger(value) && wantsString(schema)) return String(value)
  if (Array.isArray(value) && typeof schema === "object" && schema !== null) {
    const items = (schema as { items?: unknown }).items
    return wantsString(items) ? value.map((item) => coerceId(items, item)) : value
  }
  return value
}

const PATH_PARAM = /:(\w+)(\?)?/g

const toQueryValues = (value: unknown): ReadonlyArray<string> =>
  Array.isArray(value) ? value.flatMap(toQueryValues) : value === undefined || value === null ? [] :
  typeof value === "object" ? [JSON.stringify(value)] : [String(value)]

const makeTool = (operation: OperationName, facts: Tool, endpoint: Endpoint): McpTool => {
  const definitions: Record<string, JsonSchema> = {}
  const properties: Properties = {}
  const required = new Set<string>()
  const add = (parts: { readonly properties: Properties; readonly required: ReadonlyArray<string> }) => {
    Object.assign(properties, parts.properties)
    parts.required.forEach((name) => required.add(name))
  }

  const pathKeys = Option.match(endpoint.pathSchema, {
    onNone: (): ReadonlyArray<string> => [],
    onSome: (schema) => {
      const parts = objectParts(jsonSchemaOf(schema, definitions))
      if (parts !== undefined) add(parts)
      return Object.keys(parts?.properties ?? {})
    }
  })
  const queryKeys = Option.match(endpoint.urlParamsSchema, {
    onNone: (): ReadonlyArray<string> => [],
    onSome: (schema) => {
      const parts = objectParts(urlParamsSchemaOf(schema, definitions))
      if (parts !== undefined) add(parts)
      return Object.keys(parts?.properties ?? {})
    }
  })
  const bodyAllowed = HttpMethod.hasBody(endpoint.method)
  // A payload that is not one object (a union, an array) is passed whole as `body`.
  const payload = Option.match(endpoint.payloadSchema, {
    onNone: () => ({ kind: "none" as const }),
    onSome: (schema) => {
      const json = bodyAllowed ? jsonSchemaOf(schema, definitions) : urlParamsSchemaOf(schema, definitions)
      const parts = objectParts(json)
      if (parts !== undefined) {
        add(parts)
        return { kind: "fields" as const, keys: Object.keys(parts.properties) as ReadonlyArray<string> }
      }
      add({ properties: { body: json }, required: ["body"] })
      return { kind: "whole" as const }
    }
  })
  const isProposal = Option.isSome(endpoint.headersSchema) && operation.startsWith("propose")
  if (isProposal) properties[IDEMPOTENCY_KEY] = idempotencyKeySchema

  // A `limit` out of its bounds is clamped, not refused (the instructions say so): its bounds are not the caller's.
  const limit = properties["limit"]
  if (limit !== undefined && "maximum" in limit) {
    const { maximum: _maximum, minimum: _minimum, ...rest } = limit
    properties["limit"] = rest
  }
  // Names first, schemas under them: a field named like a keyword (a changeset's `title`) is no keyword.
  const eachForModel = (schemas: Record<string, JsonSchema>) =>
    Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, forModel(schema, false) as JsonSchema]))
  const inputSchema: ToolInputSchema = {
    type: "object",
    properties: eachForModel(properties),
    required: [...required],
    ...(Object.keys(definitions).length > 0 ? { $defs: eachForModel(definitions) } : {})
  }

  const toInput = (raw: Readonly<Record<string, unknown>>): Either.Either<RawInput, string> => {
    const args = Object.fromEntries(
      Object.entries(raw).map(([name, value]) => [name, ID_FIELD.test(name) ? coerceId(properties[name], value) : value])
    )
    const missing: Array<string> = []
    const path: Record<string, string> = {}
    for (const [, name, optional] of endpoint.path.matchAll(PATH_PARAM)) {
      const value = args[name!]
      if (typeof value === "string" || typeof value === "number") path[name!] = String(value)
      else if (optional === undefined) missing.push(name!)
    }
    if (missing.length > 0) return Either.left(`invalid request: ${missing.join(", ")}: is missing`)

    const query = new Map<string, Array<string>>()
    const bodyFields: Record<string, unknown> = {}
    const payloadKeys: ReadonlyArray<string> = payload.kind === "fields" ? payload.keys : []
    for (const [name, value] of Object.entries(args)) {
      if (name === IDEMPOTENCY_KEY && isProposal) continue
      const inQuery = queryKeys.includes(name) || (!bodyAllowed && payloadKeys.includes(name))
      if (inQuery) query.set(name, [...(query.get(name) ?? []), ...toQueryValues(value)])
      else if (bodyAllowed && payloadKeys.includes(name)) bodyFields[name] = value
      else if (!pathKeys.includes(name) && !(payload.kind === "whole" && name === "body")) {
        // The same refusal REST gives an unknown body field, rather than a silently dropped argument.
        return Either.left(`invalid request: ${name}: is unexpected`)
      }
    }
    const urlParams: Record<string, string | ReadonlyArray<string>> = {}
    for (const [name, values] of query) urlParams[name] = values.length === 1 ? values[0]! : values
    const idempotencyKey = args[IDEMPOTENCY_KEY]
    // A GET's payload is its query, as REST reads it.
    const payloadValue = payload.kind === "none"
      ? undefined
      : !bodyAllowed
      ? Object.fromEntries(payloadKeys.flatMap((name) => (name in urlParams ? [[name, urlParams[name]]] : [])))
      : payload.kind === "whole"
      ? args["body"] ?? null
      : bodyFields
    return Either.right({
      path,
      urlParams,
      ...(payloadValue === undefined ? {} : { payload: payloadValue }),
      headers: isProposal && typeof idempotencyKey === "string" ? { "idempotency-key": idempotencyKey } : {}
    })
  }

  const decodePath = decoderOf(endpoint.pathSchema)
  const decodePayload = decoderOf(endpoint.payloadSchema)
  const decodeHeaders = decoderOf(endpoint.headersSchema)
  const decodeUrlParams = decoderOf(endpoint.urlParamsSchema)
  const decode = (input: RawInput) =>
    Effect.gen(function*() {
      const decoded: Record<string, unknown> = {}
      if (Option.isSome(decodePath)) decoded["path"] = yield* decodePath.value(input.path ?? {})
      if (Option.isSome(decodePayload)) decoded["payload"] = yield* decodePayload.value(input.payload)
      if (Option.isSome(decodeHeaders)) decoded["headers"] = yield* decodeHeaders.value(input.headers ?? {})
      if (Option.isSome(decodeUrlParams)) decoded["urlParams"] = yield* decodeUrlParams.value(input.urlParams ?? {})
      return decoded
    })
  const encodeSuccess = Schema.encodeUnknown(endpoint.successSchema as ContextFree)
  const output = outputSchemaOf(endpoint)
  const structured = (json: unknown): Record<string, unknown> =>
    output.wrapped || typeof json !== "object" || json === null || Array.isArray(json)
      ? { [RESULT]: json ?? null }
      : json as Record<string, unknown>

  return {
    name: toolName(operation),
    operation,
    title: Operations[operation].summary,
    description: describe(operation, facts, endpoint, isProposal),
    inputSchema,
    outputSchema: output.schema,
    hints: hintsOf(operation, facts),
    method: endpoint.method,
    restPath: endpoint.path,
    toInput,
    decode,
    encodeSuccess,
    structured
  }
}

/** Every authenticated endpoint of the API whose operation is a tool (its `mcp` column), as one. */
export const makeTools = (): ReadonlyArray<McpTool> => {
  const tools: Array<McpTool> = []
  HttpApi.reflect(Api, {
    predicate: ({ group }) => !unauthenticatedGroups.includes(group.identifier),
    onGroup: () => undefined,
    onEndpoint: ({ endpoint }) => {
      if (!isOperation(endpoint.name)) return
      const facts: ToolFacts = Operations[endpoint.name].mcp
      if (facts.tool) tools.push(makeTool(endpoint.name, facts, endpoint))
    }
  })
  return tools
}

/** The read tool behind `GET /api/v1/accounts/{projectId}/<suffix>`, when the API has that endpoint. */
export const accountReadTool = (tools: ReadonlyArray<McpTool>, suffix: string): McpTool | undefined =>
  tools.find((tool) => tool.method === "GET" && tool.restPath === `/api/v1/accounts/:projectId/${suffix}`)
