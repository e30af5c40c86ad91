/**
 * The `Upstream` port wired to Apple's clients, per connection API version (v1: Apple Ads Platform API,
 * v5: Campaign Management API): real Apple endpoints for Apple credentials, the simulator's for
 * `{provider: "simulator"}` (the in-process one, or SIMULATOR_URL). Every client reports an exhausted request budget
 * to the RateLimitObserver when one is provided (warehouse/CredentialLimits.ts).
 */
import { ConnectionError } from "@acs/domain/Errors"
import type { AppleCredentials } from "@acs/upstream/ClientSecret"
import { makeUpstreamClient } from "@acs/upstream/MakeUpstreamClient"
import { Upstream, type UpstreamApiVersion, type UpstreamCredentials } from "@acs/upstream/Upstream"
import { appleEndpoints, appleV1Endpoints, defaultRetryPolicy, type Endpoints } from "@acs/upstream/UpstreamHttp"
import { RateLimitObserver } from "@acs/upstream/UpstreamRateLimits"
import { UpstreamTransport } from "@acs/upstream/UpstreamTransport"
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

const AppleConfig = Config.all({
  v1ApiBaseUrl: Config.string("APPLE_V1_API_URL").pipe(Config.withDefault(appleV1Endpoints.apiBaseUrl)),
  v5ApiBaseUrl: Config.string("APPLE_API_URL").pipe(Config.withDefault(appleEndpoints.apiBaseUrl)),
  tokenUrl: Config.string("APPLE_TOKEN_URL").pipe(Config.withDefault(appleEndpoints.tokenUrl))
})

export const UpstreamLive = Layer.effect(
  Upstream,
  Effect.gen(function*() {
    const transport = yield* UpstreamTransport
    const simulator = yield* Effect.serviceOption(SimulatorEndpoint)
    const observer = yield* Effect.serviceOption(RateLimitObserver)

    const policy = yield* PolicyConfig
    const apple = yield* AppleConfig
    const appleEndpointsFor = (version: UpstreamApiVersion): Endpoints => ({
      apiBaseUrl: version === "v1" ? apple.v1ApiBaseUrl : apple.v5ApiBaseUrl,
      tokenUrl: apple.tokenUrl
    })
    const simulatorEndpointsFor = (url: string, version: UpstreamApiVersion): Endpoints => ({
      apiBaseUrl: version === "v1" ? `${url}/v1` : `${url}/api/v5`,
      tokenUrl: `${url}/auth/oauth2/token`
    })
    return {
      connect: (credentials: UpstreamCredentials) =>
        (credentials.provider === "apple"
          ? makeUpstreamClient(credentials.apiVersion, appleEndpointsFor(credentials.apiVersion), credentials, policy)
          : Option.match(simulator, {
            onNone: () =>
              Effect.fail(new ConnectionError({ message: "the simulator is not running here (UPSTREAM=apple); connect Apple credentials" })),
            onSome: (endpoint) =>
              makeUpstreamClient(
                credentials.apiVersion,
                simulatorEndpointsFor(endpoint.url, credentials.apiVersion),
                endpoint.credentials,
                policy
              )
          })).pipe(
          Effect.provideService(UpstreamTransport, transport),
          (made) => Option.isSome(observer) ? Effect.provideService(made, RateLimitObserver, observer.value) : made
        )
    }
  }).pipe(Effect.orDie)
)
