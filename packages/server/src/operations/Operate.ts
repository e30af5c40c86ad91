/**
 * Calling an operation as a surface does: `Access.check` for the operation on the account the input names,
 * then the operation's handler with the grant. The one way from a surface to a service method.
 *
 * `call` is the whole way for a surface that hands over its input undecoded (an RPC procedure, an MCP tool
 * call): access, then decode (with its ordering rule), then the handler, every failure as a declared error,
 * the caller's lookup-cache barrier carried over. REST splits the same steps between its front door (access
 * before the body is read, `grantBeforeBody`) and the HttpApi router (decode), then calls `handler`
 * (docs/decisions/architecture.md).
 */
import type { AcsError, InvalidRequest } from "@acs/domain/Errors"
import { type OperationName, Operations } from "@acs/domain/Operations"
import type { Principal } from "@acs/domain/Principal"
import { operationRpcGroup } from "@acs/domain/Rpcs"
import { HttpApp } from "@effect/platform"
import { Cause, Effect, Option, ParseResult, Schema, Stream } from "effect"
import { Access, callerRefusal, type Granted } from "../auth/Access.ts"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { assumeBarrierPassed, barrierPassed } from "../db/Invalidation.ts"
import { EventStream, type StreamItem } from "../feeds/EventStream.ts"
import { fromParseError, toDeclaredError } from "./Failures.ts"
import { OperationHandlers } from "./OperationHandlers.ts"
import type { Failure, Input, OperationHandler, OperationHandlerMap, Success } from "./OperationTypes.ts"

const handlerOf = <Op extends OperationName>(handlers: OperationHandlerMap, operation: Op): OperationHandler<Op> => handlers[operation]

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/**
 * The account an operation's input names, as the caller sent it (decoded or not): `path.projectId`, or for
 * an operation that names its account in the body (keyword ideas) `payload.projectId`. Undefined for an
 * operation on no account, and when the input does not say.
 */
export const projectIdOf = (operation: OperationName, input: unknown): unknown => {
  if (!("account" in Operations[operation]) || !isObject(input)) return undefined
  const path = input["path"]
  if (isObject(path) && "projectId" in path) return path["projectId"]
  const payload = input["payload"]
  return isObject(payload) ? payload["projectId"] : undefined
}

/**
 * Whether an operation's input asks for a proposal's dry run (`urlParams.preview`), decoded (`true`) or as
 * the caller sent it (`"true"`, the only text the param decodes to true from): the surfaces ask before
 * decoding, to count the call in the read bucket.
 */
export const isPreviewInput = (input: unknown): boolean => {
  if (!isObject(input)) return false
  const urlParams = input["urlParams"]
  if (!isObject(urlParams)) return false
  const preview = urlParams["preview"]
  return preview === true || preview === "true"
}

/**
 * Who calls an operation through `call`: the principal its surface authenticated, and whether its request
 * already passed the lookup caches' barrier (db/Invalidation.ts). The call runs in another fiber than the
 * request's (the RPC server's, an MCP call's own), whose lookups then rely on that barrier instead of pinging again.
 */
export interface Caller {
  readonly principal: Principal
  readonly barrierPassed: boolean
}

/**
 * The caller as the fiber that authenticated it knows it: in the request's own fiber, with the barrier that
 * request passed. A surface makes its `Caller` here and hands it to the fiber that calls.
 */
export const callerHere = (principal: Principal): Effect.Effect<Caller> =>
  Effect.map(barrierPassed, (passed): Caller => ({ principal, barrierPassed: passed }))

/**
 * A surface's own way from its raw input to the operation's input, where the procedure's schema is not it
 * (MCP's arguments, decoded part by part; or refused as they stand, an argument no field takes).
 */
export type Decode<Op extends OperationName> = (raw: unknown) => Effect.Effect<Input<Op>, ParseResult.ParseError | InvalidRequest>

/** The operation's input schema as the procedure declares it (`{path, urlParams, payload, headers}`); it needs no services. */
const procedureDecode = <Op extends OperationName>(operation: Op): Decode<Op> =>
  Schema.decodeUnknown(operationRpcGroup.requests.get(operation)!.payloadSchema as Schema.Schema<Input<Op>, unknown, never>)

/** Every failure as a declared error (a defect is `internal`); an interruption stays one. */
const declared = <A, R>(effect: Effect.Effect<A, unknown, R>): Effect.Effect<A, AcsError, R> =>
  Effect.catchAllCause(effect, (cause) =>
    Effect.flatMap(
      toDeclaredError(cause),
      Option.match({ onNone: () => Effect.failCause(Cause.stripFailures(cause)), onSome: (error) => Effect.fail<AcsError>(error) })
    ))

