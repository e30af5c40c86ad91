/**
 * The typed RPC surface at `/rpc` (@effect/rpc over HTTP, NDJSON): one procedure per operation
 * (packages/domain/src/Rpcs.ts). Keys only: the caller is authenticated by an `RpcMiddleware`; each
 * procedure is then `operate.call` (operations/Operate.ts): access for its operation (the same
 * `Access.check`, rate-limit bucket and refusals as REST), its input decoded with the endpoint's own schemas,
 * the operation's service method. It answers with the operation's success value or the SPEC error class.
 */
import type { AcsError } from "@acs/domain/Errors"
import { type OperationName, Operations } from "@acs/domain/Operations"
import type { Principal } from "@acs/domain/Principal"
import { AcsErrorSchema, operationRpcGroup, streamingOperations } from "@acs/domain/Rpcs"
import { Headers } from "@effect/platform"
import { Rpc, RpcGroup, RpcMiddleware, RpcSerialization, RpcServer } from "@effect/rpc"
import { type FromClientEncoded, type FromServerEncoded, constEof, ResponseDefectEncoded } from "@effect/rpc/RpcMessage"
import { Cause, Context, Deferred, Effect, Exit, FiberId, Layer, Mailbox, Option, Schema, Stream } from "effect"
import * as Crypto from "node:crypto"
import { authenticateKey } from "../auth/KeyAuthentication.ts"
import type { KeyStore } from "../auth/KeyStore.ts"
import { toDeclaredError } from "../operations/Failures.ts"
import { type Caller, callerHere, makeOperate } from "../operations/Operate.ts"

/** The caller of a procedure (operations/Operate.ts `Caller`): its principal, and the barrier its request passed. */
export class RpcCaller extends Context.Tag("acs/RpcCaller")<RpcCaller, Caller>() {}

/** The caller of a procedure, from its Bearer key; anything else is `unauthorized`. */
export class RpcAuthentication extends RpcMiddleware.Tag<RpcAuthentication>()("acs/RpcAuthentication", {
  provides: RpcCaller,
  failure: AcsErrorSchema
}) {}

/** The header http/RpcRoute.ts names a request's authenticated caller by; a value a client sends is dropped. */
export const CALLER_HEADER = "x-acs-rpc-caller"

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
  /** The caller, and whether its request passed the lookup caches' barrier (db/Invalidation.ts). */
  readonly find: (name: string | undefined, authorization: string | undefined) => Caller | undefined
}>() {
  static readonly Live = Layer.sync(RpcCallers, () => {
    const inFlight = new Map<string, Caller & { readonly authorization: string }>()
    return {
      during: (authorization, principal, answer) =>
        Effect.acquireUseRelease(
          // Runs in the request's fiber, which authenticated the caller just before.
          Effect.map(callerHere(principal), (caller) => {
            const name = Crypto.randomUUID()
            inFlight.set(name, { ...caller, authorization })
            return name
          }),
          answer,
          (name) => Effect.sync(() => inFlight.delete(name))
        ),
      find: (name, authorization) => {
        const held = name === undefined ? undefined : inFlight.get(name)
        return held !== undefined && held.authorization === authorization ? held : undefined
      }
    }
  })
}

/** What the middleware does: the caller the route authenticated for this request, else the key's own lookup. */
const makeAuthenticateCaller = Effect.gen(function*() {
  const callers = yield* RpcCallers
  const context = yield* Effect.context<Effect.Effect.Context<ReturnType<typeof authenticateKey>>>()
  return (headers: Headers.Headers): Effect.Effect<Caller, AcsError> => {
    const known = callers.find(headers[CALLER_HEADER], headers["authorization"])
    // The procedure runs in the RPC server's fiber: with a known caller, its lookups (the account) rely on the
    // barrier the request passed (Operate.call carries it over); a key looked up here, on this fiber's.
    if (known !== undefined) return Effect.succeed(known)
    return authenticateKey(headers["authorization"]).pipe(
      Effect.flatMap(callerHere),
      Effect.provide(context),
      // A key that cannot be looked up (the database is down) is refused as the procedures refuse: a SPEC error.
      Effect.catchAllDefect((defect) => Effect.flatMap(toDeclaredError(Cause.die(defect)), (error) => Effect.fail(Option.getOrThrow(error))))
    )
  }
})

const RpcAuthenticationLive = Layer.effect(
  RpcAuthentication,
  Effect.map(makeAuthenticateCaller, (authenticate) => RpcAuthentication.of(({ headers }) => authenticate(headers)))
)

/**
 * The procedures as the server takes them: the payload arrives undecoded, so the caller's access is checked
 * before its input is (docs/contract.md 5.3): a refused caller learns nothing about a malformed input.
 */
