/**
 * The newly sequenced events this instance's open streams follow, read once for all of them (docs/decisions/events-and-webhooks.md): one
 * reader per instance reads each batch of new events of the orgs that have a stream open, in one statement,
 * and hands each event to the streams of its org whose filter takes it (the accounts their credential
 * reaches, a type), in position order. A thousand streams of one org cost one read per batch, not a thousand.
 *
 * A stream that starts behind what the reader has read (it resumes with Last-Event-ID, or its org had no
 * stream until now) reads the events up to there itself, with its own filter, then takes the reader's. So does
 * a stream whose client stopped reading once MAX_PENDING events wait for it: they are dropped and it reads them
 * again when it pulls, so a stuck client holds no more than that. Either way each event comes once, in order.
 *
 * The reader wakes on EventSignal (a sequencer here or on another instance) and looks anyway every minute. The
 * safety net for a lost wake (another instance's NOTIFY missed while this one's LISTEN reconnected) is one
 * watch per process: while any stream is open, every EVENTS_POLL_MS it reads the last position handed out and
 * wakes the reader when it moved. A thousand idle streams cost one query a second.
 *
 * An idle stream is a waiting callback, not fibers of its own: the reader wakes it for its events, one timer
 * per instance every EVENTS_HEARTBEAT_MS for its heartbeat, and the process's stop signal (SIGTERM, SIGINT)
 * to end. That keeps an idle stream's memory small (the benchmark measures it: scripts/bench/streams.ts).
 */
import { Config, Duration, Effect, Schedule, type Scope } from "effect"
import { type EventFilter, EventLog, matcherOf } from "./EventLog.ts"
import type { EventRow } from "../events/EventRows.ts"
import { EventSignal } from "../events/EventSignal.ts"

const TailConfig = Config.all({
  pollMs: Config.integer("EVENTS_POLL_MS").pipe(Config.withDefault(1_000)),
  heartbeatMs: Config.integer("EVENTS_HEARTBEAT_MS").pipe(Config.withDefault(15_000))
})

/** Events per read, the reader's and a stream's own. */
export const BATCH = 100

/** Events that may wait for one stream; past that it reads them itself when it pulls (its client is not reading). */
export const MAX_PENDING = 256

/** How long the reader waits for a wake before it looks anyway. */
const LOOK_ANYWAY_MS = 60_000

const STOP_SIGNALS = ["SIGTERM", "SIGINT"] as const

/** An open stream, as the reader knows it. Positions are bigint: they are compared, never shown. */
interface Follower {
  readonly filter: EventFilter
  readonly takes: (row: EventRow) => boolean
  /** Everything at or below it was handed to the stream or is not the stream's. */
  cursor: bigint
  /** (cursor, behindThrough] is the stream's to read itself before `pending`. */
  behindThrough: bigint | undefined
  /** The last position the reader offered this stream: `pending` holds only events above it. */
  seen: bigint
  pending: Array<EventRow>
  /** A heartbeat's time came since the stream last beat. */
  beatDue: boolean
  /** Woken while it was not waiting: its next wait returns at once. */
  woken: boolean
  /** The stream's wait, while it waits. */
  resume: (() => void) | undefined
}

/** A stream's view of the tail. */
export interface Following {
  /** Up to BATCH of the stream's next events, oldest first; none when nothing waits. */
  readonly take: Effect.Effect<ReadonlyArray<EventRow>>
  /** Whether a heartbeat is due; true once per EVENTS_HEARTBEAT_MS. */
  readonly beat: () => boolean
  /** Whether the process is stopping: the stream ends. */
  readonly stopping: () => boolean
  /** Waits until events may wait for the stream, a heartbeat is due, or the process is stopping. */
  readonly wait: Effect.Effect<void>
}

const wake = (follower: Follower) => {
  follower.woken = true
  const resume = follower.resume
  follower.resume = undefined
  resume?.()
}

