/**
 * What the front door established for the request in hand: the caller, and the grant of the operation the
 * request names. The API's authentication middleware and the handler's `Access.check` take them from here
 * instead of checking twice (which would also charge the rate limit twice).
 *
 * It is kept beside the request the front door hands on (a weak map, by that request object), not provided
 * with it: a value provided in the context costs a copy of the fiber's whole context and an uninterruptible
 * restore on every request (docs/decisions/front-door.md). Only code with that very request in its context finds it: the API's
 * routes for it; not an RPC procedure or an MCP tool call (their requests are not the API's).
 */
import type { OperationName } from "@acs/domain/Operations"
import type { Principal } from "@acs/domain/Principal"
import { HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"

export interface RequestAuthorization {
  readonly principal: Principal
  readonly operation: OperationName
  readonly projectId: string | undefined
  /** A `Granted<operation>`, made by `Access.check`. */
  readonly grant: unknown
}

const established = new WeakMap<HttpServerRequest.HttpServerRequest, RequestAuthorization>()

/** Records what the front door established for `request`, the request it hands on to the API (none: nothing). */
export const establish = (request: HttpServerRequest.HttpServerRequest, authorization: Option.Option<RequestAuthorization>): void => {
  if (Option.isSome(authorization)) established.set(request, authorization.value)
  else established.delete(request)
}

/** What the front door established for the request in this fiber's context; none outside one it handed on. */
export const currentRequestAuthorization: Effect.Effect<Option.Option<RequestAuthorization>> = Effect.map(
  Effect.serviceOption(HttpServerRequest.HttpServerRequest),
  (request) => Option.isSome(request) ? Option.fromNullable(established.get(request.value)) : Option.none()
)
