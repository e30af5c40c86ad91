/**
 * How the delivery workers are woken (events/EventSignal.ts), on Effect's TestClock: a woken worker's gather
 * lasts its length and swallows the wakes that come meanwhile (they announce what its claim will take); a
 * backlog (`hurryDeliveries`: a full batch recorded with more behind it) ends a gather at once, and makes the
 * next gather none. Without that, the backlog waited out a whole gather (up to 300 ms) per batch, and the
 * events bench's commit → delivery p95 went from 0.27 s to 1.1–1.4 s in half its rounds.
 */
import { it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock } from "effect"
import { expect } from "vitest"
import { EventSignal } from "../../src/events/EventSignal.ts"

const signal = EventSignal.Default

/** Lets forked fibers run as far as they can without the clock moving. */
const settle = Effect.repeatN(Effect.yieldNow(), 20)

it.effect("a gather lasts its length and swallows the wakes that come meanwhile", () =>
  Effect.gen(function*() {
    const events = yield* EventSignal
    const gather = yield* Effect.fork(events.gatherDeliveries(300))
    yield* Effect.yieldNow()
    yield* events.wakeDeliveries
    yield* TestClock.adjust(Duration.millis(299))
    expect(gather.unsafePoll()).toBeNull()
    yield* TestClock.adjust(Duration.millis(1))
    yield* Fiber.join(gather)
    // The wake during the gather woke nobody: a waiting worker sleeps until its timeout.
    const waiting = yield* Effect.fork(events.nextDelivery(1_000))
    yield* TestClock.adjust(Duration.millis(1_000))
    expect(yield* Fiber.join(waiting)).toBe(false)
  }).pipe(Effect.provide(signal)))

it.effect("a backlog ends a gather at once, and wakes a waiting worker to claim without gathering", () =>
  Effect.gen(function*() {
    const events = yield* EventSignal
    const gather = yield* Effect.fork(events.gatherDeliveries(300))
    yield* Effect.yieldNow()
    yield* events.hurryDeliveries
    yield* settle
    expect(gather.unsafePoll(), "the gather ended without the clock moving").not.toBeNull()
    // No gather was running: the next waiting worker is woken, and its gather is none.
    yield* events.hurryDeliveries
    expect(yield* events.nextDelivery(1_000)).toBe(true)
    const none = yield* Effect.fork(events.gatherDeliveries(300))
    yield* settle
    expect(none.unsafePoll()).not.toBeNull()
    // After which gathers last their length again.
    const next = yield* Effect.fork(events.gatherDeliveries(300))
    yield* Effect.yieldNow()
    expect(next.unsafePoll()).toBeNull()
    yield* TestClock.adjust(Duration.millis(300))
    yield* Fiber.join(next)
  }).pipe(Effect.provide(signal)))