export class EventTail extends Effect.Service<EventTail>()("acs/EventTail", {
  scoped: Effect.gen(function*() {
    const log = yield* EventLog
    const signal = yield* EventSignal
    const config = yield* TailConfig

    /** The open streams by org: an event goes only to its own org's streams. */
    const byOrg = new Map<string, Set<Follower>>()
    let open = 0
    /** Every event at or below it of an org in `byOrg` was offered to its streams; undefined while none is open. */
    let head: bigint | undefined
    // A stream joins between two reads, never during one: the reader's orgs and `head` are then the same thing.
    const lock = yield* Effect.makeSemaphore(1)

    const everyFollower = (each: (follower: Follower) => void) => {
      for (const followers of byOrg.values()) followers.forEach(each)
    }

    let stopping = false
    const onStop = () => {
      stopping = true
      everyFollower(wake)
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => STOP_SIGNALS.forEach((name) => process.once(name, onStop))),
      () => Effect.sync(() => STOP_SIGNALS.forEach((name) => process.off(name, onStop)))
    )

    const offer = (rows: ReadonlyArray<EventRow>) => {
      const woken = new Set<Follower>()
      for (const row of rows) {
        const followers = byOrg.get(row.orgId)
        if (followers === undefined) continue
        const position = BigInt(row.position)
        for (const follower of followers) {
          if (position <= follower.seen) continue
          follower.seen = position
          if (!follower.takes(row)) continue
          if (follower.pending.length >= MAX_PENDING) {
            // Its client is not reading: it reads these again itself when it pulls.
            follower.pending = []
            follower.behindThrough = position
          } else {
            follower.pending.push(row)
          }
          woken.add(follower)
        }
      }
      woken.forEach(wake)
    }

    /** Reads what was sequenced since `head` for the orgs with streams, until a short batch. */
    const read = lock.withPermits(1)(Effect.gen(function*() {
      for (;;) {
        const from = head
        if (from === undefined || byOrg.size === 0) return
        const rows = yield* log.afterInOrgs([...byOrg.keys()], from.toString(), BATCH)
        // Every stream left (and `head` was let go) while reading: nobody to hand these to.
        if (head !== from) return
        if (rows.length > 0) head = BigInt(rows[rows.length - 1]!.position)
        offer(rows)
        if (rows.length < BATCH) return
      }
    }))

    yield* Effect.gen(function*() {
      const wakes = yield* signal.subscribe
      let failed = false
      for (;;) {
        yield* wakes.next(failed ? config.pollMs : LOOK_ANYWAY_MS)
        failed = false
        yield* read.pipe(
          Effect.withTracerEnabled(false),
          Effect.catchAllCause((cause) => Effect.zipRight(Effect.sync(() => (failed = true)), Effect.logWarning("reading events for the streams failed; it is retried", cause)))
        )
      }
    }).pipe(Effect.scoped, Effect.forkScoped)

    // The watch: the position last read (undefined: not read since the streams were last all closed).
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

    // The heartbeat's time, for every stream at once.
    const beat = Effect.sync(() =>
      everyFollower((follower) => {
        follower.beatDue = true
        wake(follower)
      })
    )
    yield* Effect.sleep(Duration.millis(config.heartbeatMs)).pipe(Effect.zipRight(beat), Effect.forever, Effect.forkScoped)

    const join = (filter: EventFilter, from: bigint) =>
      lock.withPermits(1)(Effect.gen(function*() {
        // The first stream since none was open: the reader starts at what is sequenced now.
        if (head === undefined) head = BigInt(yield* log.lastPosition)
        const behind = from < head
        const follower: Follower = {
          filter,
          takes: matcherOf(filter),
          cursor: from,
          behindThrough: behind ? head : undefined,
          seen: behind ? head : from,
          pending: [],
          beatDue: false,
          woken: false,
          resume: undefined
        }
        const followers = byOrg.get(filter.orgId) ?? new Set<Follower>()
        byOrg.set(filter.orgId, followers.add(follower))
        open++
        return follower
      }))

    const leave = (follower: Follower) =>
      Effect.sync(() => {
        const followers = byOrg.get(follower.filter.orgId)
        followers?.delete(follower)
        if (followers?.size === 0) byOrg.delete(follower.filter.orgId)
        open--
        // Nobody follows: the reader stops, and the next stream starts it again at what is sequenced then.
        if (open === 0) head = undefined
      })

    const takePending = (follower: Follower) => {
      const rows = follower.pending.splice(0, BATCH)
      if (rows.length > 0) follower.cursor = BigInt(rows[rows.length - 1]!.position)
      return rows
    }

    const take = (follower: Follower): Effect.Effect<ReadonlyArray<EventRow>> =>
      Effect.suspend(() => {
        const through = follower.behindThrough
        if (through === undefined) return Effect.succeed(takePending(follower))
        return Effect.map(log.after(follower.filter, follower.cursor.toString(), BATCH, through.toString()), (rows) => {
          if (rows.length === BATCH) {
            follower.cursor = BigInt(rows[rows.length - 1]!.position)
            return rows
          }
          follower.cursor = through
          // The reader may have dropped more for it meanwhile: then it is behind through there now.
          if (follower.behindThrough !== through) return rows
          follower.behindThrough = undefined
          return rows.length > 0 ? rows : takePending(follower)
        })
      })

    const wait = (follower: Follower) =>
      Effect.async<void>((resume) => {
        const done = () => {
          follower.woken = false
          resume(Effect.void)
        }
        if (follower.woken) return done()
        follower.resume = done
        return Effect.sync(() => {
          if (follower.resume === done) follower.resume = undefined
        })
      })

    /** Follows the events `filter` takes after position `from`, for as long as the scope is open. */
    const follow = (filter: EventFilter, from: string): Effect.Effect<Following, never, Scope.Scope> =>
      Effect.map(
        Effect.acquireRelease(join(filter, BigInt(from)), leave),
        (follower): Following => ({
          take: take(follower),
          beat: () => {
            const due = follower.beatDue
            follower.beatDue = false
            return due
          },
          stopping: () => stopping,
          wait: wait(follower)
        })
      )

    return { follow } as const
  }),
  dependencies: [EventLog.Default]
}) {}
