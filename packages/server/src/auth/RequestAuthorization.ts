/**
 * What the front door established for the request in hand: the caller, and the grant of the operation the
 * request names. The API's authentication middleware and the handler's `Access.check` take them from here
 * instead of checking twice (which would also charge the rate limit twice). It rides in the request's context,
 * provided together with the request the front door hands on (one context provided instead of two).
 */
import type { OperationName } from "@acs/domain/Operations"
import type { Principal } from "@acs/domain/Principal"
import { Context, Option } from "effect"

export interface RequestAuthorization {
  readonly principal: Principal
  readonly operation: OperationName
  readonly projectId: string | undefined
  /** A `Granted<operation>`, made by `Access.check`. */
  readonly grant: unknown
}

export class CurrentRequestAuthorization extends Context.Reference<CurrentRequestAuthorization>()(
  "acs/CurrentRequestAuthorization",
  { defaultValue: (): Option.Option<RequestAuthorization> => Option.none() }
) {}
