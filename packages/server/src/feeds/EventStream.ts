/**
 * A live stream of events (GET /events/stream and the RPC `streamEvents` procedure): the events after a
 * position as they are sequenced, each once and in order, and a heartbeat when nothing happens. It wakes on
 * EventSignal (a sequencer here or on another instance) and looks anyway at each heartbeat. Before each
 * event batch and each heartbeat it asks `stillAllowed` (the credential, looked up again): a revoked or
 * expired credential's stream ends there.
 *
 * The safety net for a lost wake (another instance's NOTIFY missed while this one's LISTEN reconnected) is one
 * watch per process, not a poll per stream: while any stream is open, every EVENTS_POLL_MS it reads the last
 * position handed out and wakes the streams when it moved. A thousand idle streams cost one query a second.
 *
 * Every stream ends, cleanly, when the process is asked to stop (SIGTERM, SIGINT): a stream never ends by
 * itself, and the HTTP server's drain waits for its open responses, so one open stream would hold the
 * process until its shutdown deadline. The client reconnects (SSE `retry`) and resumes with Last-Event-ID.
 */
import type { Event } from "@acs/domain/Events"
import { Chunk, Clock, Config, Deferred, Duration, Effect, Exit, Option, Schedule, Stream } from "effect"
import { EventLog, type EventFilter } from "./EventLog.ts"
import { toEvent } from "../events/EventRows.ts"
import { EventSignal } from "../events/EventSignal.ts"

export const StreamConfig = Config.all({
  heartbeatMs: Config.integer("EVENTS_HEARTBEAT_MS").pipe(Config.withDefault(15_000)),
  pollMs: Config.integer("EVENTS_POLL_MS").pipe(Config.withDefault(1_000))
})

export type StreamItem = { readonly _tag: "Event"; readonly event: Event } | { readonly _tag: "Heartbeat" }

const BATCH = 100

const STOP_SIGNALS = ["SIGTERM", "SIGINT"] as const

export class EventStream extends Effect.Service<EventStream>()("acs/EventStream", {
  scoped: Effect.gen(function*() {
    const log = yield* EventLog
    const signal = yield* EventSignal
    const config = yield* StreamConfig
    const stopping = yield* Deferred.make<void>()
    const onStop = () => Deferred.unsafeDone(stopping, Exit.void)
    yield* Effect.acquireRelease(
      Effect.sync(() => STOP_SIGNALS.forEach((name) => process.once(name, onStop))),
      () => Effect.sync(() => STOP_SIGNALS.forEach((name) => process.off(name, onStop)))
    )

    // The watch: the position last read (undefined: not read since the streams were last all closed).
    let open = 0
    let lastPosition: string | undefined
    const watch = Effect.gen(function*() {
      if (open === 0) {
        lastPosition = undefined
        return
      }
      const position = yield* log.lastPosition
      // The first reading wakes too: a stream opened since may have looked before events it was not woken for.
      if (position !== lastPosition) yield* signal.wake({ deliveries: false })
      lastPosition = position
    }).pipe(Effect.withTracerEnabled(false), Effect.catchAllCause((cause) => Effect.logWarning("event stream watch failed; it is retried", cause)))
    yield* watch.pipe(Effect.repeat(Schedule.spaced(Duration.millis(config.pollMs))), Effect.forkScoped)

    const follow = (filter: EventFilter, from: string, stillAllowed: Effect.Effect<boolean>): Stream.Stream<StreamItem> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const wakes = yield* signal.subscribe
        yield* Effect.acquireRelease(Effect.sync(() => open++), () => Effect.sync(() => open--))
        let cursor = from
        let lastBeat = yield* Clock.currentTimeMillis
        // One pull: the next events, else a heartbeat when due, else nothing after a wait. None ends the stream.
        const pull: Effect.Effect<Chunk.Chunk<StreamItem>, Option.Option<never>> = Effect.gen(function*() {
          const rows = yield* log.after(filter, cursor, BATCH)
          if (rows.length > 0) {
            if (!(yield* stillAllowed)) return yield* Effect.fail(Option.none())
            cursor = rows[rows.length - 1]!.position
            return Chunk.fromIterable(rows.map((row): StreamItem => ({ _tag: "Event", event: toEvent(row) })))
          }
          const now = yield* Clock.currentTimeMillis
          if (now - lastBeat >= config.heartbeatMs) {
            if (!(yield* stillAllowed)) return yield* Effect.fail(Option.none())
            lastBeat = now
            return Chunk.of<StreamItem>({ _tag: "Heartbeat" })
          }
          yield* wakes.next(Math.max(10, config.heartbeatMs - (now - lastBeat)))
          return Chunk.empty<StreamItem>()
        })
        return Stream.repeatEffectChunkOption(pull).pipe(Stream.interruptWhen(Deferred.await(stopping)))
      }))

    return { follow } as const
  }),
  dependencies: [EventLog.Default]
}) {}

/** One item as Server-Sent Events text. */
export const toSse = (item: StreamItem): string =>
  item._tag === "Heartbeat"
    ? ": heartbeat\n\n"
    : `id: ${item.event.eventId}\nevent: ${item.event.type}\ndata: ${JSON.stringify(item.event)}\n\n`
