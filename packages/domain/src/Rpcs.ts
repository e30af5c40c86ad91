/**
 * The typed RPC surface (`/rpc`, @effect/rpc): one procedure per operation, generated from the HttpApi
 * declaration, so RPC and REST share names, schemas and errors. A procedure's payload is the endpoint's
 * request as one object — `{path, urlParams, payload, headers}`, each present when the endpoint has it —
 * and it succeeds with the endpoint's success type or fails with one of the SPEC error classes.
 */
import type { HttpApi, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Rpc, RpcGroup, type RpcSchema } from "@effect/rpc"
import { Either, Option, Schema } from "effect"
import { Api, unauthenticatedGroups } from "./Api.ts"
import { AcsErrorSchema } from "./Errors.ts"
import { Event, type EventStreamHeaders, type EventStreamParams } from "./Events.ts"

/** Every SPEC error, as the procedures fail with it: derived from the one table in Errors.ts. */
export { AcsErrorSchema }

type Groups = typeof Api extends HttpApi.HttpApi<infer _Id, infer G, infer _E, infer _R> ? G : never
type OperationGroups = Exclude<Groups, HttpApiGroup.HttpApiGroup.WithName<Groups, "system" | "publicAuth">>
type Endpoints = HttpApiGroup.HttpApiGroup.Endpoints<OperationGroups>

/** Only the parts an endpoint has (no path params, no `path`); a part whose fields are all optional may be left out. */
type Part<K extends string, A> = [A] extends [never] ? unknown
  : Partial<A> extends A ? { readonly [P in K]?: A }
  : { readonly [P in K]: A }

export type OperationInput<Path, UrlParams, Payload, Headers> =
  & Part<"path", Path>
  & Part<"urlParams", UrlParams>
  & Part<"payload", Payload>
  & Part<"headers", Headers>

type RpcOf<E> = E extends HttpApiEndpoint.HttpApiEndpoint<
  infer Name,
  infer _Method,
  infer Path,
  infer UrlParams,
  infer Payload,
  infer Headers,
  infer Success,
  infer _Error,
  infer _R,
  infer _RE
> ? Rpc.Rpc<Name, Schema.Schema<OperationInput<Path, UrlParams, Payload, Headers>, unknown>, Schema.Schema<Success, unknown>, typeof AcsErrorSchema>
  : never

/**
 * The procedures that stream: REST serves them as Server-Sent Events, RPC as a stream of chunks, one event
 * each (the endpoint's text body is REST's framing, not the procedure's answer).
 */
export const streamingOperations: ReadonlySet<string> = new Set(["streamEvents"])

type StreamEventsRpc = Rpc.Rpc<
  "streamEvents",
  Schema.Schema<OperationInput<never, typeof EventStreamParams.Type, never, typeof EventStreamHeaders.Type>, unknown>,
  RpcSchema.Stream<typeof Event, typeof AcsErrorSchema>,
  typeof Schema.Never
>

export type OperationRpcs = Exclude<RpcOf<Endpoints>, { readonly _tag: "streamEvents" }> | StreamEventsRpc

/** The API's schemas need no services; the generic endpoint type (`AnyWithProps`) cannot say so. */
type ContextFree = Schema.Schema<unknown, unknown, never>

/** A part whose fields are all optional may be left out, as its type says. */
const part = (name: string, schema: Option.Option<ContextFree>) =>
  Option.match(schema, {
    onNone: () => ({}),
    onSome: (s) => ({ [name]: Either.isRight(Schema.decodeUnknownEither(s)({})) ? Schema.optional(s) : s })
  })

const rpcFor = (endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps) => {
  const payload = Schema.Struct({
    ...part("path", endpoint.pathSchema as Option.Option<ContextFree>),
    ...part("urlParams", endpoint.urlParamsSchema as Option.Option<ContextFree>),
    ...part("payload", endpoint.payloadSchema as Option.Option<ContextFree>),
    ...part("headers", endpoint.headersSchema as Option.Option<ContextFree>)
  })
  return streamingOperations.has(endpoint.name)
    ? Rpc.make(endpoint.name, { payload, success: Event, error: AcsErrorSchema, stream: true })
    : Rpc.make(endpoint.name, { payload, success: endpoint.successSchema as ContextFree, error: AcsErrorSchema })
}

/** The endpoints behind the procedures, by operation name: what the server dispatches to. */
export const operationEndpoints: ReadonlyMap<string, HttpApiEndpoint.HttpApiEndpoint.AnyWithProps> = new Map(
  Object.values(Api.groups)
    .filter((group) => !unauthenticatedGroups.includes(group.identifier))
    .flatMap((group) => Object.values(group.endpoints))
    .map((endpoint) => [endpoint.name, endpoint] as const)
)

/** The procedures as built at run time, for the server, which dispatches every one the same way. */
export const operationRpcGroup = RpcGroup.make(...[...operationEndpoints.values()].map(rpcFor))

// The same procedures with their types derived from the endpoints' types above, for typed clients; the
// compiler cannot connect a loop over the endpoints to those types, hence the one assertion.
export const AcsRpcs = operationRpcGroup as unknown as RpcGroup.RpcGroup<OperationRpcs>
