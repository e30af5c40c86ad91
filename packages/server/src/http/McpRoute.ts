/**
 * `/mcp` over HTTP, in front of the API app: keys only (the cookie is not looked at, so a browser session
 * cannot drive the tools; a revoked or expired key is refused on its next request, before MCP parses
 * anything; the 401 names the OAuth metadata, http/OAuthRoute.ts), POST only, the body held to the same rules as REST's; then the MCP server (mcp/McpServer.ts).
 */
import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Operations, type OperationName } from "@acs/domain/Operations"
import { Effect, Either, Exit, Option } from "effect"
import { authenticateKey } from "../auth/KeyAuthentication.ts"
import { assumeBarrierPassed, speculatively } from "../db/Invalidation.ts"
import { Mcp, MCP_PATH } from "../mcp/McpServer.ts"
import { toolName } from "../mcp/McpTools.ts"
import { noteRequest } from "../telemetry/RequestFacts.ts"
import { envelopeResponse, toDeclaredError } from "./ErrorEnvelope.ts"
import { refusal } from "./FrontDoor.ts"
import { PROTECTED_RESOURCE_PATH } from "./OAuthRoute.ts"
import { makePublicOrigin } from "./PublicOrigin.ts"
import { type BodyRefusal, readJsonText } from "./RequestBody.ts"
import { pathOf } from "./RequestPath.ts"

const methodNotAllowed = HttpServerResponse.unsafeJson(
  { jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: this MCP server is stateless; POST only" }, id: null },
  { status: 405, headers: { allow: "POST" } }
)

/** The tools whose operation only reads (the read bucket). */
const readTools: ReadonlySet<string> = new Set(
  (Object.keys(Operations) as Array<OperationName>).filter((op) => Operations[op].bucket === "read").map(toolName)
)

/** True for a body that is one call of a read tool (nothing else: a batch, a list, a write). */
const callsReadTool = (body: string): boolean => {
  try {
    const message: unknown = JSON.parse(body)
    if (typeof message !== "object" || message === null || !("method" in message) || message.method !== "tools/call") return false
    const params = "params" in message ? message.params : undefined
    return typeof params === "object" && params !== null && "name" in params && typeof params.name === "string" && readTools.has(params.name)
  } catch {
    return false
  }
}

/** Stands for "this call must not run before the barrier": a speculative run stops there (see answerMcp). */
const NEEDS_BARRIER = Symbol("needs barrier")

/** A 401 names where a client finds how to get a token (RFC 9728 §5.1; docs/contract.md 5.5). */
const withResourceMetadata = (response: HttpServerResponse.HttpServerResponse) =>
  Effect.gen(function*() {
    const origin = (yield* makePublicOrigin)(yield* HttpServerRequest.HttpServerRequest)
    return HttpServerResponse.setHeader(
      response,
      "www-authenticate",
      `Bearer resource_metadata="${origin}${PROTECTED_RESOURCE_PATH}${MCP_PATH}"`
    )
  })

const answerMcp = Effect.gen(function*() {
  const mcp = yield* Mcp
  const request = yield* HttpServerRequest.HttpServerRequest
  const authorization = request.headers["authorization"]
  // The body is read once; a run made again (below) answers from the same text.
  let read: Either.Either<string, BodyRefusal> | undefined
  const body = Effect.suspend(() => read !== undefined ? Effect.succeed(read) : Effect.tap(Effect.either(readJsonText(request)), (b) => {
    read = b
  }))
  const run = (speculative: boolean) =>
    Effect.gen(function*() {
      const principal = yield* authenticateKey(authorization)
      yield* noteRequest({ principal })
      if (request.method !== "POST") return methodNotAllowed
      const text = yield* body
      if (Either.isLeft(text)) return refusal(text.left)
      if (speculative && !callsReadTool(text.right)) return NEEDS_BARRIER
      return yield* mcp.answer(principal, authorization ?? "", request.headers, text.right)
    })
  // A read tool's call runs while its cached lookups' barrier ping is in flight, as a REST read does
  // (db/Invalidation.ts `speculatively`); anything else waits for the barrier. When a change to the key or the
  // account committed before the request, the call is answered again and meets it.
  const { exit, settled } = yield* speculatively(run(true))
  if (settled) {
    if (Exit.isFailure(exit)) return yield* Effect.failCause(exit.cause)
    if (exit.value !== NEEDS_BARRIER) return exit.value
    // The lookups already served are as good as after the barrier: the run below needs no second ping.
    yield* assumeBarrierPassed
  }
  const answer = yield* run(false)
  return answer === NEEDS_BARRIER ? yield* Effect.dieMessage("mcp: a call left waiting for the barrier") : answer
}).pipe(
  Effect.catchAllCause((cause) =>
    toDeclaredError(cause).pipe(
      // None is an interruption only (the client went away): stay interrupted.
      Effect.flatMap(Option.match({
        onNone: () => Effect.interrupt,
        onSome: (e) => e._tag === "Unauthorized" ? withResourceMetadata(envelopeResponse(e)) : Effect.succeed(envelopeResponse(e))
      }))
    )
  ),
  Effect.withSpan("mcp.request")
)

export const withMcp = <E, R>(app: HttpApp.Default<E, R>) =>
  Effect.flatMap(
    HttpServerRequest.HttpServerRequest,
    (request): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | Effect.Effect.Context<typeof answerMcp>> =>
      pathOf(request.url) === MCP_PATH ? answerMcp : app
  )
