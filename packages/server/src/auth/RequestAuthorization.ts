/**
 * What the front door established for the request in hand: the caller, and the grant of the operation the
 * request names. The API's authentication middleware and the handler's `Access.check` take them from here
 * instead of checking twice (which would also charge the rate limit twice).
 */
import type { OperationName } from "@acs/domain/Operations"
import type { Principal } from "@acs/domain/Principal"
import { FiberRef, Option } from "effect"

export interface RequestAuthorization {
  readonly principal: Principal
  readonly operation: OperationName
  readonly projectId: string | undefined
  /** A `Granted<operation>`, made by `Access.check`. */
  readonly grant: unknown
}

export const currentRequestAuthorization = FiberRef.unsafeMake<Option.Option<RequestAuthorization>>(Option.none())
