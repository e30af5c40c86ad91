/**
 * A live stream of events (GET /events/stream and the RPC `streamEvents` procedure): the events after a
 * position as they are sequenced, each once and in order, and a heartbeat when nothing happens. It wakes on
 * EventSignal (a sequencer here or on another instance) and looks anyway every EVENTS_POLL_MS. Before each
 * event batch and each heartbeat it asks `stillAllowed` (the credential, looked up again): a revoked or
 * expired credential's stream ends there.
 *
 * Every stream ends, cleanly, when the process is asked to stop (SIGTERM, SIGINT): a stream never ends by
 * itself, and the HTTP server's drain waits for its open responses, so one open stream would hold the
 * process until its shutdown deadline. The client reconnects (SSE `retry`) and resumes with Last-Event-ID.
 */
import type { Event } from "@acs/domain/Events"
import { Chunk, Clock, Config, Deferred, Effect, Exit, Option, Stream } from "effect"
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

    const follow = (filter: EventFilter, from: string, stillAllowed: Effect.Effect<boolean>): Stream.Stream<StreamItem> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const wakes = yield* signal.subscribe
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
          yield* wakes.next(Math.max(10, Math.min(config.pollMs, config.heartbeatMs - (now - lastBeat))))
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
