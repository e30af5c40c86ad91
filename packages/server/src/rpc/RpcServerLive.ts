/**
 * The typed RPC surface at `/rpc` (@effect/rpc over HTTP, NDJSON): one procedure per operation
 * (packages/domain/src/Rpcs.ts). Each procedure runs its REST endpoint in-process with the caller's
 * Authorization header — the same authentication, `Access.check`, rate-limit bucket, handler and errors as
 * REST — and answers with the endpoint's success value or the SPEC error class.
 */
import { AcsErrorSchema, operationEndpoints, operationRpcGroup } from "@acs/domain/Rpcs"
import { RPC_PATH } from "@acs/domain/AcsClient"
import { type AcsError, ErrorBodies, Internal, NotFound } from "@acs/domain/Errors"
import { type HttpApiEndpoint, type HttpApp, HttpServerRequest } from "@effect/platform"
import { Rpc, RpcGroup, RpcSerialization, RpcServer } from "@effect/rpc"
import { Context, Deferred, Effect, Layer, Option, ParseResult, Schema, type Scope } from "effect"
import type { OperationName } from "@acs/domain/Operations"
import { authenticateKey } from "../http/AuthenticationLive.ts"
import { envelopeResponse, fromParseError } from "../http/ErrorEnvelope.ts"
import { checkKeyAccess, refusal } from "../http/FrontDoor.ts"
import { callRest, type RestCall } from "../http/InProcessRest.ts"
import { MAX_BODY_BYTES, readJsonBody } from "../http/RequestBody.ts"

/**
 * The finished REST app the procedures dispatch into. It exists only once the server has composed it (the
 * RPC route wraps it), so the procedures wait for it here.
 */
export class RestApp extends Context.Tag("acs/RestApp")<RestApp, {
  readonly provide: (api: HttpApp.Default) => Effect.Effect<void>
  readonly app: Effect.Effect<HttpApp.Default>
}>() {
  static readonly Live = Layer.effect(
    RestApp,
    Effect.map(Deferred.make<HttpApp.Default>(), (ready) => ({
      provide: (api) => Deferred.succeed(ready, api).pipe(Effect.asVoid),
      app: Deferred.await(ready)
    }))
  )
}

const ErrorEnvelope = Schema.Union(...Object.values(ErrorBodies))
const decodeError = Schema.decodeUnknown(ErrorEnvelope)

/** The REST request a procedure's input stands for: path params in the path, url params in the query. */
const toRestCall = (endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps, input: Record<string, unknown>) =>
  Effect.gen(function*() {
    // The endpoints' schemas need no services; the generic endpoint type cannot say so.
    const encode = (schema: Option.Option<Schema.Schema<unknown, unknown, never>>, value: unknown) =>
      Option.match(schema, {
        onNone: () => Effect.succeed(undefined),
        // A part left out has only optional fields: it is the empty object.
        onSome: (s) => Schema.encodeUnknown(s)(value ?? {})
      })
    const path = (yield* encode(endpoint.pathSchema as Option.Option<Schema.Schema<unknown, unknown, never>>, input["path"])) as
      | Record<string, string>
      | undefined
    const query = (yield* encode(endpoint.urlParamsSchema as Option.Option<Schema.Schema<unknown, unknown, never>>, input["urlParams"])) as
      | Record<string, string | undefined>
      | undefined
    const body = yield* encode(endpoint.payloadSchema as Option.Option<Schema.Schema<unknown, unknown, never>>, input["payload"])
    const headers = input["headers"] as Record<string, string | undefined> | undefined
    const search = new URLSearchParams()
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) search.set(name, value)
    const url = endpoint.path.replace(/:(\w+)/g, (_match, name: string) => encodeURIComponent(path?.[name] ?? ""))
    const call: RestCall = {
      method: endpoint.method,
      url: search.size === 0 ? url : `${url}?${search.toString()}`,
      body: body === undefined ? undefined : JSON.stringify(body),
      idempotencyKey: headers?.["idempotency-key"]
    }
    return call
  })

/** One procedure: the REST call, then the endpoint's success decoded, or its envelope as the error class. */
const dispatch = (operation: string, input: Record<string, unknown>, authorization: string) =>
  Effect.gen(function*() {
    const endpoint = operationEndpoints.get(operation)
    if (endpoint === undefined) return yield* Effect.dieMessage(`no endpoint for operation ${operation}`)
    const restApp = yield* RestApp
    const api = yield* restApp.app
    // The input was decoded by the RPC server with the endpoint's own schemas, so encoding it cannot fail.
    const call = yield* toRestCall(endpoint, input).pipe(Effect.orDie)
    const answer = yield* callRest(api, call, authorization)
    const json: unknown = answer.text.length === 0 ? undefined : JSON.parse(answer.text)
    if (answer.status >= 200 && answer.status < 300) {
      return yield* Schema.decodeUnknown(endpoint.successSchema as Schema.Schema<unknown, unknown, never>)(json).pipe(Effect.orDie)
    }
    const error: AcsError = yield* decodeError(json).pipe(
      Effect.catchAll((parseError) =>
        Effect.succeed(new Internal({ message: `unexpected answer ${answer.status}: ${ParseResult.TreeFormatter.formatErrorSync(parseError)}` }))
      )
    )
    return yield* Effect.fail(error)
  }).pipe(Effect.withSpan(`rpc.${operation}`))

