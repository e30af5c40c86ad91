/**
 * The typed REST client: `HttpApiClient` derived from the HttpApi declaration the server implements, with an
 * API key. Tests of behaviour use it: the contract's schemas decode every answer, and a refusal is the error
 * class of its envelope. Tests of the wire (statuses, headers, exact bodies) keep `call` (server.ts).
 */
import { Api } from "@acs/domain/Api"
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect } from "effect"

const makeClient = (baseUrl: string, key: string) =>
  HttpApiClient.make(Api, { baseUrl, transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(key)) })

export type ApiClient = Effect.Effect.Success<ReturnType<typeof makeClient>>

/** Runs `use` with `key`'s typed client of the server at `baseUrl` (its origin, as `RunningServer.baseUrl`). */
export const withApi = <A, E>(baseUrl: string, key: string, use: (client: ApiClient) => Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(Effect.flatMap(makeClient(baseUrl, key), use).pipe(Effect.provide(FetchHttpClient.layer)))
