/**
 * The typed RPC surface at `/rpc` (@effect/rpc over HTTP, NDJSON): one procedure per operation
 * (packages/domain/src/Rpcs.ts). Keys only: the caller is authenticated by an `RpcMiddleware`; each
 * procedure then checks access for its operation (the same `Access.check`, rate-limit bucket and refusals as
 * REST), decodes its input with the endpoint's own schemas, and calls the operation's service method
 * (operations/OperationHandlers.ts). It answers with the operation's success value or the SPEC error class.
 */
import type { AcsError } from "@acs/domain/Errors"
import { type OperationName, Operations } from "@acs/domain/Operations"
import { CurrentPrincipal, type Principal } from "@acs/domain/Principal"
import { AcsErrorSchema, operationRpcGroup } from "@acs/domain/Rpcs"
import { Headers, HttpApp, HttpServerRequest } from "@effect/platform"
import { Rpc, RpcGroup, RpcMiddleware, RpcSerialization, RpcServer } from "@effect/rpc"
import { Cause, Context, Effect, Layer, Option, Schema, type Scope } from "effect"
import * as Crypto from "node:crypto"
import { Access } from "../auth/Access.ts"
import { authenticateKey } from "../auth/KeyAuthentication.ts"
import { fromParseError, toDeclaredError } from "../operations/Failures.ts"
import { isPreviewInput, makeOperate, projectIdOf } from "../operations/Operate.ts"
import type { Input } from "../operations/OperationTypes.ts"

/** The caller of a procedure, from its Bearer key; anything else is `unauthorized`. */
export class RpcAuthentication extends RpcMiddleware.Tag<RpcAuthentication>()("acs/RpcAuthentication", {
  provides: CurrentPrincipal,
  failure: AcsErrorSchema
}) {}

/** The header http/RpcRoute.ts names a request's authenticated caller by; a value a client sends is dropped. */
const CALLER_HEADER = "x-acs-rpc-caller"

/**
 * The callers http/RpcRoute.ts has authenticated for the /rpc requests in flight, each under a random name that
 * rides on its request, so the middleware does not ask the key store a second time for the same request.
 * An entry lives while its request is answered, and counts only for the Authorization it was made from.
 */
export class RpcCallers extends Context.Tag("acs/RpcCallers")<RpcCallers, {
  readonly during: <A, E, R>(
    authorization: string,
    principal: Principal,
    answer: (name: string) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  readonly find: (name: string | undefined, authorization: string | undefined) => Principal | undefined
}>() {
  static readonly Live = Layer.sync(RpcCallers, () => {
    const inFlight = new Map<string, { readonly authorization: string; readonly principal: Principal }>()
    return {
      during: (authorization, principal, answer) =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            const name = Crypto.randomUUID()
            inFlight.set(name, { authorization, principal })
            return name
          }),
          answer,
          (name) => Effect.sync(() => inFlight.delete(name))
        ),
      find: (name, authorization) => {
        const held = name === undefined ? undefined : inFlight.get(name)
        return held !== undefined && held.authorization === authorization ? held.principal : undefined
      }
    }
  })
}

/** What the middleware does: the caller the route authenticated for this request, else the key's own lookup. */
const makeAuthenticateCaller = Effect.gen(function*() {
  const callers = yield* RpcCallers
  const context = yield* Effect.context<Effect.Effect.Context<ReturnType<typeof authenticateKey>>>()
  return (headers: Headers.Headers): Effect.Effect<Principal, AcsError> => {
    const known = callers.find(headers[CALLER_HEADER], headers["authorization"])
    return known !== undefined ? Effect.succeed(known) : authenticateKey(headers["authorization"]).pipe(Effect.provide(context))
  }
})

const RpcAuthenticationLive = Layer.effect(
  RpcAuthentication,
  Effect.map(makeAuthenticateCaller, (authenticate) => RpcAuthentication.of(({ headers }) => authenticate(headers)))
)

/**
 * The procedures as the server takes them: the payload arrives undecoded, so the caller's access is checked
 * before its input is (API.md "Order of checks"): a refused caller learns nothing about a malformed input.
 */
const serverRpcGroup = RpcGroup.make(
  ...[...operationRpcGroup.requests.values()].map((rpc) =>
    Rpc.make(rpc._tag, { payload: Schema.Unknown, success: rpc.successSchema, error: AcsErrorSchema })
  )
).middleware(RpcAuthentication)

const isOperation = (name: string): name is OperationName => Object.hasOwn(Operations, name)

