/**
 * A live stream of events (GET /events/stream and the RPC `streamEvents` procedure): the events after a
 * position as they are sequenced, each once and in order, and a heartbeat when nothing happens. The events come
 * from the instance's one reader (EventTail.ts), which reads each batch once for every open stream. Before
 * each event batch and each heartbeat it asks `stillAllowed` (the credential, looked up again): a revoked or
 * expired credential's stream ends there.
 *
 * Opening one takes a slot (limits/StreamSlots.ts): a key or person with too many streams open, or a full
 * instance, is refused with 429 before the stream starts, and the slot is given back however it ends.
 *
 * Every stream ends, cleanly, when the process is asked to stop (SIGTERM, SIGINT): a stream never ends by
 * itself, and the HTTP server's drain waits for its open responses, so one open stream would hold the
 * process until its shutdown deadline. The client reconnects (SSE `retry`) and resumes with Last-Event-ID.
 */
import type { Event, EventStreamHeaders, EventStreamParams } from "@acs/domain/Events"
import type { AccountMismatch, InvalidRequest, RateLimited } from "@acs/domain/Errors"
import type { Principal } from "@acs/domain/Principal"
import { Chunk, Effect, Option, type Scope, Stream } from "effect"
import type { Granted } from "../auth/Access.ts"
import { type EventFilter, EventLog } from "./EventLog.ts"
import { EventTail } from "./EventTail.ts"
import { toEvent } from "../events/EventRows.ts"
import { StreamSlots } from "../limits/StreamSlots.ts"

export type StreamItem = { readonly _tag: "Event"; readonly event: Event } | { readonly _tag: "Heartbeat" }

/** The end of a stream, as `Stream.repeatEffectChunkOption` takes it. */
const end = Effect.fail(Option.none())

export class EventStream extends Effect.Service<EventStream>()("acs/EventStream", {
  effect: Effect.gen(function*() {
    const tail = yield* EventTail
    const slots = yield* StreamSlots
    const log = yield* EventLog

    const follow = (filter: EventFilter, from: string, stillAllowed: Effect.Effect<boolean>): Stream.Stream<StreamItem> =>
      Stream.unwrapScoped(Effect.map(tail.follow(filter, from), (following) => {
        // One pull: the end when stopping, the next events, else a heartbeat when due, else nothing after a wait.
        const pull: Effect.Effect<Chunk.Chunk<StreamItem>, Option.Option<never>> = Effect.gen(function*() {
          if (following.stopping()) return yield* end
          const rows = yield* following.take
          if (rows.length > 0) {
            if (!(yield* stillAllowed)) return yield* end
            return Chunk.fromIterable(rows.map((row): StreamItem => ({ _tag: "Event", event: toEvent(row) })))
          }
          if (following.beat()) {
            if (!(yield* stillAllowed)) return yield* end
            return Chunk.of<StreamItem>({ _tag: "Heartbeat" })
          }
          yield* following.wait
          return Chunk.empty<StreamItem>()
        })
        return Stream.repeatEffectChunkOption(pull)
      }))

    /**
     * A stream for `principal`: its slot is taken in the caller's scope (the request's, for SSE, so a refusal
     * is the answer's status), and held until that scope closes.
     */
    const open = (
      principal: Principal,
      filter: EventFilter,
      from: string,
      stillAllowed: Effect.Effect<boolean>
    ): Effect.Effect<Stream.Stream<StreamItem>, RateLimited, Scope.Scope> => Effect.as(slots.take(principal), follow(filter, from, stillAllowed))

    /**
     * The stream of `streamEvents` for its grant and decoded input, whatever the surface (SSE, the RPC
     * procedure): the events the caller reaches (`projectId`, `type`), from after `Last-Event-ID` or from now.
     */
    const openFor = (
      grant: Granted<"streamEvents">,
      input: { readonly urlParams?: typeof EventStreamParams.Type | undefined; readonly headers?: typeof EventStreamHeaders.Type | undefined },
      stillAllowed: Effect.Effect<boolean>
    ): Effect.Effect<Stream.Stream<StreamItem>, AccountMismatch | InvalidRequest | RateLimited, Scope.Scope> =>
      Effect.gen(function*() {
        const filter = yield* log.filterFor(grant.principal, input.urlParams ?? {})
        const from = yield* log.startOf(grant.orgId, input.headers?.["last-event-id"])
        return yield* open(grant.principal, filter, from, stillAllowed)
      })

    return { open, openFor } as const
  }),
  dependencies: [EventTail.Default, StreamSlots.Default, EventLog.Default]
}) {}

/** One item as Server-Sent Events text. */
export const toSse = (item: StreamItem): string =>
  item._tag === "Heartbeat"
    ? ": heartbeat\n\n"
    : `id: ${item.event.eventId}\nevent: ${item.event.type}\ndata: ${JSON.stringify(item.event)}\n\n`
