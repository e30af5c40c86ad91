/**
 * Wakes this instance's event readers when events got their positions, sequenced here or announced by another
 * instance's sequencer (`NOTIFY acs_events`): every live stream (a broadcast), and one idle webhook delivery
 * worker when deliveries were queued with them (a full batch, once recorded, wakes the next one at once). Waking
 * one worker, not all, keeps the others from each running an empty claim per pass of the sequencer.
 */
import { Effect, PubSub, Queue, type Scope } from "effect"

/** Notified when events were sequenced or a delivery was queued, by whichever instance did it. */
export const EVENTS_CHANNEL = "acs_events"

/**
 * A notification's payload: `d:` when deliveries were queued, `e:` when only events were sequenced, then who
 * sent it (an instance ignores its own: it woke its readers already). Never empty: @effect/sql-pg's `listen`
 * drops a notification whose payload is empty. The sequencing function (migration 0018) writes the same.
 */
export const notification = (sender: string, deliveries: boolean) => `${deliveries ? "d" : "e"}:${sender}`

/** What a notification asks of this instance's readers. */
export const readNotification = (payload: string) => ({ deliveries: payload.startsWith("d:"), sender: payload.slice(2) })

export class EventSignal extends Effect.Service<EventSignal>()("acs/EventSignal", {
  effect: Effect.gen(function*() {
    // Sliding: a reader that is busy misses nothing by skipping wakes; it reads from its cursor when it looks.
    const streams = yield* PubSub.sliding<void>(4)
    // One wake for one waiting delivery worker; wakes while all are busy collapse into one.
    const deliveries = yield* Queue.sliding<void>(1)
    // While a woken worker gathers, its claim at the end takes whatever later wakes announce: they wake nobody
    // (a wake costs a worker a fiber's turn and a claim, even one that finds nothing).
    let gathering = false
    const wakeDeliveries = Effect.suspend(() => gathering ? Effect.void : Queue.offer(deliveries, undefined).pipe(Effect.asVoid))
    // A backlog to claim (a full batch recorded with more behind it): the next claim gathers nothing. Sent
    // through the gather's own queue while one runs, which ends it at once.
    let hurried = false
    const hurry = yield* Queue.sliding<void>(1)
    /**
     * A woken delivery worker's gather: `ms` during which the deliveries queued join its claim; none when a backlog
     * waits (`hurryDeliveries`), and cut short when one comes meanwhile.
     */
    const gatherDeliveries = (ms: number) =>
      Effect.suspend(() => {
        if (hurried) return Effect.sync(() => (hurried = false))
        return Effect.acquireUseRelease(
          Queue.takeAll(hurry).pipe(Effect.zipRight(Effect.sync(() => (gathering = true)))),
          () => Effect.raceFirst(Effect.sleep(ms), Queue.take(hurry)),
          () => Effect.sync(() => (gathering = false, hurried = false))
        )
      })
    /** Wakes a delivery worker to claim at once: its endpoint has a backlog, which no gather would add to. */
    const hurryDeliveries = Effect.suspend(() => {
      hurried = true
      return Queue.offer(gathering ? hurry : deliveries, undefined).pipe(Effect.asVoid)
    })
    const wake = (options: { readonly deliveries: boolean }) =>
      PubSub.publish(streams, undefined).pipe(Effect.zipRight(options.deliveries ? wakeDeliveries : Effect.void))
    /** A stream's subscription; `next(ms)` waits for a wake or `ms`, whichever comes first. */
    const subscribe: Effect.Effect<{ readonly next: (ms: number) => Effect.Effect<void> }, never, Scope.Scope> = Effect.map(
      PubSub.subscribe(streams),
      (queue) => ({ next: (ms: number) => Effect.raceFirst(Queue.take(queue), Effect.sleep(ms)).pipe(Effect.asVoid) })
    )
    /** A delivery worker's wait: a wake meant for it (answers true), or `ms` (false). */
    const nextDelivery = (ms: number) => Effect.raceFirst(Queue.take(deliveries).pipe(Effect.as(true)), Effect.sleep(ms).pipe(Effect.as(false)))
    return { wake, wakeDeliveries, hurryDeliveries, gatherDeliveries, subscribe, nextDelivery } as const
  })
}) {}
