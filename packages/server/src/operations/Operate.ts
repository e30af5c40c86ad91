/**
 * Calling an operation as a surface does: `Access.check` for the operation on the account the input names,
 * then the operation's handler with the grant. The one way from a surface to a service method.
 */
import { type OperationName, Operations } from "@acs/domain/Operations"
import { Effect } from "effect"
import { Access, type Granted } from "../auth/Access.ts"
import { HOT_SPAN } from "../db/HotSpan.ts"
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

export const makeOperate = Effect.gen(function*() {
  const access = yield* Access
  const handlers: OperationHandlerMap = yield* OperationHandlers

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

  return { withGrant, run, handler } as const
})

const stringOrUndefined = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)