const serverRpcGroup = RpcGroup.make(
  ...[...operationRpcGroup.requests.values()].map((rpc) =>
    // A streaming procedure's success is its stream schema (chunks of events, failing with a SPEC error).
    Rpc.make(rpc._tag, { payload: Schema.Unknown, success: rpc.successSchema, error: AcsErrorSchema })
  )
).middleware(RpcAuthentication)

const isOperation = (name: string): name is OperationName => Object.hasOwn(Operations, name)

/** The procedures, one per operation: what the RPC server's handlers run. */
class RpcProcedures extends Context.Tag("acs/RpcProcedures")<RpcProcedures, {
  readonly run: (operation: OperationName, raw: unknown) => Effect.Effect<unknown, AcsError, RpcCaller>
  /** `streamEvents`: the events as they happen, one chunk each; it ends when the key is revoked or expires. */
  readonly streamEvents: (raw: unknown, authorization: string | undefined) => Stream.Stream<unknown, AcsError, RpcCaller>
}>() {}

const RpcProceduresLive = Layer.effect(
  RpcProcedures,
  Effect.gen(function*() {
    const operate = yield* makeOperate
    const keys = yield* Effect.context<KeyStore>()

    const run = (operation: OperationName, raw: unknown) =>
      Effect.flatMap(RpcCaller, (caller) => operate.call(operation, raw, caller)).pipe(Effect.withSpan(`rpc.${operation}`))

    const streamEvents = (raw: unknown, authorization: string | undefined) =>
      Stream.unwrap(Effect.map(RpcCaller, (caller) => {
        const stillAllowed = authenticateKey(authorization).pipe(Effect.provide(keys), Effect.isSuccess)
        // Heartbeats are the SSE framing's; here they only check the key.
        return Stream.filterMap(
          operate.streamEvents(raw, caller, stillAllowed),
          (item) => item._tag === "Event" ? Option.some(item.event) : Option.none()
        )
      }))

    return { run, streamEvents }
  })
)

/** A procedure's handler: one answer, or (a streaming procedure) a stream of them. */
type Handler = (
  raw: unknown,
  options: { readonly headers: Headers.Headers }
) => Effect.Effect<unknown, AcsError, RpcCaller> | Stream.Stream<unknown, AcsError, RpcCaller>

const HandlersLive = serverRpcGroup.toLayer(
  Effect.map(RpcProcedures, (procedures) =>
    Object.fromEntries(
      [...serverRpcGroup.requests.keys()].filter(isOperation).map((operation): [string, Handler] =>
        streamingOperations.has(operation)
          ? [operation, (raw, { headers }) => procedures.streamEvents(raw, headers["authorization"])]
          : [operation, (raw) => procedures.run(operation, raw)]
      )
      // The group is built from the operation table at run time, so its type cannot tell which procedure
      // streams; each handler above answers as its procedure's schema says.
    ) as unknown as RpcGroup.HandlersFrom<RpcGroup.Rpcs<typeof serverRpcGroup>>)
)

/**
 * The RPC server behind its own protocol: one /rpc POST is one client, its NDJSON messages written to the
 * server, its answers collected until the server ends the client (every request answered), then sent as one
 * NDJSON body. The platform's HTTP protocol would re-read a request body already read, and stream the answer
 * through a mailbox; for a request that is answered once that costs more than the operation (docs/decisions/surfaces.md).
 * A body that calls a streaming procedure (`streamEvents`) is answered by `stream` instead: each answer (a
 * Chunk of events, then the Exit) is written as it comes, and the client ends when the caller goes away.
 */
