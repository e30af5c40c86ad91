/**
 * docs/contract.md 8 rate limits, per principal and per running instance: a fixed one-minute window per bucket.
 * Successful calls get the `RateLimit-*` headers; a refusal is 429 `rate_limited` with `retry_after_ms`.
 * The windows live in FixedWindows, which forgets each one when it ends.
 */
import type { Bucket } from "@acs/domain/Operations"
import { RateLimited } from "@acs/domain/Errors"
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Config, Duration, Effect } from "effect"
import { countRateLimited } from "../telemetry/Metrics.ts"
import { FixedWindows, WINDOW } from "./FixedWindows.ts"

export interface Limits {
  readonly read: number
  readonly write: number
  readonly expensive: number
  readonly login: number
  /** Logins from one address: ten times the per-email limit, since offices share an address. */
  readonly loginAddress: number
}

type LimitBucket = Bucket | "login" | "loginAddress"

export interface Consumed {
  readonly bucket: LimitBucket
  readonly limit: number
  readonly remaining: number
  readonly resetAfterMs: number
}

const WINDOW_SECONDS = Duration.toSeconds(WINDOW)

const LimitsConfig = Config.all({
  read: Config.integer("RATE_LIMIT_READ").pipe(Config.withDefault(120)),
  write: Config.integer("RATE_LIMIT_WRITE").pipe(Config.withDefault(30)),
  expensive: Config.integer("RATE_LIMIT_EXPENSIVE").pipe(Config.withDefault(10)),
  login: Config.integer("RATE_LIMIT_LOGIN").pipe(Config.withDefault(10))
}).pipe(Config.map((limits): Limits => ({ ...limits, loginAddress: limits.login * 10 })))

export class RateLimits extends Effect.Service<RateLimits>()("acs/RateLimits", {
  effect: Effect.gen(function*() {
    const windows = yield* FixedWindows
    const limits: Limits = yield* LimitsConfig

    /** Counts one call against `bucket` for `subject`; fails with RateLimited when the window is full. */
    const consume = (subject: string, bucket: LimitBucket): Effect.Effect<Consumed, RateLimited> =>
      Effect.flatMap(windows.consume(`${bucket}:${subject}`, limits[bucket]), (result) =>
        result._tag === "Refused"
          ? Effect.zipRight(
            countRateLimited(bucket),
            Effect.fail(
              new RateLimited({
                message: `rate limit of ${limits[bucket]} ${bucket} calls per minute exceeded; retry after the delay`,
                retry_after_ms: Math.max(1, Math.ceil(result.retryAfterMs))
              })
            )
          )
          : Effect.succeed({ bucket, limit: limits[bucket], remaining: result.remaining, resetAfterMs: result.resetAfterMs }))

    /** On HTTP, attaches the RateLimit-* headers of `result` to the response. */
    const attachHeaders = (result: Consumed) =>
      HttpApp.appendPreResponseHandler((_request, response) =>
        Effect.succeed(HttpServerResponse.setHeaders(response, {
          "ratelimit-limit": String(result.limit),
          "ratelimit-remaining": String(Math.max(0, result.remaining)),
          "ratelimit-reset": String(Math.ceil(result.resetAfterMs / 1000)),
          "ratelimit-policy": `${result.limit};w=${WINDOW_SECONDS};name="${result.bucket}"`
        }))
      )

    /** Consumes and, on HTTP, attaches the RateLimit-* headers to the response. */
    const consumeWithHeaders = (subject: string, bucket: LimitBucket) => Effect.tap(consume(subject, bucket), attachHeaders)

    /**
     * A sign-in attempt: the client address's bucket first, so an address over its limit is refused
     * before a window is opened for the (attacker-chosen, unbounded) email. Answers the email's bucket.
     */
    const consumeLogin = (email: string, address: string) =>
      Effect.zipRight(consume(`address:${address}`, "loginAddress"), consume(`email:${email.toLowerCase()}`, "login"))

    return { consume, consumeWithHeaders, consumeLogin, attachHeaders, limits, openWindows: windows.size } as const
  }),
  dependencies: [FixedWindows.Default]
}) {}
