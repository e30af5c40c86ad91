/**
 * The agent tool server at `/mcp`: MCP over Streamable HTTP, stateless (a fresh SDK server and transport
 * per POST, JSON answers, no session kept in memory, so any instance can answer any request). Every request
 * is authenticated by the same code as REST, with a Bearer key only, before MCP sees it (http/McpRoute.ts); every tool call
 * and resource read then checks access for its operation (as REST does, before its arguments are decoded)
 * and calls the operation's service method (operations/OperationHandlers.ts).
 */
import { type AcsError, InvalidRequest, NotFound, toEnvelope } from "@acs/domain/Errors"
import { type OperationName, Operations } from "@acs/domain/Operations"
import type { Principal } from "@acs/domain/Principal"
import { HttpServerResponse } from "@effect/platform"
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import {
  type CallToolResult,
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type Resource,
  SUPPORTED_PROTOCOL_VERSIONS
} from "@modelcontextprotocol/sdk/types.js"
import { Cause, Effect, Either, Option, type ParseResult, Runtime } from "effect"
import { callerRefusal } from "../auth/Access.ts"
import { toDeclaredError } from "../operations/Failures.ts"
import { type Caller, callerHere, makeOperate } from "../operations/Operate.ts"
import { OperationHandlers } from "../operations/OperationHandlers.ts"
import type { Input } from "../operations/OperationTypes.ts"
import { noteRequest } from "../telemetry/RequestFacts.ts"
import { accountReadTool, annotationsOf, makeTools, type McpTool, type RawInput, SAFE_SEQUENCE } from "./McpTools.ts"

export const MCP_PATH = "/mcp"

/** The account documents offered as resources, when the API has their GET endpoint. */
const ACCOUNT_RESOURCES = [
  {
    suffix: "policy",
    title: "Safe-apply policy",
    description: "The account's live safe-apply policy: kill switch, remaining auto-applies in the 24 h window, " +
      "the rule per kind and the hard caps. Read it before proposing."
  },
  {
    suffix: "brief",
    title: "Account brief",
    description: "The operator's goals and constraints for the account, written for agents. Read it before proposing."
  }
] as const

interface AccountResource {
  readonly suffix: string
  readonly title: string
  readonly description: string
  readonly tool: McpTool
}

const RESOURCE_URI = /^acs:\/\/accounts\/([^/]+)\/([a-z-]+)$/

const resourceUri = (projectId: string, suffix: string) => `acs://accounts/${encodeURIComponent(projectId)}/${suffix}`

/**
 * The guidance every tool shares, said once (tool descriptions say what is their own only): the key and what
 * it lists, projectId, proposals and idempotency, money, preview, errors, the safe sequence.
 */
const instructionsFor = (resources: ReadonlyArray<AccountResource>, tools: ReadonlyArray<McpTool>) =>
  [
    "acs, the Ad-Account Change Service: safe, reviewable changes to Apple Search Ads accounts. Every tool is one " +
    "REST operation of /api/v1 (named platform_<operation>) and is checked exactly like it: your key's scope, " +
    "canApprove grant, account reach, expiry and rate limits. The tool list is what your key may call.",
    "`projectId` is a projectId from platform_list_accounts, or `current` for a key bound to one account. Ids are " +
    "strings (a number is taken as its digits). Money is in integer micros of the account currency " +
    "(1000000 = 1 unit), always positive. `days` is the metrics window ending yesterday in the account's time zone " +
    "(default 30); `limit` is clamped to its bounds; `before` pages back from an answer's nextBefore. A proposal's " +
    "`reason` is kept in the ledger and shown to reviewers.",
    "Writes are proposals, never direct edits. Every change proposed with an API key is queued for a human " +
    "decision, never auto-applied: `mode` is a snapshot at proposal time (`auto_applied` or `queued`), not the " +
    "outcome, and `policyReasons` names the rule that forced review or cleared it. Pass an `idempotencyKey` to a " +
    "proposal: a retry with the same key replays the original action (`replayed: true`) instead of proposing " +
    "twice; keys are kept 24 h. A local validation failure is error.code validation_failed, with every reason in " +
    "error.validation_errors and the recorded ledger row in error.action_id.",
    tools.some((tool) => "preview" in tool.inputSchema.properties)
      ? "`preview: true` on a proposal is a dry run: it validates and says what would happen, records nothing, and " +
        "counts as a read."
      : "",
    SAFE_SEQUENCE,
    tools.some((tool) => tool.operation === "openChangeset")
      ? "Many related changes go as one changeset: platform_open_changeset; then propose with its `changesetId` " +
        "(nothing applies before the changeset is submitted; `dependsOn` names members of it that must apply first, " +
        "and a member whose dependency failed is skipped) or add many with platform_add_changeset_members; " +
        "platform_submit_changeset; a person approves the whole once, by its planHash; platform_get_changeset follows it " +
        "to its end."
      : "",
    `These count against the expensive rate limit: ${
      tools.filter((tool) => Operations[tool.operation].bucket === "expensive").map((tool) => tool.name).join(", ")
    }.`,
    "A refused call is a tool result with isError set and the body `{\"error\": {\"code\", \"message\", …}}`: branch " +
    "on error.code (forbidden_scope carries required_scope or required_grant; rate_limited and upstream_unavailable " +
    "carry retry_after_ms and are safe to retry after it; upstream_error is not).",
    resources.length > 0
      ? `Resources: ${resources.map((r) => `acs://accounts/{projectId}/${r.suffix} (${r.title.toLowerCase()})`).join(", ")}.`
      : ""
  ].filter((line) => line.length > 0).join("\n\n")

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** What a tool call answers: the operation's success as JSON, or the SPEC envelope of its error. */
type Answer = { readonly _tag: "Success"; readonly json: unknown } | { readonly _tag: "Failure"; readonly status: number; readonly body: unknown }

