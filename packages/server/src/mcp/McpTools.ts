/**
 * The MCP tools, generated from the HttpApi declaration: one tool per authenticated endpoint, named
 * `platform_<snake_case operation>`, whose input schema merges the endpoint's path params, url params and
 * payload, derived from the same Effect Schemas REST decodes with. A tool call's arguments become the
 * operation's input (`{path, urlParams, payload, headers}`), decoded part by part with the endpoint's own
 * schemas as REST decodes a request, and McpServer calls the operation; a new endpoint is a new tool with
 * no code here.
 */
import { Api, unauthenticatedGroups } from "@acs/domain/Api"
import { type OperationName, Operations } from "@acs/domain/Operations"
import { HttpApi, type HttpApiEndpoint, HttpMethod, OpenApi } from "@effect/platform"
import { Context, Effect, Either, JSONSchema, Option, type ParseResult, Schema } from "effect"

/**
 * Operations kept off the tool server, though a key's scope allows them over REST. Keys and upstream
 * credentials move secrets and authority; the kill switch, the target band and the brief are the guardrails
 * people set for agents, and an agent must not move its own guardrails. Logout ends a session; /mcp takes
 * keys only.
 */
const HUMAN_ONLY: ReadonlySet<OperationName> = new Set<OperationName>([
  "createKey",
  "listKeys",
  "revokeKey",
  "createAccountKey",
  "updateConnection",
  "createConnectionKeyPair",
  "updateSettings",
  "updateTargets",
  "updateBrief",
  "logout"
])

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
  readonly additionalProperties: false
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
  /** Read scope (every GET and the read-only POSTs of SPEC 5): nothing on the account or in acs changes. */
  readonly readOnly: boolean
  readonly method: HttpMethod.HttpMethod
  /** The endpoint's path template, `/api/v1/accounts/:projectId/policy`. */
  readonly restPath: string
  /** The operation's input for the arguments, or the message of a 400 `invalid_request` naming the field. */
  readonly toInput: (args: Readonly<Record<string, unknown>>) => Either.Either<RawInput, string>
  /** The input decoded as REST decodes a request: path, payload, headers, then url params. */
  readonly decode: (input: RawInput) => Effect.Effect<unknown, ParseResult.ParseError>
  /** The operation's success as JSON, as REST answers it. */
  readonly encodeSuccess: (success: unknown) => Effect.Effect<unknown, ParseResult.ParseError>
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

const idempotencyKeySchema: JsonSchema = {
  type: "string",
  minLength: 1,
  maxLength: 255,
  description: "Optional Idempotency-Key (1–255 printable ASCII characters). Send the same key when you retry: the " +
    "original action is replayed (`replayed: true`) instead of a second change being proposed. Keys are kept 24 h."
}

const PROJECT_NOTE = "`projectId` is the account's projectId from platform_list_accounts, or `current` when your key " +
  "is bound to one account."

const KEY_PROPOSALS_NOTE = "Every change proposed with an API key is queued for a human decision, never auto-applied, " +
  "even when the safe-apply policy would clear it for a person. The answer (201) is " +
  "`{actionId, kind, mode, riskTier, policyReasons, summary}`: `mode` is a snapshot at proposal time (`auto_applied` or " +
  "`queued`), not the outcome; `policyReasons` says which rule forced review or cleared the action. Follow the action " +
  "with platform_get_action or platform_list_actions until it is `applied`, `failed` or `rejected`, and check its " +
  "`warnings`. A local validation failure is an error with `error.code` `validation_failed`, every reason in " +
  "`error.validation_errors` and the recorded ledger row in `error.action_id`."

/** The SPEC safe automation sequence, in tool names. */
export const SAFE_SEQUENCE = "Safe automation sequence: 1. check data freshness with platform_list_syncs; " +
  "2. check platform_get_policy (kill switch, remaining auto-applies); 3. read the suggested work with " +
  "platform_get_plan; 4. propose with a platform_propose_* tool, passing an `idempotencyKey`; " +
  "5. read `mode` and `policyReasons`, then poll platform_get_action / platform_list_actions for the terminal status; " +
  "6. check `warnings` on anything that reached `applied`."

