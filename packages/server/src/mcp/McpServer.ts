/**
 * The agent tool server at `/mcp`: MCP over Streamable HTTP, stateless (a fresh SDK server and transport
 * per POST, JSON answers, no session kept in memory, so any instance can answer any request). Every request
 * is authenticated by the same code as REST, with a Bearer key only, before MCP sees it; every tool call
 * and resource read then runs its REST endpoint in-process with the caller's Authorization header.
 */
import { InvalidRequest, NotFound, toEnvelope } from "@acs/domain/Errors"
import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
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
  type Resource
} from "@modelcontextprotocol/sdk/types.js"
import { Effect, Either, Option, Runtime } from "effect"
import { authenticateKey } from "../http/AuthenticationLive.ts"
import { checkKeyAccess, refusal } from "../http/FrontDoor.ts"
import { readJsonBody } from "../http/RequestBody.ts"
import { envelopeResponse, toDeclaredError } from "../http/ErrorEnvelope.ts"
import { callRest, type RestAnswer, type RestCall } from "../http/InProcessRest.ts"
import { accountReadTool, makeTools, type McpTool, SAFE_SEQUENCE } from "./McpTools.ts"

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

const instructionsFor = (resources: ReadonlyArray<AccountResource>) =>
  [
    "acs, the Ad-Account Change Service: safe, reviewable changes to Apple Search Ads accounts. Every tool is one " +
    "REST operation of /api/v1 (named platform_<operation>) and is checked exactly like it: your key's scope, " +
    "canApprove grant, account reach, expiry and rate limits.",
    "Writes are proposals, never direct edits. Every change proposed with an API key is queued for a human " +
    "decision: `mode` is a snapshot at proposal time (`auto_applied` or `queued`) and `policyReasons` names the rule " +
    "that forced review or cleared it. `projectId` is a projectId from platform_list_accounts, or `current` for a " +
    "key bound to one account.",
    SAFE_SEQUENCE,
    "A refused call is a tool result with isError set and the body `{\"error\": {\"code\", \"message\", …}}`: branch " +
    "on error.code (forbidden_scope carries required_scope or required_grant; rate_limited and upstream_unavailable " +
    "carry retry_after_ms and are safe to retry after it; upstream_error is not).",
    resources.length > 0
      ? `Resources: ${resources.map((r) => `acs://accounts/{projectId}/${r.suffix} (${r.title.toLowerCase()})`).join(", ")}.`
      : ""
  ].filter((line) => line.length > 0).join("\n\n")

const parseJson = (text: string): unknown => {
  try {
    return text.length > 0 ? JSON.parse(text) : undefined
  } catch {
    return text
  }
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const envelopeOf = (error: InvalidRequest | NotFound) => toEnvelope(error).body

const toolResult = (answer: RestAnswer): CallToolResult => {
  const body = parseJson(answer.text)
  const ok = answer.status >= 200 && answer.status < 300
  return {
    content: [{ type: "text", text: answer.text.length > 0 ? answer.text : JSON.stringify({ status: answer.status }) }],
    ...(isObject(body) ? { structuredContent: body } : {}),
    ...(ok ? {} : { isError: true })
  }
}

const errorResult = (error: InvalidRequest | NotFound): CallToolResult => {
  const body = envelopeOf(error)
  return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body as Record<string, unknown>, isError: true }
}

/**
 * One SDK server for one request; `rest` runs a REST call as the caller named by `authInfo`, and `refusal`
 * tells whether that caller may use a tool at all (the answer to malformed arguments from a caller who may not).
 */
const makeSdkServer = (
  tools: ReadonlyArray<McpTool>,
  resources: ReadonlyArray<AccountResource>,
  instructions: string,
  rest: (call: RestCall, authInfo: AuthInfo | undefined) => Promise<RestAnswer>,
  accessRefusal: (tool: McpTool, args: Readonly<Record<string, unknown>>) => Promise<RestAnswer | undefined>
) => {
  const server = new Server(
    { name: "acs", title: "acs — Ad-Account Change Service", version: "1.0.0" },
    { capabilities: { tools: {}, resources: {} }, instructions }
  )
  const byName = new Map(tools.map((tool) => [tool.name, tool]))

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: tools.map((tool) => ({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: { ...tool.inputSchema, required: [...tool.inputSchema.required] },
      annotations: { title: tool.title, readOnlyHint: tool.readOnly }
    }))
  }))

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = byName.get(request.params.name)
    if (tool === undefined) return errorResult(new NotFound({ message: `no tool named ${request.params.name}` }))
    const args = request.params.arguments ?? {}
    const call = tool.toRestCall(args)
    if (Either.isLeft(call)) {
      const refused = await accessRefusal(tool, args)
      return refused !== undefined ? toolResult(refused) : errorResult(new InvalidRequest({ message: call.left }))
    }
    return toolResult(await rest(call.right, extra.authInfo))
  })

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
  server.setRequestHandler(ListResourcesRequestSchema, async (_request, extra) => {
    const listAccounts = byName.get("platform_list_accounts")?.toRestCall({})
    const listed = listAccounts !== undefined && Either.isRight(listAccounts) ? await rest(listAccounts.right, extra.authInfo) : undefined
    const body = listed?.status === 200 ? parseJson(listed.text) : undefined
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

  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const match = RESOURCE_URI.exec(request.params.uri)
    const resource = match === null ? undefined : resources.find((r) => r.suffix === match[2])
    if (match === null || resource === undefined) {
      throw new McpError(ErrorCode.InvalidParams, `unknown resource ${request.params.uri}`, envelopeOf(new NotFound({
        message: `unknown resource ${request.params.uri}`
      })))
    }
    const call = resource.tool.toRestCall({ projectId: decodeURIComponent(match[1]!) })
    if (Either.isLeft(call)) throw new McpError(ErrorCode.InvalidParams, call.left, envelopeOf(new InvalidRequest({ message: call.left })))
    const answer = await rest(call.right, extra.authInfo)
    if (answer.status !== 200) {
      // The SPEC envelope rides in the JSON-RPC error's `data`, so a client still branches on error.code.
      const envelope = parseJson(answer.text)
      const code = isObject(envelope) && isObject(envelope["error"]) ? String(envelope["error"]["code"]) : "internal"
      throw new McpError(ErrorCode.InvalidParams, `${code}: ${request.params.uri}`, envelope)
    }
    return { contents: [{ uri: request.params.uri, mimeType: "application/json", text: answer.text }] }
  })

  return server
}