const failure = (error: AcsError): Answer => {
  const { body, status } = toEnvelope(error)
  return { _tag: "Failure", status, body }
}

/**
 * A success's `structuredContent` matches the tool's outputSchema. An error carries its envelope as text only:
 * clients validate any `structuredContent` against the outputSchema, error or not (a sync's own `error` field
 * would refuse the envelope's).
 */
const toolResult = (answer: Answer, tool?: McpTool): CallToolResult => {
  const body = answer._tag === "Success" ? answer.json : answer.body
  const text = body === undefined ? JSON.stringify({ status: 204 }) : JSON.stringify(body)
  const structuredContent = answer._tag === "Success" && tool !== undefined ? tool.structured(body) : undefined
  return {
    content: [{ type: "text", text }],
    ...(structuredContent === undefined ? {} : { structuredContent }),
    ...(answer._tag === "Success" ? {} : { isError: true })
  }
}

const errorResult = (error: InvalidRequest | NotFound): CallToolResult => toolResult(failure(error))

/** Runs a tool's operation for the caller: `call` answers a tool and its arguments (or its prepared input). */
type Call = (tool: McpTool, input: Either.Either<RawInput, string>, args: Readonly<Record<string, unknown>>) => Promise<Answer>

/** A tool call, by the tool's name, as the caller `call` runs operations for. */
const callTool = async (
  byName: ReadonlyMap<string, McpTool>,
  call: Call,
  name: string,
  args: Readonly<Record<string, unknown>>
): Promise<CallToolResult> => {
  const tool = byName.get(name)
  if (tool === undefined) return errorResult(new NotFound({ message: `no tool named ${name}` }))
  return toolResult(await call(tool, tool.toInput(args), args), tool)
}

/**
 * A POST that is one plain `tools/call` request, whose answer needs no SDK server: its id, tool name and
 * arguments. Anything else (a batch, a notification, another method, a protocol version or header the SDK
 * would refuse, params it would refuse) goes through the SDK server, which answers it as the protocol says.
 */
const plainToolCall = (
  headers: Readonly<Record<string, string | undefined>>,
  body: string
): { readonly id: string | number; readonly name: string; readonly args: Readonly<Record<string, unknown>> } | undefined => {
  const accept = headers["accept"] ?? ""
  const version = headers["mcp-protocol-version"]
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) return undefined
  if (!(headers["content-type"] ?? "").includes("application/json")) return undefined
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined
  let message: unknown
  try {
    message = JSON.parse(body)
  } catch {
    return undefined
  }
  if (!isObject(message) || message["jsonrpc"] !== "2.0" || message["method"] !== "tools/call") return undefined
  const id = message["id"]
  const params = message["params"]
  if ((typeof id !== "string" && (typeof id !== "number" || !Number.isInteger(id))) || !isObject(params)) return undefined
  const name = params["name"]
  const args = params["arguments"] ?? {}
  if (typeof name !== "string" || !isObject(args) || ("_meta" in params && params["_meta"] !== undefined)) return undefined
  if (Object.keys(message).some((key) => !["jsonrpc", "id", "method", "params"].includes(key))) return undefined
  return { id, name, args }
}

