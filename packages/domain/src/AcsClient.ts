/**
 * The typed client of acs for internal services: every operation of the REST API as a method, over `/rpc`,
 * authenticated with an API key. `AcsClient.layer({ url, key })` provides it; failures are the SPEC error
 * classes of Errors.ts (branch on `_tag`), or an `RpcClientError` when acs cannot be reached.
 */
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import type { RpcClientError } from "@effect/rpc/RpcClientError"
import { Context, Layer } from "effect"
import { AcsRpcs, type OperationRpcs } from "./Rpcs.ts"

export const RPC_PATH = "/rpc"

export class AcsClient extends Context.Tag("acs/AcsClient")<AcsClient, RpcClient.RpcClient<OperationRpcs, RpcClientError>>() {
  /** `url`: where acs answers, e.g. `http://127.0.0.1:3000`; `key`: an API key (`acs_…`). */
  static readonly layer = (options: { readonly url: string; readonly key: string }) =>
    Layer.scoped(AcsClient, RpcClient.make(AcsRpcs)).pipe(
      Layer.provide(RpcClient.layerProtocolHttp({
        url: `${options.url.replace(/\/$/, "")}${RPC_PATH}`,
        transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(options.key))
      })),
      Layer.provide(RpcSerialization.layerNdjson),
      Layer.provide(FetchHttpClient.layer)
    )
}
