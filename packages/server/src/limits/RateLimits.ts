/**
 * SPEC 8 rate limits, per principal and per running instance: a fixed one-minute window per bucket.
 * Successful calls get the `RateLimit-*` headers; a refusal is 429 `rate_limited` with `retry_after_ms`.
 */
import type { Bucket } from "@acs/domain/Operations"
import { RateLimited } from "@acs/domain/Errors"
import { RateLimiter } from "@effect/experimental"
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Config, Duration, Effect, Layer } from "effect"

export interface Limits {
  readonly read: number
  readonly write: number
  readonly expensive: number
  readonly login: number
  /** Logins from one address: ten times the per-email limit, since offices share an address. */
  readonly loginAddress: number
}

type LimitBucket = Bucket | "login" | "loginAddress"

const WINDOW = Duration.minutes(1)

const LimitsConfig = Config.all({
  read: Config.integer("RATE_LIMIT_READ").pipe(Config.withDefault(120)),
  write: Config.integer("RATE_LIMIT_WRITE").pipe(Config.withDefault(30)),
  expensive: Config.integer("RATE_LIMIT_EXPENSIVE").pipe(Config.withDefault(10)),
  login: Config.integer("RATE_LIMIT_LOGIN").pipe(Config.withDefault(10))
}).pipe(Config.map((limits): Limits => ({ ...limits, loginAddress: limits.login * 10 })))

export class RateLimits extends Effect.Service<RateLimits>()("acs/RateLimits", {
  effect: Effect.gen(function*() {
    const limiter = yield* RateLimiter.RateLimiter
    const limits: Limits = yield* LimitsConfig

    /** Counts one call against `bucket` for `subject`; fails with RateLimited when the window is full. */
    const consume = (subject: string, bucket: LimitBucket) =>
      limiter.consume({ key: `${bucket}:${subject}`, limit: limits[bucket], window: WINDOW }).pipe(
        Effect.catchAll((error) =>
          error._tag === "RateLimiterError" && error.reason === "Exceeded"
            ? Effect.fail(
              new RateLimited({
                message: `rate limit of ${limits[bucket]} ${bucket} calls per minute exceeded; retry after the delay`,
                retry_after_ms: Math.max(1, Math.ceil(Duration.toMillis(error.retryAfter)))
              })
            )
            : Effect.die(error)
        ),
        Effect.map((result) => ({ bucket, limit: limits[bucket], remaining: result.remaining, resetAfter: result.resetAfter }))
      )

    /** Consumes and, on HTTP, attaches the RateLimit-* headers to the response. */
    const consumeWithHeaders = (subject: string, bucket: LimitBucket) =>
      consume(subject, bucket).pipe(
        Effect.tap((result) =>
          HttpApp.appendPreResponseHandler((_request, response) =>
            Effect.succeed(HttpServerResponse.setHeaders(response, {
              "ratelimit-limit": String(result.limit),
              "ratelimit-remaining": String(Math.max(0, result.remaining)),
              "ratelimit-reset": String(Math.ceil(Duration.toSeconds(result.resetAfter))),
              "ratelimit-policy": `${result.limit};w=60;name="${result.bucket}"`
            }))
          )
        )
      )

    return { consume, consumeWithHeaders, limits } as const
  }),
  dependencies: [RateLimiter.layer.pipe(Layer.provide(RateLimiter.layerStoreMemory))]
}) {}