/**
 * One SDK server for one request; `call` runs a tool's operation as the request's caller. `listed` are the
 * tools the caller's key may call (`callerRefusal` finds nothing: scope, canApprove grant, org level); a call
 * to another still answers as REST would, with its refusal.
 */
const makeSdkServer = (
  listed: ReadonlyArray<McpTool>,
  byName: ReadonlyMap<string, McpTool>,
  resources: ReadonlyArray<AccountResource>,
  instructions: string,
  call: Call
) => {
  const server = new Server(
    { name: "acs", title: "acs — Ad-Account Change Service", version: "1.0.0" },
    { capabilities: { tools: {}, resources: {} }, instructions }
  )
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: listed.map((tool) => ({
      // No title: it is the description's first sentence, and the list's size is measured (test/mcp.test.ts).
      name: tool.name,
      description: tool.description,
      inputSchema: { ...tool.inputSchema, required: [...tool.inputSchema.required] },
      outputSchema: tool.outputSchema,
      annotations: annotationsOf(tool.hints)
    }))
  }))

  server.setRequestHandler(CallToolRequestSchema, (request) => callTool(byName, call, request.params.name, request.params.arguments ?? {}))

  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: resources.map((r) => ({
      uriTemplate: `acs://accounts/{projectId}/${r.suffix}`,
      name: r.suffix,
      title: r.title,
      description: r.description,
      mimeType: "application/json"
    }))
  }))

  // The accounts the caller reaches: every listed one, or (for a key bound to one account) `current`.
  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    const listAccounts = byName.get("platform_list_accounts")
    const listed = listAccounts === undefined ? undefined : await call(listAccounts, listAccounts.toInput({}), {})
    const body = listed?._tag === "Success" ? listed.json : undefined
    const projectIds = isObject(body) && Array.isArray(body["accounts"])
      ? body["accounts"].flatMap((a: unknown) => (isObject(a) && typeof a["projectId"] === "string" ? [a["projectId"]] : []))
      : ["current"]
    return {
      resources: projectIds.flatMap((projectId) =>
        resources.map((r): Resource => ({
          uri: resourceUri(projectId, r.suffix),
          name: `${r.suffix} of ${projectId}`,
          title: `${r.title} (${projectId})`,
          description: r.description,
          mimeType: "application/json"
        }))
      )
    }
  })

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const match = RESOURCE_URI.exec(request.params.uri)
    const resource = match === null ? undefined : resources.find((r) => r.suffix === match[2])
    if (match === null || resource === undefined) {
      throw new McpError(ErrorCode.InvalidParams, `unknown resource ${request.params.uri}`, toEnvelope(new NotFound({
        message: `unknown resource ${request.params.uri}`
      })).body)
    }
    const args = { projectId: decodeURIComponent(match[1]!) }
    const input = resource.tool.toInput(args)
    if (Either.isLeft(input)) {
      throw new McpError(ErrorCode.InvalidParams, input.left, toEnvelope(new InvalidRequest({ message: input.left })).body)
    }
    const answer = await call(resource.tool, input, args)
    if (answer._tag === "Failure") {
      // The SPEC envelope rides in the JSON-RPC error's `data`, so a client still branches on error.code.
      const envelope = answer.body
      const code = isObject(envelope) && isObject(envelope["error"]) ? String(envelope["error"]["code"]) : "internal"
      throw new McpError(ErrorCode.InvalidParams, `${code}: ${request.params.uri}`, envelope)
    }
    return { contents: [{ uri: request.params.uri, mimeType: "application/json", text: JSON.stringify(answer.json) }] }
  })

  return server
}

/** Headers the SDK transport reads; hop-by-hop and body-length headers stay with the outer request. */
const FORWARDED_HEADERS = ["accept", "content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id"] as const

/**
 * The MCP server: the answer to one POST of an authenticated key (http/McpRoute.ts authenticates and reads
 * the body). Every tool is its operation: access checked for the account its arguments name (a refused
 * caller learns nothing about malformed arguments), the arguments decoded with the endpoint's schemas, then
 * the operation's service method.
 */
