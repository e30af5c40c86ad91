/** Runs one step of the sync, logging how long it took (debug): where a slow sync spends its time. */
import { Duration, Effect } from "effect"

export const timed = <A, E, R>(step: string, effect: Effect.Effect<A, E, R>) =>
  Effect.timed(effect).pipe(
    Effect.tap(([duration]) => Effect.logDebug("sync step").pipe(Effect.annotateLogs({ step, ms: Math.round(Duration.toMillis(duration)) }))),
    Effect.map(([, a]) => a)
  )
