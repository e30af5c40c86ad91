/**
 * The types of an operation, derived from its HttpApi endpoint (packages/domain/src/Api.ts): its input
 * (`{path, urlParams, payload, headers}`, the parts the endpoint has, as RPC carries them), its success and
 * its errors (the endpoint's, its group's and the API's). An operation handler takes the operation's
 * `Granted<op>`, which only `Access.check` makes, so a surface that skips the check does not compile.
 */
import type { Api } from "@acs/domain/Api"
import type { OperationName } from "@acs/domain/Operations"
import type { OperationInput } from "@acs/domain/Rpcs"
import type { HttpApi, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import type { Effect } from "effect"
import type { Granted } from "../auth/Access.ts"

type ApiGroups = typeof Api extends HttpApi.HttpApi<infer _Id, infer G, infer _E, infer _R> ? G : never
type ApiError = typeof Api extends HttpApi.HttpApi<infer _Id, infer _G, infer E, infer _R> ? E : never
type OperationGroups = Exclude<ApiGroups, HttpApiGroup.HttpApiGroup.WithName<ApiGroups, "system" | "publicAuth">>

/** The handler type of each endpoint of one group, by operation name. */
type GroupHandlers<G> = G extends HttpApiGroup.HttpApiGroup<infer _Id, infer Endpoints, infer GroupError, infer _R, infer _TopLevel>
  ? {
    readonly [E in Endpoints as E["name"]]: E extends HttpApiEndpoint.HttpApiEndpoint<
      infer Name,
      infer _Method,
      infer Path,
      infer UrlParams,
      infer Payload,
      infer Headers,
      infer Success,
      infer Error,
      infer _R2,
      infer _RE
    > ? {
        readonly input: OperationInput<Path, UrlParams, Payload, Headers>
        readonly success: Success
        readonly error: Error | GroupError | ApiError
        readonly name: Name
      }
      : never
  }
  : never

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never

/** Every operation's input, success and error types, by operation name. */
type OperationTypes = UnionToIntersection<GroupHandlers<OperationGroups>>

export type Input<Op extends OperationName> = OperationTypes[Op]["input"]
export type Success<Op extends OperationName> = OperationTypes[Op]["success"]
export type Failure<Op extends OperationName> = OperationTypes[Op]["error"]

/** One operation as a service method: the grant of the operation, the decoded input, the answer. */
export type OperationHandler<Op extends OperationName> = (grant: Granted<Op>, input: Input<Op>) => Effect.Effect<Success<Op>, Failure<Op>>

/** The operation map: one handler per operation of the table. */
export type OperationHandlerMap = { readonly [Op in OperationName]: OperationHandler<Op> }
