/**
 * How many event streams may be open at once (docs/contract.md 6): at most EVENTS_MAX_STREAMS_PER_PRINCIPAL per key and
 * per person (a person's sessions together), and EVENTS_MAX_STREAMS_PER_INSTANCE on this instance, whichever
 * surface opened them (GET /events/stream, the RPC procedure `streamEvents`). A stream holds its slot in the
 * scope it was opened in and gives it back when that scope closes, however the stream ends: the client went
 * away, its credential was revoked, the instance is stopping. One more is 429 `rate_limited`.
 */
import type { Principal } from "@acs/domain/Principal"
import { RateLimited } from "@acs/domain/Errors"
import { Config, Effect, type Scope } from "effect"
import { countRateLimited } from "../telemetry/Metrics.ts"

export const StreamSlotsConfig = Config.all({
  perPrincipal: Config.integer("EVENTS_MAX_STREAMS_PER_PRINCIPAL").pipe(
    Config.withDefault(5),
    Config.validate({ message: "EVENTS_MAX_STREAMS_PER_PRINCIPAL must be at least 1", validation: (n) => n >= 1 })
  ),
  perInstance: Config.integer("EVENTS_MAX_STREAMS_PER_INSTANCE").pipe(
    Config.withDefault(1_000),
    Config.validate({ message: "EVENTS_MAX_STREAMS_PER_INSTANCE must be 0 (no streams here) or more", validation: (n) => n >= 0 })
  )
})

/**
 * What a refused caller is told to wait: a slot frees only when one of the open streams ends, which a quick
 * retry does not hasten (the console tries again every 15 s and reads meanwhile).
 */
export const STREAM_RETRY_AFTER_MS = 10_000

export class StreamSlots extends Effect.Service<StreamSlots>()("acs/StreamSlots", {
  effect: Effect.gen(function*() {
    const limits = yield* StreamSlotsConfig
    const held = new Map<string, number>()
    let open = 0

    const refuse = (message: string) =>
      Effect.zipRight(countRateLimited("streams"), Effect.fail(new RateLimited({ message, retry_after_ms: STREAM_RETRY_AFTER_MS })))

    /** A slot for one stream of `principal`, held until the caller's scope closes; RateLimited when none is free. */
    const take = (principal: Principal): Effect.Effect<void, RateLimited, Scope.Scope> => {
      const holder = `${principal.kind}:${principal.id}`
      return Effect.acquireRelease(
        Effect.suspend(() => {
          const mine = held.get(holder) ?? 0
          if (mine >= limits.perPrincipal) {
            return refuse(
              `at most ${limits.perPrincipal} event streams may be open at once per ${principal.kind}; close one (or wait for one to end) and retry`
            )
          }
          if (open >= limits.perInstance) return refuse(`this instance serves at most ${limits.perInstance} event streams at once; retry later`)
          held.set(holder, mine + 1)
          open++
          return Effect.void
        }),
        () =>
          Effect.sync(() => {
            const mine = (held.get(holder) ?? 1) - 1
            if (mine === 0) held.delete(holder)
            else held.set(holder, mine)
            open--
          })
      )
    }

    return { take, open: () => open, limits } as const
  })
}) {}