/**
 * The procedures as the server takes them: the payload arrives undecoded, so the caller's access is checked
 * before its input is (API.md "Order of checks"): a refused caller learns nothing about a malformed input.
 */
const serverRpcGroup = RpcGroup.make(
  ...[...operationRpcGroup.requests.values()].map((rpc) =>
    Rpc.make(rpc._tag, { payload: Schema.Unknown, success: rpc.successSchema, error: AcsErrorSchema })
  )
)

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/** The input decoded; when it is malformed, the access check speaks first, then the 400 naming the field. */
const decodeInput = (operation: string, raw: unknown, authorization: string) => {
  const rpc = operationRpcGroup.requests.get(operation)!
  return Schema.decodeUnknown(rpc.payloadSchema as Schema.Schema<Record<string, unknown>, unknown, never>)(raw).pipe(
    Effect.catchTag("ParseError", (error) => {
      const path = isObject(raw) && isObject(raw["path"]) ? raw["path"] : {}
      return checkKeyAccess(authorization, operation as OperationName, path["projectId"]).pipe(
        Effect.zipRight(Effect.fail(fromParseError(error)))
      )
    })
  )
}

const HandlersLive = serverRpcGroup.toLayer(
  Effect.map(Effect.context<RestApp | Effect.Effect.Context<ReturnType<typeof checkKeyAccess>>>(), (context) =>
    Object.fromEntries(
      [...operationEndpoints.keys()].map((operation) => [
        operation,
        (raw: unknown, options: { readonly headers: Readonly<Record<string, string | undefined>> }) => {
          const authorization = options.headers["authorization"] ?? ""
          return decodeInput(operation, raw, authorization).pipe(
            Effect.flatMap((input) => dispatch(operation, input, authorization)),
            Effect.provide(context)
          )
        }
      ])
    ))
)

/** The RPC server's HttpApp, built once. */
export class RpcApp extends Context.Tag("acs/RpcApp")<RpcApp, HttpApp.Default<never, Scope.Scope>>() {
  static readonly Live = Layer.scoped(RpcApp, RpcServer.toHttpApp(serverRpcGroup)).pipe(
    Layer.provide(HandlersLive),
    Layer.provide(RpcSerialization.layerNdjson)
  )
}

/**
 * Serves `/rpc` in front of the API app, which the procedures dispatch into. Keys only. A refusal must be
 * framed as the protocol frames answers, which needs the request's id from its body: so an unauthenticated
 * body is read only up to 64 KiB (one request; its procedure then answers Unauthorized), an authenticated
 * one up to 1 MiB like every other.
 */
export const withRpc = <R>(api: HttpApp.Default<never, R>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (request.url.split("?")[0] !== RPC_PATH) return yield* api
    // The protocol is POST only; anything else is no route, answered as the API answers one.
    if (request.method !== "POST") {
      return envelopeResponse(new NotFound({ message: `no route ${request.method} ${RPC_PATH}: RPC takes POST` }))
    }
    const authenticated = yield* Effect.isSuccess(authenticateKey(request.headers["authorization"]))
    const admitted = yield* Effect.either(readJsonBody(request, authenticated ? MAX_BODY_BYTES : UNAUTHENTICATED_RPC_BYTES))
    if (admitted._tag === "Left") return refusal(admitted.left)
    // The app the procedures call carries the services it needs, all but the request, which each call brings;
    // what is left to provide is exactly that request, which the generic types cannot show.
    const services = Context.omit(HttpServerRequest.HttpServerRequest)(yield* Effect.context<R>())
    const standalone = Effect.provide(api, services) as HttpApp.Default
    yield* Effect.flatMap(RestApp, (rest) => rest.provide(standalone))
    return yield* Effect.flatMap(RpcApp, Effect.scoped).pipe(
      Effect.provideService(HttpServerRequest.HttpServerRequest, admitted.right)
    )
  })

const UNAUTHENTICATED_RPC_BYTES = 64 * 1024

export const RpcLive = RpcApp.Live.pipe(Layer.provideMerge(RestApp.Live))

