/**
 * The typed REST client: `HttpApiClient` derived from the HttpApi declaration the server implements, with an
 * API key or a session cookie. Tests of behaviour use it: the contract's schemas decode every answer, and a refusal is the error
 * class of its envelope. Tests of the wire (statuses, headers, exact bodies) keep `call` (server.ts).
 */
import { Api } from "@acs/domain/Api"
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect } from "effect"

/** An API key, or a person's session cookie (`acs_session=…`). */
export type Credential = string | { readonly cookie: string }

const UNSAFE: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"])

/** The credential on every request; with a cookie, every unsafe method says JSON, as a same-origin client does. */
const presenting = (credential: Credential) =>
  HttpClient.mapRequest((request) =>
    typeof credential === "string"
      ? HttpClientRequest.bearerToken(request, credential)
      : UNSAFE.has(request.method)
      ? HttpClientRequest.setHeaders(request, { cookie: credential.cookie, "content-type": "application/json" })
      : HttpClientRequest.setHeader(request, "cookie", credential.cookie)
  )

const makeClient = (baseUrl: string, credential: Credential) => HttpApiClient.make(Api, { baseUrl, transformClient: presenting(credential) })

export type ApiClient = Effect.Effect.Success<ReturnType<typeof makeClient>>

/** Runs `use` with the typed client of the server at `baseUrl` (its origin, as `RunningServer.baseUrl`). */
export const withApi = <A, E>(baseUrl: string, credential: Credential, use: (client: ApiClient) => Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(Effect.flatMap(makeClient(baseUrl, credential), use).pipe(Effect.provide(FetchHttpClient.layer)))
