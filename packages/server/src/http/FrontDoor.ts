/**
 * The front door of the REST API (docs/contract.md 5.3): every request is checked
 * in the order authentication → scope and grant → account reach → body → the operation, so a caller learns
 * nothing about a body it may not send, and no body is read for a caller who is not signed in. REST takes
 * `application/json` only, at most 1 MiB whatever the framing. What it establishes (the caller and the
 * operation's grant) rides with the request to the API, which does not check again.
 */
import { type AcsError, InvalidRequest } from "@acs/domain/Errors"
import { type OperationName, Operations } from "@acs/domain/Operations"
import type { Principal } from "@acs/domain/Principal"
import { streamingOperations } from "@acs/domain/Rpcs"
import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, FiberRef, Option } from "effect"
import { establish, type RequestAuthorization } from "../auth/RequestAuthorization.ts"
import { speculatively } from "../db/Invalidation.ts"
import { makeOperate } from "../operations/Operate.ts"
import { noteRequest } from "../telemetry/RequestFacts.ts"
import { matchRoute } from "./ApiRoutes.ts"
import { makeAuthenticate } from "./AuthenticationLive.ts"
import { envelopeResponse, toDeclaredError } from "./ErrorEnvelope.ts"
import { type BodyRefusal, hasBody, isJsonContentType, readJsonBody } from "./RequestBody.ts"
import { pathOf } from "./RequestPath.ts"

const notJson = new InvalidRequest({
  message: "invalid request: Content-Type: REST bodies are JSON; send Content-Type: application/json"
})

const isBodyRefusal = (u: unknown): u is BodyRefusal => typeof u === "object" && u !== null && "closeConnection" in u

/** The answer to a refused request; a body left partly unread closes the connection. */
export const refusal = (failure: AcsError | BodyRefusal): HttpServerResponse.HttpServerResponse =>
  isBodyRefusal(failure)
    ? failure.closeConnection
      ? HttpServerResponse.setHeader(envelopeResponse(failure.error), "connection", "close")
      : envelopeResponse(failure.error)
    : envelopeResponse(failure)

/** The request with its body read and checked, when it has one (whatever the method: a GET's too). */
const checkedBody = (
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<HttpServerRequest.HttpServerRequest, AcsError | BodyRefusal> => {
  if (!hasBody(request)) return Effect.succeed(request)
  if (!isJsonContentType(request.headers["content-type"])) return Effect.fail(notJson)
  return readJsonBody(request)
}

/** `?preview=true` once, as the proposal endpoints' url params decode it to true (a dry run: the read bucket). */
const asksPreview = (url: string): boolean => {
  const query = url.indexOf("?")
  if (query < 0) return false
  const values = new URLSearchParams(url.slice(query + 1)).getAll("preview")
  return values.length === 1 && values[0] === "true"
}

interface Passed {
  readonly request: HttpServerRequest.HttpServerRequest
  readonly authorization: Option.Option<RequestAuthorization>
}

/**
 * The API run on the checked request, with what was established about its caller recorded beside it. The
 * request is provided only when it differs from the one in hand (a body was read).
 */
const handOn = <R>(api: HttpApp.Default<never, R>, original: HttpServerRequest.HttpServerRequest, passed: Passed) =>
  Effect.suspend(() => {
    establish(passed.request, passed.authorization)
    return passed.request === original ? api : Effect.provideService(api, HttpServerRequest.HttpServerRequest, passed.request)
  })

// Services are taken once here and requests run without a context provided for them (each provided context
// copies the fiber's whole context); the steps are chained without generators on this path (docs/decisions/front-door.md).
const makeFrontDoor = Effect.gen(function*() {
  const operate = yield* makeOperate
  const authenticate = yield* makeAuthenticate

  /** The operation's grant for the caller, or none where its handler checks reach (operations/Operate.ts). */
  const grantFor = (
    principal: Principal,
    request: HttpServerRequest.HttpServerRequest,
    operation: OperationName,
    projectId: string | undefined
  ): Effect.Effect<Option.Option<RequestAuthorization>, AcsError> =>
    Effect.map(
      operate.grantBeforeBody(principal, operation, projectId, asksPreview(request.url)),
      Option.map((grant): RequestAuthorization => ({ principal, operation, projectId, grant }))
    )

  /**
   * The caller and the operation's grant. An operation that names its account in the body (keyword ideas)
   * has its caller checked here and its reach by its handler, once the body says which account.
   */
  const admit = (request: HttpServerRequest.HttpServerRequest, operation: OperationName, projectId: string | undefined) =>
    Effect.flatMap(authenticate(request), (principal) =>
      Effect.zipRight(noteRequest({ principal }), grantFor(principal, request, operation, projectId)))

  /** The request as the API may see it, and what was established about its caller; or the refusal to answer. */
  const pass = (request: HttpServerRequest.HttpServerRequest, operation: OperationName | undefined, projectId: string | undefined) =>
    (operation === undefined ? Effect.succeed(Option.none<RequestAuthorization>()) : admit(request, operation, projectId)).pipe(
      Effect.flatMap((authorization) => Effect.map(checkedBody(request), (checked): Passed => ({ request: checked, authorization }))),
      Effect.mapError(refusal),
      // A defect, or text Postgres cannot store in a path param: the envelope the API would have answered.
      Effect.catchAllDefect((defect) =>
        Effect.flatMap(toDeclaredError(Cause.die(defect)), (error) => Effect.fail(envelopeResponse(Option.getOrThrow(error))))
      )
    )

  return <R>(api: HttpApp.Default<never, R>): HttpApp.Default<never, R> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      // Unknown routes (404 from the API) and the pages outside it (the docs) hold their bodies to the same rules.
      const match = matchRoute(request.method, pathOf(request.url))
      const operation = match?.route.operation
      const answer = pass(request, operation, match?.params["projectId"]).pipe(
        Effect.matchEffect({
          onFailure: Effect.succeed,
          onSuccess: (passed) => handOn(api, request, passed)
        })
      )
      const noted = Effect.zipRight(noteRequest({ operation }), answer)
      if (request.method !== "GET" || operation === undefined || Operations[operation].bucket !== "read") return noted
      // A stream is not run twice: the first run's stream slot (limits/StreamSlots.ts) would stay taken.
      if (streamingOperations.has(operation)) return noted
      // A read runs while its cached lookups' barrier ping is in flight (db/Invalidation.ts); when a change
      // to the key or the account committed before the request, it is answered again, meeting the change.
      return Effect.zipRight(
        noteRequest({ operation }),
        Effect.flatMap(FiberRef.get(HttpApp.currentPreResponseHandlers), (handlers) =>
          Effect.flatMap(speculatively(answer), ({ exit, settled }) =>
            settled ? exit : Effect.zipRight(FiberRef.set(HttpApp.currentPreResponseHandlers, handlers), answer)))
      )
    })
})

/**
 * The front door as the API's own middleware: inside the app the platform serves, so the checked request
 * (its body read) is what the routes see, while the response is written to the request node received.
 */
export const FrontDoorLive = HttpApiBuilder.middleware(makeFrontDoor)
