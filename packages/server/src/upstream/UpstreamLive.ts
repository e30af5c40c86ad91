/**
 * The `Upstream` port wired to the Apple Search Ads client: real Apple endpoints for Apple credentials,
 * the simulator's for `{provider: "simulator"}` (the in-process one, or SIMULATOR_URL).
 */
import { ConnectionError } from "@acs/domain/Errors"
import { makeAppleSearchAdsClient } from "@acs/upstream/AppleSearchAdsClient"
import { makeAppleAdsPlatformClient } from "@acs/upstream/v1/AppleAdsPlatformClient"
import type { AppleCredentials } from "@acs/upstream/ClientSecret"
import { Upstream, type UpstreamCredentials } from "@acs/upstream/Upstream"
import { appleEndpoints, defaultRetryPolicy } from "@acs/upstream/UpstreamHttp"
import { HttpClient } from "@effect/platform"
import { Config, Context, Effect, Layer, Option } from "effect"

/** Where the simulator answers and the demo credentials it accepts. */
export class SimulatorEndpoint extends Context.Tag("acs/SimulatorEndpoint")<SimulatorEndpoint, {
  readonly url: string
  readonly credentials: AppleCredentials
}>() {}

const PolicyConfig = Config.all({
  timeoutMs: Config.integer("UPSTREAM_TIMEOUT_MS").pipe(Config.withDefault(defaultRetryPolicy.timeoutMs)),
  maxRetries: Config.integer("UPSTREAM_MAX_RETRIES").pipe(Config.withDefault(defaultRetryPolicy.maxRetries)),
  baseDelayMs: Config.integer("UPSTREAM_RETRY_BASE_MS").pipe(Config.withDefault(defaultRetryPolicy.baseDelayMs)),
  maxDelayMs: Config.integer("UPSTREAM_RETRY_MAX_MS").pipe(Config.withDefault(defaultRetryPolicy.maxDelayMs))
})

export const UpstreamLive = Layer.effect(
  Upstream,
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const simulator = yield* Effect.serviceOption(SimulatorEndpoint)
    const policy = yield* PolicyConfig
    const apple = {
      apiBaseUrl: yield* Config.string("APPLE_API_URL").pipe(Config.withDefault(appleEndpoints.apiBaseUrl)),
      tokenUrl: yield* Config.string("APPLE_TOKEN_URL").pipe(Config.withDefault(appleEndpoints.tokenUrl))
    }
    return {
      connect: (credentials: UpstreamCredentials) =>
        (credentials.provider === "apple"
          ? makeAppleSearchAdsClient(apple, credentials, policy)
          : Option.match(simulator, {
            onNone: () =>
              Effect.fail(new ConnectionError({ message: "the simulator is not running here (UPSTREAM=apple); connect Apple credentials" })),
            onSome: (endpoint) =>
              makeAppleAdsPlatformClient(
                { apiBaseUrl: `${endpoint.url}/v1`, tokenUrl: `${endpoint.url}/auth/oauth2/token` },
                endpoint.credentials,
                policy
              )
          })).pipe(Effect.provideService(HttpClient.HttpClient, client))
    }
  }).pipe(Effect.orDie)
)
