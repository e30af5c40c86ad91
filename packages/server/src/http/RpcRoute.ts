/**
 * `/rpc` over HTTP, in front of the API app: POST only, keys only. A refusal must be framed as the protocol
 * frames answers, which needs the request's id from its body: so an unauthenticated body is read only up to
 * 64 KiB (one request; its procedure then answers Unauthorized), an authenticated one up to 1 MiB like every
 * other. Then the RPC server (rpc/RpcServerLive.ts).
 */
import { RPC_PATH } from "@acs/domain/AcsClient"
import { NotFound } from "@acs/domain/Errors"
import { Operations } from "@acs/domain/Operations"
import { Headers, type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { RpcSerialization } from "@effect/rpc"
import { Effect, Option, Stream } from "effect"
import { authenticateKey } from "../auth/KeyAuthentication.ts"
import { answerRpc, CALLER_HEADER, callsStreamingProcedure, RpcAnswers } from "../rpc/RpcServerLive.ts"
import { noteRequest } from "../telemetry/RequestFacts.ts"
import { envelopeResponse, retryAfterSeconds } from "./ErrorEnvelope.ts"
import { refusal } from "./FrontDoor.ts"
import { MAX_BODY_BYTES, readJsonText } from "./RequestBody.ts"
import { pathOf } from "./RequestPath.ts"

const UNAUTHENTICATED_RPC_BYTES = 64 * 1024

/** The procedures a body calls (each request message's `tag`), for the request log; none when unreadable. */
const procedureNames = (body: string): Array<string> =>
  body.split("\n").flatMap((line) => {
    if (line.trim() === "") return []
    try {
      const message: unknown = JSON.parse(line)
      return typeof message === "object" && message !== null && "_tag" in message && message._tag === "Request" &&
          "tag" in message && typeof message.tag === "string"
        // A name the caller made up is logged as such, not repeated (it is theirs, of any length).
        ? [Object.hasOwn(Operations, message.tag) ? message.tag : "unknown"]
        : []
    } catch {
      return []
    }
  })

export const withRpc = <R>(api: HttpApp.Default<never, R>) =>
  Effect.flatMap(
    HttpServerRequest.HttpServerRequest,
    (request): Effect.Effect<HttpServerResponse.HttpServerResponse, Effect.Effect.Error<ReturnType<typeof answerRpcRequest>>, R | HttpServerRequest.HttpServerRequest | Effect.Effect.Context<ReturnType<typeof answerRpcRequest>>> =>
      pathOf(request.url) === RPC_PATH ? answerRpcRequest(request) : api
  )

const answerRpcRequest = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    // The protocol is POST only; anything else is no route, answered as the API answers one.
    if (request.method !== "POST") {
      return envelopeResponse(new NotFound({ message: `no route ${request.method} ${RPC_PATH}: RPC takes POST` }))
    }
    const authorization = request.headers["authorization"]
    // A key that cannot be checked now (the database is down) counts as none here; the procedure's own check answers.
    const principal = yield* Effect.option(Effect.sandbox(authenticateKey(authorization)))
    const body = yield* Effect.either(readJsonText(request, Option.isSome(principal) ? MAX_BODY_BYTES : UNAUTHENTICATED_RPC_BYTES))
    if (body._tag === "Left") return refusal(body.left)
    const procedures = procedureNames(body.right)
    yield* noteRequest({
      principal: Option.getOrUndefined(principal),
      rpc: procedures.join(","),
      // One procedure is one operation; a batch of several is no single one.
      operation: procedures.length === 1 && procedures[0] !== "unknown" ? procedures[0] : undefined
    })
    // A streaming procedure's answers are written as they come; its caller is authenticated by the middleware.
    if (callsStreamingProcedure(body.right)) {
      const answers = yield* RpcAnswers
      const encoder = new TextEncoder()
      return HttpServerResponse.stream(
        Stream.map(answers.stream(body.right, Headers.remove(request.headers, CALLER_HEADER)), (line) => encoder.encode(line)),
        { contentType: RpcSerialization.ndjson.contentType }
      )
    }
    const caller = authorization === undefined ? Option.none() : Option.map(principal, (p) => ({ authorization, principal: p }))
    const answered = yield* answerRpc(body.right, request.headers, caller)
    const response = HttpServerResponse.text(answered, { contentType: RpcSerialization.ndjson.contentType })
    const outage = outageOf(answered)
    // Every procedure met the outage: the HTTP answer says so too, for proxies and plain HTTP clients.
    return outage === undefined
      ? response
      : HttpServerResponse.setHeader(HttpServerResponse.setStatus(response, 503), "retry-after", retryAfterSeconds(outage))
  })

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/** The `retry_after_ms` of an answer that is an Exit failing with `DatabaseUnavailable`; undefined for any other. */
const unavailableRetry = (line: string): number | undefined => {
  const message: unknown = JSON.parse(line)
  if (!isRecord(message) || message["_tag"] !== "Exit" || !isRecord(message["exit"])) return undefined
  const cause = message["exit"]["cause"]
  if (!isRecord(cause) || cause["_tag"] !== "Fail" || !isRecord(cause["error"])) return undefined
  const error = cause["error"]
  return error["_tag"] === "DatabaseUnavailable" && typeof error["retry_after_ms"] === "number" ? error["retry_after_ms"] : undefined
}

/** When every answer of an RPC body is `DatabaseUnavailable`, its `retry_after_ms`; otherwise undefined. */
const outageOf = (answered: string): number | undefined => {
  // Answers are read only when one may be the outage's (the common answer never is).
  if (!answered.includes("\"DatabaseUnavailable\"")) return undefined
  let longest: number | undefined
  for (const line of answered.split("\n")) {
    if (line.length === 0) continue
    const retry = unavailableRetry(line)
    if (retry === undefined) return undefined
    longest = Math.max(longest ?? 0, retry)
  }
  return longest
}