/** The procedures, one per operation: what the RPC server's handlers run. */
class RpcProcedures extends Context.Tag("acs/RpcProcedures")<RpcProcedures, {
  readonly run: (operation: OperationName, raw: unknown) => Effect.Effect<unknown, AcsError, CurrentPrincipal>
}>() {}

const RpcProceduresLive = Layer.effect(
  RpcProcedures,
  Effect.gen(function*() {
    const access = yield* Access
    const operate = yield* makeOperate

    /** Access for the account the input names; with no account named, the refusal of a malformed input. */
    const procedure = <Op extends OperationName>(operation: Op, raw: unknown) =>
      Effect.gen(function*() {
        // The operation's input as the procedure declares it; its schemas need no services.
        const decode = Schema.decodeUnknown(
          operationRpcGroup.requests.get(operation)!.payloadSchema as Schema.Schema<Input<Op>, unknown, never>
        )
        const projectId = projectIdOf(operation, raw)
        const grant = yield* access.check(operation, typeof projectId === "string" ? projectId : undefined, { preview: isPreviewInput(raw) }).pipe(
          // No account named: the scope and grant were checked, and the missing field is the answer.
          Effect.catchTag("AccountMismatch", (mismatch) =>
            typeof projectId === "string" ? Effect.fail(mismatch) : Effect.zipRight(decode(raw).pipe(Effect.mapError(fromParseError)), Effect.fail(mismatch)))
        )
        const input = yield* decode(raw).pipe(Effect.mapError(fromParseError))
        return yield* operate.run(operation, grant, input)
      }).pipe(
        // Every failure as a SPEC error class, as REST's envelope would have it (a defect is `internal`).
        Effect.catchAllCause((cause) =>
          toDeclaredError(cause).pipe(
            Effect.flatMap(Option.match({ onNone: () => Effect.failCause(Cause.stripFailures(cause)), onSome: (e) => Effect.fail<AcsError>(e) }))
          )
        ),
        // Headers a check adds (RateLimit-*) belong to a REST answer; the RPC response has its own.
        Effect.locally(HttpApp.currentPreResponseHandlers, Option.none()),
        Effect.withSpan(`rpc.${operation}`)
      )

    return { run: (operation: OperationName, raw: unknown) => procedure(operation, raw) }
  })
)

const HandlersLive = serverRpcGroup.toLayer(
  Effect.map(RpcProcedures, (procedures) =>
    Object.fromEntries(
      [...serverRpcGroup.requests.keys()].filter(isOperation).map((operation) => [operation, (raw: unknown) => procedures.run(operation, raw)])
    ))
)

/** The RPC server's HttpApp, built once. */
export class RpcApp extends Context.Tag("acs/RpcApp")<RpcApp, {
  readonly http: HttpApp.Default<never, Scope.Scope>
}>() {
  static readonly Live = Layer.scoped(
    RpcApp,
    Effect.map(RpcServer.toHttpApp(serverRpcGroup), (http) => ({ http }))
  ).pipe(
    Layer.provide(HandlersLive),
    Layer.provideMerge(RpcProceduresLive),
    Layer.provide(RpcAuthenticationLive),
    Layer.provide(RpcSerialization.layerNdjson)
  )
}

/**
 * The answer to one /rpc POST whose body http/RpcRoute.ts has read and checked, and its caller when its key was
 * authenticated there: the caller rides under a random name, so the middleware does not look the key up again.
 */
export const answerRpc = (
  request: HttpServerRequest.HttpServerRequest,
  caller: Option.Option<{ readonly authorization: string; readonly principal: Principal }>
) => {
  const answer = (callerName: string | undefined) =>
    Effect.gen(function*() {
      const app = yield* RpcApp
      const stripped = Headers.remove(request.headers, CALLER_HEADER)
      // The request is not read yet (its body is in memory), so the server reads it from this modified copy.
      const forwarded = request.modify({ headers: callerName === undefined ? stripped : Headers.set(stripped, CALLER_HEADER, callerName) })
      return yield* Effect.scoped(app.http).pipe(Effect.provideService(HttpServerRequest.HttpServerRequest, forwarded))
    })
  return Option.match(caller, {
    onNone: () => answer(undefined),
    onSome: ({ authorization, principal }) => Effect.flatMap(RpcCallers, (callers) => callers.during(authorization, principal, answer))
  })
}

export const RpcLive = RpcApp.Live.pipe(Layer.provideMerge(RpcCallers.Live))
