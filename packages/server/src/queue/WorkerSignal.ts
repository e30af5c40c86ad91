/** Wakes this instance's idle apply workers at once (a proposal committed here, or a NOTIFY from another). */
import { Effect, Queue } from "effect"

export class WorkerSignal extends Effect.Service<WorkerSignal>()("acs/WorkerSignal", {
  effect: Effect.gen(function*() {
    // Sliding: a burst of wakes while every worker is busy collapses into a few, never blocks the sender.
    const queue = yield* Queue.sliding<void>(16)
    const wake = Queue.offer(queue, undefined).pipe(Effect.asVoid)
    /** Waits for a wake or until `ms` pass, whichever comes first. */
    const sleep = (ms: number) => Effect.raceFirst(Queue.take(queue), Effect.sleep(ms)).pipe(Effect.asVoid)
    /**
     * Takes one wake if any is waiting: a worker that claimed a job without being woken (at once after its last
     * one) takes that job's wake, which would otherwise send an idle worker to claim nothing.
     */
    const consume = Queue.poll(queue).pipe(Effect.asVoid)
    return { wake, sleep, consume } as const
  })
}) {}