export const makeOperate = Effect.gen(function*() {
  const access = yield* Access
  const handlers: OperationHandlerMap = yield* OperationHandlers
  const events = yield* EventStream

  /** The grant of the operation for the account its input names. */
  const grantOf = <Op extends OperationName>(operation: Op, input: Input<Op>) =>
    access.check(operation, stringOrUndefined(projectIdOf(operation, input)), { preview: isPreviewInput(input) })

  /** The operation run with its grant; the grant is answered too, for what a surface adds (a Location). */
  const withGrant = <Op extends OperationName>(operation: Op, input: Input<Op>) =>
    Effect.flatMap(grantOf(operation, input), (grant) => Effect.map(run(operation, grant, input), (success) => ({ grant, success })))

  /** The operation's handler with a grant already made. */
  const run = <Op extends OperationName>(operation: Op, grant: Granted<Op>, input: Input<Op>): Effect.Effect<Success<Op>, Failure<Op>> =>
    handlerOf(handlers, operation)(grant, input).pipe(Effect.withSpan(`operation.${operation}`, HOT_SPAN))

  /** A REST handler: the operation's input in, its success out. */
  const handler = <Op extends OperationName>(operation: Op) => (input: Input<Op>) =>
    Effect.flatMap(grantOf(operation, input), (grant) => run(operation, grant, input))

  /**
   * Access, then decode: a refused caller learns nothing about its input (docs/contract.md 5.3). With no
   * account named, scope and grant were checked and the account cannot be: the malformed input is the answer
   * when it is malformed, else the refusal.
   */
  const admit = <Op extends OperationName>(operation: Op, raw: unknown, caller: Caller, decode: Decode<Op>) =>
    Effect.gen(function*() {
      if (caller.barrierPassed) yield* assumeBarrierPassed
      const decoded = Effect.mapError(decode(raw), (error) => (ParseResult.isParseError(error) ? fromParseError(error) : error))
      const projectId = stringOrUndefined(projectIdOf(operation, raw))
      const grant = yield* access.checkAs(caller.principal, operation, projectId, isPreviewInput(raw)).pipe(
        Effect.catchTag("AccountMismatch", (mismatch) =>
          projectId !== undefined ? Effect.fail(mismatch) : Effect.zipRight(decoded, Effect.fail(mismatch)))
      )
      return { grant, input: yield* decoded }
    })

  /**
   * REST's form of the same rule, for its front door, which checks access before it reads the body: the
   * grant for the account the path names. An operation on an account its path does not name (keyword ideas
   * names it in the body) has only its caller checked (scope, grant, org level), and no grant: its handler
   * (`handler`) checks the reach once the body is decoded.
   */
  const grantBeforeBody = <Op extends OperationName>(
    principal: Principal,
    operation: Op,
    projectId: string | undefined,
    preview: boolean
  ): Effect.Effect<Option.Option<Granted<Op>>, AcsError> => {
    if ("account" in Operations[operation] && projectId === undefined) {
      const refused = callerRefusal(principal, operation)
      return Option.isSome(refused) ? Effect.fail(refused.value) : Effect.succeed(Option.none())
    }
    return Effect.map(access.checkAs(principal, operation, projectId, preview), Option.some)
  }

  /**
   * An operation called with its input as the caller sent it: access → decode → the handler, answered with
   * its success or a declared error. Headers a check adds (RateLimit-*) belong to a REST answer; a surface
   * that calls here frames its own.
   */
  const call = <Op extends OperationName>(
    operation: Op,
    raw: unknown,
    caller: Caller,
    decode: Decode<Op> = procedureDecode(operation)
  ): Effect.Effect<Success<Op>, AcsError> =>
    Effect.flatMap(admit(operation, raw, caller, decode), ({ grant, input }) => run(operation, grant, input)).pipe(
      declared,
      Effect.locally(HttpApp.currentPreResponseHandlers, Option.none())
    )

  /**
   * `streamEvents` called as `call` calls an operation: the events as they happen, while `stillAllowed` (the
   * credential, looked up again) holds. Its stream slot (limits/StreamSlots.ts) is held until the stream ends.
   */
  const streamEvents = (raw: unknown, caller: Caller, stillAllowed: Effect.Effect<boolean>): Stream.Stream<StreamItem, AcsError> =>
    Stream.unwrapScoped(
      Effect.flatMap(admit("streamEvents", raw, caller, procedureDecode("streamEvents")), ({ grant, input }) =>
        events.openFor(grant, input, stillAllowed)).pipe(declared, Effect.locally(HttpApp.currentPreResponseHandlers, Option.none()))
    )

  return { withGrant, run, handler, grantBeforeBody, call, streamEvents } as const
})

const stringOrUndefined = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)
