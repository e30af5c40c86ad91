/**
 * The current-password check of `POST /auth/password`, limited like a sign-in (docs/decisions/access-and-keys.md): a stolen session
 * could otherwise guess the person's password at the write bucket's pace and then take the account over. At
 * most RATE_LIMIT_PASSWORD_CHECK attempts (default 5) per person per 15 minutes, right or wrong, counted per
 * instance as sign-ins are; keyed by the person, so a new session does not start a new count. Past it: 429
 * `rate_limited` with `Retry-After`.
 */
import { RateLimited } from "@acs/domain/Errors"
import { Config, Duration, Effect } from "effect"
import { countRateLimited } from "../telemetry/Metrics.ts"
import { makeFixedWindows } from "./FixedWindows.ts"

export const PASSWORD_CHECK_WINDOW = Duration.minutes(15)

export class PasswordAttempts extends Effect.Service<PasswordAttempts>()("acs/PasswordAttempts", {
  scoped: Effect.gen(function*() {
    const windows = yield* makeFixedWindows(PASSWORD_CHECK_WINDOW)
    const limit = yield* Config.integer("RATE_LIMIT_PASSWORD_CHECK").pipe(Config.withDefault(5))

    /** Counts one check of `personId`'s current password; refused once the window holds `limit` of them. */
    const consume = (personId: string): Effect.Effect<void, RateLimited> =>
      Effect.flatMap(windows.consume(personId, limit), (result) =>
        result._tag === "Allowed"
          ? Effect.void
          : Effect.zipRight(
            countRateLimited("password"),
            Effect.fail(
              new RateLimited({
                message: `at most ${limit} current-password attempts per 15 minutes for a person; retry after the delay`,
                retry_after_ms: Math.max(1, Math.ceil(result.retryAfterMs))
              })
            )
          ))

    return { consume } as const
  })
}) {}