const methodNotAllowed = HttpServerResponse.unsafeJson(
  { jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: this MCP server is stateless; POST only" }, id: null },
  { status: 405, headers: { allow: "POST" } }
)

/** Headers the SDK transport reads; hop-by-hop and body-length headers stay with the outer request. */
const FORWARDED_HEADERS = ["accept", "content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id"] as const

/**
 * Serves `/mcp` in front of the API's HttpApp, which it calls for every tool. Wraps the API app (rather than
 * being a route of its router) because a tool needs the whole, finished app: its middleware included.
 */
export const withMcp = <R>(api: HttpApp.Default<never, R>) => {
  const tools = makeTools()
  const resources = ACCOUNT_RESOURCES.flatMap((r): Array<AccountResource> => {
    const tool = accountReadTool(tools, r.suffix)
    return tool === undefined ? [] : [{ ...r, tool }]
  })
  const instructions = instructionsFor(resources)

  const handle = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    // Keys only: the cookie is not looked at, so a browser session cannot drive the tools. A revoked or
    // expired key is refused here, on its next request, before MCP parses anything.
    const authorization = request.headers["authorization"]
    const principal = yield* authenticateKey(authorization)
    if (request.method !== "POST") return methodNotAllowed
    const admitted = yield* Effect.either(readJsonBody(request))
    if (Either.isLeft(admitted)) return refusal(admitted.left)
    const body = yield* admitted.right.text
    const runtime = yield* Effect.runtime<R | Effect.Effect.Context<ReturnType<typeof checkKeyAccess>>>()
    const rest = (call: RestCall, authInfo: AuthInfo | undefined) =>
      Runtime.runPromise(runtime)(
        callRest(api, call, `Bearer ${authInfo?.token ?? ""}`).pipe(
          Effect.tap((answer) =>
            Effect.logInfo("mcp call").pipe(Effect.annotateLogs({ method: call.method, path: call.url.split("?")[0], status: answer.status }))
          ),
          Effect.withSpan("mcp.call", { attributes: { path: call.url.split("?")[0] } })
        )
      )
    const accessRefusal = (tool: McpTool, args: Readonly<Record<string, unknown>>) =>
      Runtime.runPromise(runtime)(
        checkKeyAccess(authorization, tool.operation, args["projectId"]).pipe(
          Effect.as(undefined),
          Effect.catchAll((error) => {
            const { body, status } = toEnvelope(error)
            return Effect.succeed<RestAnswer>({ status, text: JSON.stringify(body) })
          })
        )
      )
    const headers = new Headers()
    for (const name of FORWARDED_HEADERS) {
      const value = request.headers[name]
      if (value !== undefined) headers.set(name, value)
    }
    const webRequest = new Request(new URL(MCP_PATH, "http://acs.internal"), { method: "POST", headers, body })
    const authInfo: AuthInfo = { token: authorization!.slice("Bearer ".length), clientId: principal.id, scopes: [principal.scope] }
    const server = makeSdkServer(tools, resources, instructions, rest, accessRefusal)
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
    const response = yield* Effect.acquireUseRelease(
      Effect.promise(() => server.connect(transport)),
      () => Effect.promise(() => transport.handleRequest(webRequest, { authInfo })),
      () => Effect.promise(() => server.close())
    )
    return HttpServerResponse.fromWeb(response)
  }).pipe(
    Effect.catchAllCause((cause) =>
      toDeclaredError(cause).pipe(
        // None is an interruption only (the client went away): stay interrupted.
        Effect.flatMap(Option.match({ onNone: () => Effect.interrupt, onSome: (e) => Effect.succeed(envelopeResponse(e)) }))
      )
    ),
    Effect.withSpan("mcp.request")
  )

  return Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    return request.url.split("?")[0] === MCP_PATH ? yield* handle : yield* api
  })
}
