/**
 * A clock for acs's services in a test process: the real one, moved on as the simulator's clock is moved (a server
 * process cannot be told the time, so the guard's tests run acs's syncs and reviews in the test's own process).
 * Provide `clock` to the layers (`Layer.setClock`) and to the test's effects (`Effect.withClock`).
 */
import { Clock, Effect } from "effect"

export interface ShiftedClock {
  readonly clock: Clock.Clock
  /** Moves this clock on by `ms` (the caller moves the simulator's by as much). */
  readonly shift: (ms: number) => void
}

export const makeShiftedClock = (): ShiftedClock => {
  let shiftMs = 0
  const real = Clock.make()
  return {
    clock: {
      [Clock.ClockTypeId]: Clock.ClockTypeId,
      unsafeCurrentTimeMillis: () => real.unsafeCurrentTimeMillis() + shiftMs,
      currentTimeMillis: Effect.sync(() => real.unsafeCurrentTimeMillis() + shiftMs),
      unsafeCurrentTimeNanos: () => real.unsafeCurrentTimeNanos() + BigInt(shiftMs) * 1_000_000n,
      currentTimeNanos: Effect.sync(() => real.unsafeCurrentTimeNanos() + BigInt(shiftMs) * 1_000_000n),
      sleep: (duration) => real.sleep(duration)
    },
    shift: (ms) => {
      shiftMs += ms
    }
  }
}
