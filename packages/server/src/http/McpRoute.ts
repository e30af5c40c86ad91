/**
 * `/mcp` over HTTP, in front of the API app: keys only (the cookie is not looked at, so a browser session
 * cannot drive the tools; a revoked or expired key is refused on its next request, before MCP parses
 * anything), POST only, the body held to the same rules as REST's; then the MCP server (mcp/McpServer.ts).
 */
import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either, Option } from "effect"
import { authenticateKey } from "../auth/KeyAuthentication.ts"
import { Mcp, MCP_PATH } from "../mcp/McpServer.ts"
import { noteRequest } from "../telemetry/RequestFacts.ts"
import { envelopeResponse, toDeclaredError } from "./ErrorEnvelope.ts"
import { refusal } from "./FrontDoor.ts"
import { readJsonText } from "./RequestBody.ts"

const methodNotAllowed = HttpServerResponse.unsafeJson(
  { jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: this MCP server is stateless; POST only" }, id: null },
  { status: 405, headers: { allow: "POST" } }
)

const answerMcp = Effect.gen(function*() {
  const mcp = yield* Mcp
  const request = yield* HttpServerRequest.HttpServerRequest
  const authorization = request.headers["authorization"]
  const principal = yield* authenticateKey(authorization)
  yield* noteRequest({ principal })
  if (request.method !== "POST") return methodNotAllowed
  const body = yield* Effect.either(readJsonText(request))
  if (Either.isLeft(body)) return refusal(body.left)
  return yield* mcp.answer(principal, authorization ?? "", request.headers, body.right)
}).pipe(
  Effect.catchAllCause((cause) =>
    toDeclaredError(cause).pipe(
      // None is an interruption only (the client went away): stay interrupted.
      Effect.flatMap(Option.match({ onNone: () => Effect.interrupt, onSome: (e) => Effect.succeed(envelopeResponse(e)) }))
    )
  ),
  Effect.withSpan("mcp.request")
)

export const withMcp = <E, R>(app: HttpApp.Default<E, R>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    return request.url.split("?")[0] === MCP_PATH ? yield* answerMcp : yield* app
  })
