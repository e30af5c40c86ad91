/**
 * The sequencer: gives committed events their `position`, the order every reader sees (GET /events, the
 * stream, webhooks), and marks the org's webhook endpoints that asked for its type (their `queued_through`:
 * delivery workers claim their first attempts by position, webhooks/Deliveries.ts).
 *
 * Positions are handed out after commit, by one sequencer at a time (the `event_sequencer` row lock, on every
 * instance), in insert order among what has committed: so positions only grow in commit order, and a reader
 * that has seen position n never gets an event below n later. It runs 25 ms after an outbox write commits
 * (`NOTIFY acs_events_written`; PGlite has no LISTEN), with the commits of those milliseconds, and every
 * EVENTS_POLL_MS as the fallback, which also covers events committed while no instance ran.
 */
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "@effect/sql"
import { Config, Duration, Effect, Layer, Option, Queue, Schedule, Schema, Stream } from "effect"
import { DatabaseMode } from "../db/Database.ts"
import { newId } from "../db/Ids.ts"
import { decodeRows } from "../db/Rows.ts"
import { EVENTS_CHANNEL, EventSignal, readNotification } from "./EventSignal.ts"
import { EVENTS_WRITTEN_CHANNEL } from "./Outbox.ts"

export const EventsConfig = Config.all({
  pollMs: Config.integer("EVENTS_POLL_MS").pipe(Config.withDefault(1_000)),
  retryWindowSeconds: Config.integer("WEBHOOK_RETRY_WINDOW_SECONDS").pipe(Config.withDefault(24 * 3600))
})

const BATCH = 1_000

/** How long a pass woken by a commit waits for the commits right after it (well inside a delivery's second). */
const GATHER_MS = 25

/** What a pass did: events sequenced, webhook deliveries due for them (an event for an endpoint that wants it). */
const Sequenced = Schema.Struct({ events: Schema.Int, deliveries: Schema.Int })
export type Sequenced = typeof Sequenced.Type
const decodeSequenced = decodeRows(Sequenced)

export class Sequencer extends Effect.Service<Sequencer>()("acs/Sequencer", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* EventsConfig
    /** Who this sequencer is in its notifications (it ignores its own). */
    const instance = newId("seq")

    /**
     * One batch: positions, the endpoints' marks, the notification, in one statement (migrations 0018, 0025);
     * `events` is -1 when another instance holds the sequencer (it passes again for the same commits).
     */
    const sequenceBatch: Effect.Effect<Sequenced> = sql`/* prepared */
      SELECT events, deliveries FROM acs_sequence_events(${BATCH}, ${config.retryWindowSeconds}, ${EVENTS_CHANNEL}, ${instance})`.pipe(
      Effect.orDie,
      Effect.flatMap(decodeSequenced),
      Effect.map((rows) => rows[0] ?? { events: 0, deliveries: 0 }),
      Effect.withSpan("Sequencer.batch")
    )

    /** Sequences until nothing is left. */
    const sequence: Effect.Effect<Sequenced> = Effect.gen(function*() {
      let events = 0
      let deliveries = 0
      for (;;) {
        const batch = yield* sequenceBatch
        if (batch.events < 0) return { events, deliveries }
        events += batch.events
        deliveries += batch.deliveries
        if (batch.events < BATCH) return { events, deliveries }
      }
    })
    return { sequence, instance } as const
  })
}) {}

/** The sequencer loop of this instance, woken by commits (LISTEN) and by its poll. */
const SequencingLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* EventsConfig
    const sequencer = yield* Sequencer
    const signal = yield* EventSignal
    // Commits announced to this loop only; a burst collapses into one pass.
    const written = yield* Queue.sliding<void>(1)

    // Not traced: a trace per poll would bury the requests (telemetry/TraceSampler.ts).
    const pass = Effect.withTracerEnabled(sequencer.sequence, false).pipe(
      Effect.flatMap((done) => done.events > 0 ? signal.wake({ deliveries: done.deliveries > 0 }) : Effect.void),
      Effect.catchAllCause((cause) => Effect.logWarning("event sequencing failed; it is retried", cause))
    )
    // Woken by a commit, the loop gathers the commits of the next GATHER_MS into the same pass: each pass costs
    // this instance a statement and every instance a notification to wake on.
    const woken = Effect.raceFirst(Queue.take(written).pipe(Effect.as(true)), Effect.sleep(config.pollMs).pipe(Effect.as(false)))
    const gather = Effect.sleep(GATHER_MS).pipe(Effect.zipRight(Queue.takeAll(written)))
    yield* pass.pipe(
      Effect.zipRight(Effect.flatMap(woken, (byCommit) => byCommit ? gather : Effect.void)),
      Effect.forever,
      Effect.forkScoped
    )

    const databaseUrl = yield* DatabaseMode
    if (Option.isSome(databaseUrl)) {
      const pg = yield* PgClient.PgClient
      yield* pg.listen(EVENTS_WRITTEN_CHANNEL).pipe(
        Stream.runForEach(() => Queue.offer(written, undefined)),
        Effect.retry(Schedule.spaced(Duration.seconds(1))),
        Effect.forkScoped
      )
    }
  })
)

/**
 * This instance's readers (streams, webhook workers) woken when another instance sequenced events or queued
 * deliveries. `acs worker` runs this without a sequencer of its own: a second sequencer woken by every commit
 * cost the bench's worker process about 0.9 ms of CPU per proposal for passes the API's sequencer already made.
 */
export const EventWakeLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    if (Option.isNone(yield* DatabaseMode)) return
    const pg = yield* PgClient.PgClient
    const sequencer = yield* Sequencer
    const signal = yield* EventSignal
    yield* pg.listen(EVENTS_CHANNEL).pipe(
      Stream.map(readNotification),
      Stream.filter((notified) => notified.sender !== sequencer.instance),
      Stream.runForEach((notified) => signal.wake({ deliveries: notified.deliveries })),
      Effect.retry(Schedule.spaced(Duration.seconds(1))),
      Effect.forkScoped
    )
  })
)

/** An API instance: its sequencer, and its readers woken by the others'. */
export const SequencerLive = Layer.merge(SequencingLive, EventWakeLive)