export class RpcAnswers extends Context.Tag("acs/RpcAnswers")<RpcAnswers, {
  readonly answer: (body: string, headers: Headers.Headers) => Effect.Effect<string>
  readonly stream: (body: string, headers: Headers.Headers) => Stream.Stream<string>
}>() {
  static readonly Live = Layer.scoped(
    RpcAnswers,
    Effect.gen(function*() {
      const disconnects = yield* Mailbox.make<number>()
      const clients = new Map<number, { readonly send: (answer: FromServerEncoded) => void; readonly end: Effect.Effect<void> }>()
      let writeRequest!: (clientId: number, message: FromClientEncoded) => Effect.Effect<void>
      let nextClientId = 0
      const protocol = yield* RpcServer.Protocol.make((write) => {
        writeRequest = write
        return Effect.succeed({
          disconnects,
          send: (clientId, response) => Effect.sync(() => clients.get(clientId)?.send(response)),
          end: (clientId) => Effect.suspend(() => clients.get(clientId)?.end ?? Effect.void),
          clientIds: Effect.sync(() => new Set(clients.keys())),
          initialMessage: Effect.succeedNone,
          supportsAck: false,
          supportsTransferables: false,
          supportsSpanPropagation: false
        })
      })
      // Each procedure has its own span (`rpc.<operation>`).
      yield* RpcServer.make(serverRpcGroup, { disableTracing: true }).pipe(
        Effect.provideService(RpcServer.Protocol, protocol),
        Effect.interruptible,
        Effect.forkScoped
      )

      /** Writes the body's messages to the server for `clientId` (a malformed body is answered as a defect). */
      const writeBody = (clientId: number, body: string, headers: Headers.Headers, onDefect: (answer: FromServerEncoded) => void) =>
        Effect.gen(function*() {
          const parser = RpcSerialization.ndjson.unsafeMake()
          const requestHeaders = Object.entries(headers)
          try {
            // A body without its final newline is still one message.
            const messages = parser.decode(body.endsWith("\n") ? body : `${body}\n`) as ReadonlyArray<FromClientEncoded>
            for (const message of messages) {
              yield* writeRequest(clientId, message._tag === "Request" ? { ...message, headers: requestHeaders.concat(message.headers) } : message)
            }
          } catch (cause) {
            onDefect(ResponseDefectEncoded(cause))
          }
          yield* writeRequest(clientId, constEof)
        })

      /** The client gone (answered, or the caller went away): the server drops what it still runs for it. */
      const forget = (clientId: number) =>
        Effect.sync(() => {
          clients.delete(clientId)
          disconnects.unsafeOffer(clientId)
        })

      const answer = (body: string, headers: Headers.Headers) =>
        Effect.suspend(() => {
          const clientId = nextClientId++
          const answers = new Array<FromServerEncoded>()
          const ended = Deferred.unsafeMake<void>(FiberId.none)
          clients.set(clientId, { send: (response) => void answers.push(response), end: Deferred.done(ended, Exit.void) })
          return Effect.gen(function*() {
            yield* writeBody(clientId, body, headers, (defect) => void answers.push(defect))
            yield* Deferred.await(ended)
            return answers.map((answer) => `${JSON.stringify(answer)}\n`).join("")
          }).pipe(Effect.ensuring(forget(clientId)))
        })

      const stream = (body: string, headers: Headers.Headers) =>
        Stream.unwrapScoped(Effect.gen(function*() {
          const clientId = nextClientId++
          const out = yield* Mailbox.make<FromServerEncoded>()
          clients.set(clientId, { send: (response) => void out.unsafeOffer(response), end: Effect.asVoid(out.end) })
          yield* Effect.addFinalizer(() => forget(clientId))
          yield* writeBody(clientId, body, headers, (defect) => void out.unsafeOffer(defect))
          return Mailbox.toStream(out).pipe(Stream.map((answer) => `${JSON.stringify(answer)}\n`))
        }))
      return { answer, stream }
    })
  ).pipe(
    Layer.provide(HandlersLive),
    Layer.provideMerge(RpcProceduresLive),
    Layer.provide(RpcAuthenticationLive)
  )
}

/** True when the body calls a streaming procedure: its answer is streamed (RpcAnswers.stream). */
export const callsStreamingProcedure = (body: string): boolean =>
  body.split("\n").some((line) => {
    if (line.trim() === "") return false
    try {
      const message: unknown = JSON.parse(line)
      return typeof message === "object" && message !== null && "_tag" in message && message._tag === "Request" &&
        "tag" in message && typeof message.tag === "string" && streamingOperations.has(message.tag)
    } catch {
      return false
    }
  })

/**
 * The answer to one /rpc POST whose body http/RpcRoute.ts has read and checked, and its caller when its key was
 * authenticated there: the caller rides under a random name, so the middleware does not look the key up again.
 */
export const answerRpc = (
  body: string,
  headers: Headers.Headers,
  caller: Option.Option<{ readonly authorization: string; readonly principal: Principal }>
) => {
  const answer = (callerName: string | undefined) =>
    Effect.flatMap(RpcAnswers, (answers) => {
      const stripped = Headers.remove(headers, CALLER_HEADER)
      return answers.answer(body, callerName === undefined ? stripped : Headers.set(stripped, CALLER_HEADER, callerName))
    })
  return Option.match(caller, {
    onNone: () => answer(undefined),
    onSome: ({ authorization, principal }) => Effect.flatMap(RpcCallers, (callers) => callers.during(authorization, principal, answer))
  })
}

export const RpcLive = RpcAnswers.Live.pipe(Layer.provideMerge(RpcCallers.Live))