const makeMcp = Effect.gen(function*() {
  const operate = yield* makeOperate
  const tools = makeTools()
  const resources = ACCOUNT_RESOURCES.flatMap((r): Array<AccountResource> => {
    const tool = accountReadTool(tools, r.suffix)
    return tool === undefined ? [] : [{ ...r, tool }]
  })
  const instructions = instructionsFor(resources, tools)
  const byName: ReadonlyMap<string, McpTool> = new Map(tools.map((tool) => [tool.name, tool]))

  /**
   * One tool call: its operation called with the tool's arguments as input (operations/Operate.ts `call`:
   * access first, then the arguments decoded with the endpoint's schemas), its success as REST answers it.
   * Arguments that are no input (an unknown field, a missing path param) are refused as a malformed input
   * is, after access; with no input, the account they name is the `projectId` argument.
   */
  const operation = (
    tool: McpTool,
    prepared: Either.Either<RawInput, string>,
    args: Readonly<Record<string, unknown>>,
    caller: Caller
  ) =>
    Either.match(prepared, {
      onLeft: (message) =>
        operate.call(tool.operation, { path: { projectId: args["projectId"] } }, caller, () => Effect.fail(new InvalidRequest({ message }))),
      // The tool's schemas are its endpoint's, so what they decode is the operation's input.
      onRight: (input) =>
        operate.call(tool.operation, input, caller, () => tool.decode(input) as Effect.Effect<Input<OperationName>, ParseResult.ParseError>)
    }).pipe(
      Effect.flatMap((success) => Effect.orDie(tool.encodeSuccess(success))),
      Effect.map((json): Answer => ({ _tag: "Success", json }))
    )

  const answer = (
    principal: Principal,
    authorization: string,
    requestHeaders: Readonly<Record<string, string | undefined>>,
    body: string
  ) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    // A call runs in a fiber of its own: its lookups (the account) rely on the barrier its request passed
    // when the route authenticated the key, instead of pinging again.
    const caller = yield* callerHere(principal)
    const call: Call = (tool, prepared, args) =>
      Runtime.runPromise(runtime)(
        noteRequest({ tool: tool.name, operation: tool.operation }).pipe(
          Effect.zipRight(operation(tool, prepared, args, caller)),
          Effect.catchAllCause((cause) =>
            toDeclaredError(cause).pipe(
              Effect.flatMap(Option.match({ onNone: () => Effect.failCause(Cause.stripFailures(cause)), onSome: (e) => Effect.succeed(failure(e)) }))
            )
          ),
          Effect.tap((answer) =>
            Effect.logInfo("mcp call").pipe(
              Effect.annotateLogs({ tool: tool.name, status: answer._tag === "Success" ? 200 : answer.status })
            )
          ),
          Effect.withSpan("mcp.call", { attributes: { tool: tool.name } })
        )
      )
    // The common case, one tool call, answered as the SDK would answer it without building an SDK server.
    const plain = plainToolCall(requestHeaders, body)
    if (plain !== undefined) {
      const result = yield* Effect.promise(() => callTool(byName, call, plain.name, plain.args))
      return HttpServerResponse.unsafeJson({ result, jsonrpc: "2.0", id: plain.id })
    }
    const headers = new Headers()
    for (const name of FORWARDED_HEADERS) {
      const value = requestHeaders[name]
      if (value !== undefined) headers.set(name, value)
    }
    const webRequest = new Request(new URL(MCP_PATH, "http://acs.internal"), { method: "POST", headers, body })
    const authInfo: AuthInfo = { token: authorization.slice("Bearer ".length), clientId: principal.id, scopes: [principal.scope] }
    const listed = tools.filter((tool) => Option.isNone(callerRefusal(principal, tool.operation)))
    const server = makeSdkServer(listed, byName, resources, instructions, call)
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
    const response = yield* Effect.acquireUseRelease(
      Effect.promise(() => server.connect(transport)),
      () => Effect.promise(() => transport.handleRequest(webRequest, { authInfo })),
      () => Effect.promise(() => server.close())
    )
    return HttpServerResponse.fromWeb(response)
  })

  return { answer } as const
})

export class Mcp extends Effect.Service<Mcp>()("acs/Mcp", {
  effect: makeMcp,
  dependencies: [OperationHandlers.Default]
}) {}
