/**
 * What a REST endpoint adds to its operation, by operation (http/OperationGroups.ts): each typed as its own
 * endpoint's handler (the endpoint's decoded input in; its answer, or a response, out).
 */
import type { Api } from "@acs/domain/Api"
import type { OperationName } from "@acs/domain/Operations"
import type { HttpApi, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"

type Groups = typeof Api extends HttpApi.HttpApi<infer _Id, infer G, infer _E, infer _R> ? G : never
type Endpoints = HttpApiGroup.HttpApiGroup.Endpoints<Groups>

export type RestExtras = {
  readonly [Op in OperationName]?: HttpApiEndpoint.HttpApiEndpoint.HandlerWithName<Endpoints, Op, unknown, unknown>
}
