/**
 * Runs one REST request through the API's own HttpApp in-process: the same Authentication middleware,
 * `Access.check`, rate-limit bucket, handler and error envelope as a request from the network, so a tool
 * and its endpoint cannot disagree. No socket, no second parse of our own port.
 */
import { HttpApp, type HttpMethod, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { envelopeResponse, toDeclaredError } from "./ErrorEnvelope.ts"

/** One REST request as the in-process surfaces make it: the caller's key is added by `callRest`. */
export interface RestCall {
  readonly method: HttpMethod.HttpMethod
  readonly url: string
  readonly body: string | undefined
  readonly idempotencyKey: string | undefined
}

export interface RestAnswer {
  readonly status: number
  readonly text: string
}

/** Only a host for `new Request`; the router matches on the path. */
const ORIGIN = "http://acs.internal"

export const callRest = <R>(api: HttpApp.Default<never, R>, call: RestCall, authorization: string) =>
  Effect.gen(function*() {
    const headers: Record<string, string> = { authorization }
    if (call.body !== undefined) headers["content-type"] = "application/json"
    if (call.idempotencyKey !== undefined) headers["idempotency-key"] = call.idempotencyKey
    const request = HttpServerRequest.fromWeb(
      new Request(new URL(call.url, ORIGIN), { method: call.method, headers, body: call.body ?? null })
    )
    const response = yield* api.pipe(
      Effect.provideService(HttpServerRequest.HttpServerRequest, request),
      // Headers the API adds on the way out (Location, RateLimit-*) belong to its own answer, not to the
      // /mcp or /rpc response around it: keep its pre-response handlers local to this call.
      Effect.locally(HttpApp.currentPreResponseHandlers, Option.none()),
      Effect.catchAllCause((cause) =>
        toDeclaredError(cause).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.failCause(cause), onSome: (e) => Effect.succeed(envelopeResponse(e)) }))
        )
      )
    )
    const text = yield* Effect.promise(() => HttpServerResponse.toWeb(response).text())
    return { status: response.status, text } satisfies RestAnswer
  })
