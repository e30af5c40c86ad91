/**
 * A stream's slot comes back however the stream ends (docs/contract.md 6); the client going away and a revoked key are
 * streamsBounded.test.ts's, against the server. Here the stop signal: the process's SIGTERM (its listener,
 * called as node calls it) ends every open stream, and every slot is free again, in the same process.
 */
import type { Principal } from "@acs/domain/Principal"
import { layer } from "./support/layerBlock.ts"
import { ConfigProvider, Effect, Fiber, Layer, Schedule, Stream } from "effect"
import { expect } from "vitest"
import { databaseLayer } from "../src/db/Database.ts"
import { EventSignal } from "../src/events/EventSignal.ts"
import { EventLog } from "../src/feeds/EventLog.ts"
import { EventStream } from "../src/feeds/EventStream.ts"
import { EventTail } from "../src/feeds/EventTail.ts"
import { StreamSlots } from "../src/limits/StreamSlots.ts"
import { createDatabase, insertOrg } from "./support/database.ts"

const ORG = "org_stream_slots"

const TestDatabase = Layer.unwrapEffect(Effect.promise(async () => {
  const url = await createDatabase()
  await insertOrg(url, ORG)
  return databaseLayer("stream slots test").pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url]]))))
  )
}))

// One StreamSlots for the streams and the test, so the test sees the slots the streams hold.
const TestLayer = EventStream.DefaultWithoutDependencies.pipe(
  Layer.provideMerge(Layer.mergeAll(EventTail.Default, StreamSlots.Default, EventLog.Default)),
  Layer.provideMerge(EventSignal.Default),
  Layer.provideMerge(TestDatabase)
)

const reader: Principal = {
  kind: "key",
  id: "key_stream_slots",
  name: "reader",
  orgId: ORG,
  scope: "read",
  canApprove: false,
  binding: { kind: "org" },
  role: null,
  expiresAt: null,
  root: { kind: "key", id: "key_stream_slots", name: "reader" }
}

layer(TestLayer, { excludeTestServices: true })("stream slots at shutdown", (it) => {
  it.effect("SIGTERM ends every open stream and gives back its slot", () =>
    Effect.gen(function*() {
      const streams = yield* EventStream
      const slots = yield* StreamSlots
      const from = yield* (yield* EventLog).startOf(ORG, undefined)
      const filter = { orgId: ORG, projectIds: undefined, type: undefined }
      const open = streams.open(reader, filter, from, Effect.succeed(true))
      const follow = Effect.scoped(Effect.flatMap(open, Stream.runDrain))

      const running = yield* Effect.forEach(Array.from({ length: 5 }), () => Effect.fork(follow))
      yield* Effect.repeat(Effect.sync(slots.open), { until: (open) => open === 5, schedule: Schedule.spaced("10 millis") })
      const sixth = yield* Effect.flip(Effect.scoped(open))
      expect(sixth).toMatchObject({ _tag: "RateLimited", retry_after_ms: 10_000 })

      // As node calls the listeners of a signal it received.
      process.emit("SIGTERM")
      yield* Fiber.joinAll(running)
      expect(slots.open()).toBe(0)
      // The key has its five again.
      yield* Effect.scoped(Effect.forEach(Array.from({ length: 5 }), () => slots.take(reader)))
    }).pipe(Effect.orDie))
})
