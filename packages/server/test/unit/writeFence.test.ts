/**
 * The fence before an apply's upstream writes (worker/WriteFence.ts): a step's start is recorded by the fence of
 * its first write, every later write checks the lease, and no write passes before its step's start is recorded.
 */
import { Cause, Deferred, Effect, Exit, Fiber, Option } from "effect"
import { describe, expect, it } from "vitest"
import { makeWriteFence } from "../../src/worker/WriteFence.ts"
import { LeaseLost } from "../../src/queue/Jobs.ts"

const recorder = () => {
  const log: Array<string> = []
  const note = (entry: string) => Effect.sync(() => void log.push(entry))
  return { log, note }
}

describe("makeWriteFence", () => {
  it("records the step's start at its first write, then checks the lease before each further write", async () => {
    const { log, note } = recorder()
    const fence = makeWriteFence(note("check"))
    await Effect.runPromise(Effect.gen(function*() {
      yield* fence.beforeWrite
      yield* fence.startOnWrite(note("start 1"))
      yield* note("read")
      yield* fence.beforeWrite
      yield* note("write")
      yield* fence.beforeWrite
      yield* fence.started
      yield* note("end 1")
    }))
    expect(log).toEqual(["check", "read", "start 1", "write", "check", "end 1"])
  })

  it("records the start of a step that wrote nothing before its end, once; a dropped start is not recorded", async () => {
    const { log, note } = recorder()
    const fence = makeWriteFence(note("check"))
    await Effect.runPromise(Effect.gen(function*() {
      yield* fence.startOnWrite(note("start 1"))
      yield* fence.started
      yield* fence.started
      yield* note("end 1")
      yield* fence.startOnWrite(note("start 2"))
      yield* fence.dropStart
      yield* fence.beforeWrite
    }))
    expect(log).toEqual(["start 1", "end 1", "check"])
  })

  it("holds a write made while the first one's start is being recorded until it is, then checks the lease for it", async () => {
    const { log, note } = recorder()
    const fence = makeWriteFence(note("check"))
    await Effect.runPromise(Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      yield* fence.startOnWrite(Effect.zipRight(Deferred.await(gate), note("start")))
      const first = yield* Effect.fork(Effect.zipRight(fence.beforeWrite, note("write 1")))
      const second = yield* Effect.fork(Effect.zipRight(fence.beforeWrite, note("write 2")))
      yield* Effect.yieldNow()
      expect(log).toEqual([])
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(second)
    }))
    expect(log[0]).toBe("start")
    expect(log.slice(1).sort()).toEqual(["check", "write 1", "write 2"])
    expect(log.indexOf("check")).toBeLessThan(log.indexOf("write 2"))
  })

  it("stops the write with a LeaseLost defect when the start or the check finds the job is no longer ours", async () => {
    const lost = Effect.fail(new LeaseLost({ jobId: "job_1" }))
    const defectOf = async (program: Effect.Effect<void>) => {
      const exit = await Effect.runPromiseExit(program)
      return Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined
    }
    const startLost = makeWriteFence(Effect.void)
    expect(await defectOf(Effect.zipRight(startLost.startOnWrite(lost), startLost.beforeWrite))).toBeInstanceOf(LeaseLost)
    expect(await defectOf(makeWriteFence(lost).beforeWrite)).toBeInstanceOf(LeaseLost)
  })
})
