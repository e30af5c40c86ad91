/**
 * The front door of the REST API (API.md "Order of checks, and the front door"): every request is checked
 * in the order authentication → scope and grant → account reach → body → the operation, so a caller learns
 * nothing about a body it may not send, and no body is read for a caller who is not signed in. REST takes
 * `application/json` only, at most 1 MiB whatever the framing. What it establishes (the caller and the
 * operation's grant) rides with the request to the API, which does not check again.
 */
import { type AcsError, InvalidRequest } from "@acs/domain/Errors"
import { type OperationName, Operations } from "@acs/domain/Operations"
import { CurrentPrincipal } from "@acs/domain/Principal"
import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Either, FiberRef, Option } from "effect"
import { Access, callerRefusal } from "../auth/Access.ts"
import { currentRequestAuthorization, type RequestAuthorization } from "../auth/RequestAuthorization.ts"
import { speculatively } from "../db/Invalidation.ts"
import { noteRequest } from "../telemetry/RequestFacts.ts"
import { matchRoute } from "./ApiRoutes.ts"
import { authenticate } from "./AuthenticationLive.ts"
import { envelopeResponse, toDeclaredError } from "./ErrorEnvelope.ts"
import { type BodyRefusal, hasBody, isJsonContentType, readJsonBody } from "./RequestBody.ts"

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
const checkedBody = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    if (!hasBody(request)) return request
    if (!isJsonContentType(request.headers["content-type"])) return yield* Effect.fail<AcsError | BodyRefusal>(notJson)
    return yield* readJsonBody(request)
  })

/** `?preview=true` once, as the proposal endpoints' url params decode it to true (a dry run: the read bucket). */
const asksPreview = (url: string): boolean => {
  const query = url.indexOf("?")
  if (query < 0) return false
  const values = new URLSearchParams(url.slice(query + 1)).getAll("preview")
  return values.length === 1 && values[0] === "true"
}

const makeFrontDoor = Effect.gen(function*() {
  const context = yield* Effect.context<Access | Effect.Effect.Context<ReturnType<typeof authenticate>>>()

  /**
   * The caller and the operation's grant. An operation that names its account in the body (keyword ideas)
   * has its caller checked here and its reach by its handler, once the body says which account.
   */
  const admit = (request: HttpServerRequest.HttpServerRequest, operation: OperationName, projectId: string | undefined) =>
    Effect.gen(function*() {
      const principal = yield* authenticate(request)
      yield* noteRequest({ principal })
      if ("account" in Operations[operation] && projectId === undefined) {
        const refused = callerRefusal(principal, operation)
        if (Option.isSome(refused)) return yield* refused.value
        return Option.none<RequestAuthorization>()
      }
      const access = yield* Access
      const grant = yield* access.check(operation, projectId, { preview: asksPreview(request.url) })
        .pipe(Effect.provideService(CurrentPrincipal, principal))
      return Option.some<RequestAuthorization>({ principal, operation, projectId, grant })
    }).pipe(Effect.provide(context))

  /** The request as the API may see it, and what was established about its caller; or the refusal to answer. */
  const pass = (request: HttpServerRequest.HttpServerRequest, operation: OperationName | undefined, projectId: string | undefined) =>
    Effect.gen(function*() {
      const authorization = operation === undefined ? Option.none<RequestAuthorization>() : yield* admit(request, operation, projectId)
      return { request: yield* checkedBody(request), authorization }
    }).pipe(
      Effect.mapError(refusal),
      // A defect, or text Postgres cannot store in a path param: the envelope the API would have answered.
      Effect.catchAllDefect((defect) =>
        Effect.flatMap(toDeclaredError(Cause.die(defect)), (error) => Effect.fail(envelopeResponse(Option.getOrThrow(error))))
      )
    )

  return <R>(api: HttpApp.Default<never, R>): HttpApp.Default<never, R> =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      // Unknown routes (404 from the API) and the pages outside it (the docs) hold their bodies to the same rules.
      const match = matchRoute(request.method, request.url.split("?")[0]!)
      const operation = match?.route.operation
      yield* noteRequest({ operation })
      const answer = Effect.gen(function*() {
        const passed = yield* Effect.either(pass(request, operation, match?.params["projectId"]))
        if (Either.isLeft(passed)) return passed.left
        return yield* api.pipe(
          Effect.provideService(HttpServerRequest.HttpServerRequest, passed.right.request),
          Effect.locally(currentRequestAuthorization, passed.right.authorization)
        )
      })
      if (request.method !== "GET" || operation === undefined || Operations[operation].bucket !== "read") return yield* answer
      // A read runs while its cached lookups' barrier ping is in flight (db/Invalidation.ts); when a change
      // to the key or the account committed before the request, it is answered again, meeting the change.
      const handlers = yield* FiberRef.get(HttpApp.currentPreResponseHandlers)
      const { exit, settled } = yield* speculatively(answer)
      if (settled) return yield* exit
      yield* FiberRef.set(HttpApp.currentPreResponseHandlers, handlers)
      return yield* answer
    })
})

/**
 * The front door as the API's own middleware: inside the app the platform serves, so the checked request
 * (its body read) is what the routes see, while the response is written to the request node received.
 */
export const FrontDoorLive = HttpApiBuilder.middleware(makeFrontDoor)
