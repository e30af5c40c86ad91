/**
 * `/rpc` over HTTP, in front of the API app: POST only, keys only. A refusal must be framed as the protocol
 * frames answers, which needs the request's id from its body: so an unauthenticated body is read only up to
 * 64 KiB (one request; its procedure then answers Unauthorized), an authenticated one up to 1 MiB like every
 * other. Then the RPC server (rpc/RpcServerLive.ts).
 */
import { RPC_PATH } from "@acs/domain/AcsClient"
import { NotFound } from "@acs/domain/Errors"
import { Headers, type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { RpcSerialization } from "@effect/rpc"
import { Effect, Option, Stream } from "effect"
import { authenticateKey } from "../auth/KeyAuthentication.ts"
import { answerRpc, CALLER_HEADER, callsStreamingProcedure, RpcAnswers } from "../rpc/RpcServerLive.ts"
import { envelopeResponse } from "./ErrorEnvelope.ts"
import { refusal } from "./FrontDoor.ts"
import { MAX_BODY_BYTES, readJsonText } from "./RequestBody.ts"

const UNAUTHENTICATED_RPC_BYTES = 64 * 1024

export const withRpc = <R>(api: HttpApp.Default<never, R>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (request.url.split("?")[0] !== RPC_PATH) return yield* api
    // The protocol is POST only; anything else is no route, answered as the API answers one.
    if (request.method !== "POST") {
      return envelopeResponse(new NotFound({ message: `no route ${request.method} ${RPC_PATH}: RPC takes POST` }))
    }
    const authorization = request.headers["authorization"]
    const principal = yield* Effect.option(authenticateKey(authorization))
    const body = yield* Effect.either(readJsonText(request, Option.isSome(principal) ? MAX_BODY_BYTES : UNAUTHENTICATED_RPC_BYTES))
    if (body._tag === "Left") return refusal(body.left)
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
    return HttpServerResponse.text(yield* answerRpc(body.right, request.headers, caller), { contentType: RpcSerialization.ndjson.contentType })
  })
