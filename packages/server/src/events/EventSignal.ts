/**
 * Wakes this instance's event readers (live streams, webhook delivery workers) when events got their
 * positions: sequenced here, or announced by another instance's sequencer (`NOTIFY acs_events`).
 */
import { Effect, PubSub, Queue, type Scope } from "effect"

/** Notified when events were sequenced or a delivery was queued, by whichever instance did it. */
export const EVENTS_CHANNEL = "acs_events"
/** Its payloads (never empty: @effect/sql-pg's `listen` drops a notification with an empty payload). */
export const EVENTS_SEQUENCED = "sequenced"
export const DELIVERY_QUEUED = "delivery"

export class EventSignal extends Effect.Service<EventSignal>()("acs/EventSignal", {
  effect: Effect.gen(function*() {
    // Sliding: a reader that is busy misses nothing by skipping wakes; it reads from its cursor when it looks.
    const hub = yield* PubSub.sliding<void>(4)
    const wake = PubSub.publish(hub, undefined).pipe(Effect.asVoid)
    /** A subscription; `next(ms)` waits for a wake or `ms`, whichever comes first. */
    const subscribe: Effect.Effect<{ readonly next: (ms: number) => Effect.Effect<void> }, never, Scope.Scope> = Effect.map(
      PubSub.subscribe(hub),
      (queue) => ({ next: (ms: number) => Effect.raceFirst(Queue.take(queue), Effect.sleep(ms)).pipe(Effect.asVoid) })
    )
    return { wake, subscribe } as const
  })
}) {}
