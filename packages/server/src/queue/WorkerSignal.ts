/**
 * Wakes this instance's idle apply workers at once (a proposal committed here, or a NOTIFY from another), and
 * holds the accounts they claim from next, in turn: the one a wake named, those a read of the queue found ready,
 * an account whose claim saw more of its jobs waiting (at the back, so one busy account does not hold the
 * workers while another's job waits).
 */
import { Effect, Option, Queue } from "effect"

export class WorkerSignal extends Effect.Service<WorkerSignal>()("acs/WorkerSignal", {
  effect: Effect.gen(function*() {
    // Sliding: a burst of wakes while every worker is busy collapses into a few, never blocks the sender.
    const queue = yield* Queue.sliding<void>(16)
    // Insertion order is the turn order; an account is in it once.
    const turns = new Set<string>()

    /** The account's turn comes after those already waiting (where it is already, it keeps its place). */
    const ready = (projectId: string) => Effect.sync(() => void turns.add(projectId))

    /** The next account to claim from, taken out of the turns. */
    const nextAccount = Effect.sync(() => {
      const first = turns.values().next()
      if (first.done === true) return Option.none<string>()
      turns.delete(first.value)
      return Option.some(first.value)
    })

    const hasAccounts = Effect.sync(() => turns.size > 0)

    const wake = (projectId: string) => Effect.zipRight(ready(projectId), Queue.offer(queue, undefined)).pipe(Effect.asVoid)

    /** Waits for a wake or until `ms` pass, whichever comes first. */
    const sleep = (ms: number) => Effect.raceFirst(Queue.take(queue), Effect.sleep(ms)).pipe(Effect.asVoid)
    /**
     * Takes one wake if any is waiting: a worker that claimed a job without being woken (at once after its last
     * one) takes that job's wake, which would otherwise send an idle worker to claim nothing.
     */
    const consume = Queue.poll(queue).pipe(Effect.asVoid)
    return { wake, sleep, consume, ready, nextAccount, hasAccounts } as const
  })
}) {}
