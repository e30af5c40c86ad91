/**
 * The in-memory store behind the rate limits: one fixed window per key (one minute for the docs/contract.md 8 buckets),
 * counted from the key's first call. Unlike @effect/experimental's memory store, which keeps every key it has
 * ever seen, a window is dropped once it has ended, so memory holds only the windows still open (a flood of
 * unique login emails grew the heap without bound: docs/decisions/access-and-keys.md). Time comes from `Clock`, so TestClock drives it.
 */
import { Clock, Duration, Effect, Schedule } from "effect"

export const WINDOW = Duration.minutes(1)

export type WindowResult =
  | { readonly _tag: "Allowed"; readonly remaining: number; readonly resetAfterMs: number }
  | { readonly _tag: "Refused"; readonly retryAfterMs: number }

interface Window {
  count: number
  readonly resetAt: number
}

/** A store whose windows all last `length`; its sweep runs for the life of the scope. */
export const makeFixedWindows = (length: Duration.Duration) =>
  Effect.gen(function*() {
    const WINDOW_MS = Duration.toMillis(length)
    const windows = new Map<string, Window>()

    // Every window has the same length and a Map iterates in insertion order, so the windows opened
    // first end first: dropping ended ones from the front is amortised O(1) per call. A wall clock that
    // steps back can leave a few ended windows behind the front; the periodic full sweep takes those.
    const dropEndedFromFront = (now: number) => {
      for (const [key, window] of windows) {
        if (window.resetAt > now) return
        windows.delete(key)
      }
    }
    const dropAllEnded = (now: number) => {
      for (const [key, window] of windows) if (window.resetAt <= now) windows.delete(key)
    }

    // An idle instance frees the windows of its last burst too, not only on the next call.
    yield* Clock.currentTimeMillis.pipe(
      Effect.map(dropAllEnded),
      Effect.repeat(Schedule.spaced(length)),
      Effect.forkScoped
    )

    /** Counts one call for `key`; refused (and not counted) once `limit` calls were made in its window. */
    const consume = (key: string, limit: number): Effect.Effect<WindowResult> =>
      Effect.map(Clock.currentTimeMillis, (now): WindowResult => {
        dropEndedFromFront(now)
        let window = windows.get(key)
        if (window !== undefined && window.resetAt <= now) {
          windows.delete(key)
          window = undefined
        }
        if (window === undefined) {
          // A zero limit refuses without keeping anything.
          if (limit < 1) return { _tag: "Refused", retryAfterMs: WINDOW_MS }
          // Re-inserting (rather than resetting in place) keeps the Map in opening order.
          window = { count: 0, resetAt: now + WINDOW_MS }
          windows.set(key, window)
        }
        if (window.count >= limit) return { _tag: "Refused", retryAfterMs: window.resetAt - now }
        window.count += 1
        return { _tag: "Allowed", remaining: limit - window.count, resetAfterMs: window.resetAt - now }
      })

    /** How many windows are held, after dropping the ended ones (tests and the benchmark). */
    const size: Effect.Effect<number> = Effect.map(Clock.currentTimeMillis, (now) => {
      dropAllEnded(now)
      return windows.size
    })

    return { consume, size } as const
  })

/** The one-minute windows of the docs/contract.md 8 buckets and sign-in. */
export class FixedWindows extends Effect.Service<FixedWindows>()("acs/FixedWindows", {
  scoped: makeFixedWindows(WINDOW)
}) {}