/** What a model needs beyond the REST description, for the operations whose answer names REST paths. */
const TOOL_NOTES: Partial<Record<OperationName, string>> = {
  getPlan: "Over MCP, act on an item by calling platform_propose_<proposal.kind> with the projectId and the fields of " +
    "`proposal.body` (and an idempotencyKey)."
}

const accessNote = (operation: OperationName): string => {
  const op: (typeof Operations)[OperationName] = Operations[operation]
  const grant = "grant" in op ? " plus the canApprove grant" : ""
  const org = "orgLevel" in op ? "; org-level, refused for keys bound to one account" : ""
  return `Needs scope "${op.scope}"${grant}${org}. Counts against the ${op.bucket} rate limit.`
}

type Endpoint = HttpApiEndpoint.HttpApiEndpoint<string, HttpMethod.HttpMethod>

const describe = (
  operation: OperationName,
  endpoint: Endpoint,
  annotations: Context.Context<never>,
  hasProjectId: boolean,
  isProposal: boolean
): string => {
  const summary: string = Operations[operation].summary
  const detail = Option.getOrUndefined(Context.getOption(annotations, OpenApi.Description))
  return [
    `${summary}.`,
    isProposal ? KEY_PROPOSALS_NOTE : detail,
    TOOL_NOTES[operation],
    hasProjectId ? PROJECT_NOTE : undefined,
    accessNote(operation),
    "Errors come back as `{\"error\": {\"code\", \"message\", …}}` with isError set: branch on `error.code` " +
      "(429 rate_limited and 503 upstream_unavailable carry retry_after_ms).",
    isProposal ? SAFE_SEQUENCE : undefined,
    `REST: ${endpoint.method} ${endpoint.path.replace(/:(\w+)\??/g, "{$1}")}.`
  ].filter((line): line is string => line !== undefined && line.length > 0).join("\n\n")
}

const PATH_PARAM = /:(\w+)(\?)?/g

const toQueryValues = (value: unknown): ReadonlyArray<string> =>
  Array.isArray(value) ? value.flatMap(toQueryValues) : value === undefined || value === null ? [] :
  typeof value === "object" ? [JSON.stringify(value)] : [String(value)]

const makeTool = (operation: OperationName, endpoint: Endpoint, annotations: Context.Context<never>): McpTool => {
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

  const hasProjectId = "projectId" in properties
  const inputSchema: ToolInputSchema = {
    type: "object",
    properties,
    required: [...required],
    additionalProperties: false,
    ...(Object.keys(definitions).length > 0 ? { $defs: definitions } : {})
  }

  const toInput = (args: Readonly<Record<string, unknown>>): Either.Either<RawInput, string> => {
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

  return {
    name: toolName(operation),
    operation,
    title: Operations[operation].summary,
    description: describe(operation, endpoint, annotations, hasProjectId, isProposal),
    inputSchema,
    readOnly: Operations[operation].scope === "read",
    method: endpoint.method,
    restPath: endpoint.path,
    toInput,
    decode,
    encodeSuccess
  }
}

/** Every authenticated endpoint of the API that is an operation and not human-only, as a tool. */
export const makeTools = (): ReadonlyArray<McpTool> => {
  const tools: Array<McpTool> = []
  HttpApi.reflect(Api, {
    predicate: ({ group }) => !unauthenticatedGroups.includes(group.identifier),
    onGroup: () => undefined,
    onEndpoint: ({ endpoint, mergedAnnotations }) => {
      if (isOperation(endpoint.name) && !HUMAN_ONLY.has(endpoint.name)) tools.push(makeTool(endpoint.name, endpoint, mergedAnnotations))
    }
  })
  return tools
}

/** The read tool behind `GET /api/v1/accounts/{projectId}/<suffix>`, when the API has that endpoint. */
export const accountReadTool = (tools: ReadonlyArray<McpTool>, suffix: string): McpTool | undefined =>
  tools.find((tool) => tool.method === "GET" && tool.restPath === `/api/v1/accounts/:projectId/${suffix}`)
