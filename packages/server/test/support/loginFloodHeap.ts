/**
 * The heap an unauthenticated sign-in flood leaves behind in the rate limiter (docs/decisions/access-and-keys.md), measured
 * in-process against RateLimits under TestClock, so "a minute later" needs no waiting. Run by the
 * benchmark as its own process: `node --expose-gc --import tsx packages/server/test/support/loginFloodHeap.ts [logins]`;
 * prints one JSON line. It lives here, not under scripts/, so `effect` resolves from the server package.
 *
 * Scenarios, each on a fresh limiter: unique emails from one address (a single client, or every client
 * behind a proxy without TRUST_PROXY); unique emails each from its own address (the worst case: every
 * attempt opens two windows); and, for comparison, the store used before (@effect/experimental's
 * memory store, email charged first), which keeps every key forever.
 */
import { RateLimiter } from "@effect/experimental"
import { ConfigProvider, Duration, Effect, Layer, TestClock, TestContext } from "effect"
import { WINDOW } from "../../src/limits/FixedWindows.ts"
import { RateLimits } from "../../src/limits/RateLimits.ts"

export interface FloodScenario {
  readonly name: string
  readonly logins: number
  readonly allowed: number
  /** Heap retained (after a full GC) once the flood ended, and a window later; bytes over the start. */
  readonly retainedBytes: number
  readonly retainedBytesAfterWindow: number
  /** Windows held by the limiter, when it can say (the old store cannot). */
  readonly windows: number | null
  readonly windowsAfterWindow: number | null
  readonly seconds: number
}

const collect = () => {
  if (globalThis.gc === undefined) throw new Error("run with node --expose-gc")
  globalThis.gc()
  globalThis.gc()
  return process.memoryUsage().heapUsed
}

const configured = ConfigProvider.fromMap(new Map([["RATE_LIMIT_LOGIN", "10"]]))

type Attempt = (email: string, address: string) => Effect.Effect<boolean>

/** Drives `logins` sign-in attempts through `attempt`, measuring the heap before, after and a window later. */
const measure = (name: string, logins: number, addressOf: (i: number) => string, attempt: Attempt, windows: Effect.Effect<number> | null) =>
  Effect.gen(function*() {
    const before = collect()
    const started = performance.now()
    let allowed = 0
    for (let i = 0; i < logins; i++) if (yield* attempt(`flood-${i}@example.com`, addressOf(i))) allowed++
    const seconds = (performance.now() - started) / 1000
    const retained = collect() - before
    const held = windows === null ? null : yield* windows
    yield* TestClock.adjust(Duration.sum(WINDOW, Duration.seconds(1)))
    const heldAfter = windows === null ? null : yield* windows
    return {
      name,
      logins,
      allowed,
      retainedBytes: retained,
      retainedBytesAfterWindow: collect() - before,
      windows: held,
      windowsAfterWindow: heldAfter,
      seconds
    } satisfies FloodScenario
  })

const withRateLimits = (name: string, logins: number, addressOf: (i: number) => string) =>
  Effect.gen(function*() {
    const limits = yield* RateLimits
    const attempt: Attempt = (email, address) =>
      limits.consumeLogin(email, address).pipe(Effect.as(true), Effect.catchTag("RateLimited", () => Effect.succeed(false)))
    return yield* measure(name, logins, addressOf, attempt, limits.openWindows)
  }).pipe(Effect.provide(RateLimits.Default.pipe(Layer.provide(Layer.setConfigProvider(configured)))))

/** The limiter as it was: the experimental memory store, email bucket charged before the address's. */
const before = (name: string, logins: number) =>
  Effect.gen(function*() {
    const limiter = yield* RateLimiter.RateLimiter
    const charge = (key: string, limit: number) =>
      limiter.consume({ key, limit, window: WINDOW }).pipe(Effect.as(true), Effect.catchAll(() => Effect.succeed(false)))
    const attempt: Attempt = (email, address) =>
      Effect.flatMap(charge(`login:email:${email}`, 10), (ok) => ok ? charge(`loginAddress:address:${address}`, 100) : Effect.succeed(false))
    return yield* measure(name, logins, () => "203.0.113.7", attempt, null)
  }).pipe(Effect.provide(RateLimiter.layer.pipe(Layer.provide(RateLimiter.layerStoreMemory))))

export const measureLoginFlood = (logins: number) =>
  Effect.all([
    // A throwaway run first, so code loaded and compiled on first use is not counted as retained.
    withRateLimits("warm-up", 2_000, (i) => `192.0.2.${i & 255}`),
    withRateLimits("unique emails, one address", logins, () => "203.0.113.7"),
    withRateLimits("unique emails, unique addresses", logins, (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`),
    before("before: experimental memory store, one address", logins)
  ]).pipe(Effect.map((scenarios) => scenarios.slice(1)), Effect.provide(TestContext.TestContext))

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  const logins = Number(process.argv[2] ?? 20_000)
  const scenarios = await Effect.runPromise(measureLoginFlood(logins))
  process.stdout.write(`${JSON.stringify(scenarios)}\n`)
}
