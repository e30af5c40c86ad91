/**
 * Each webhook endpoint's lane on this instance (one slow or dead endpoint never delays another's deliveries:
 * docs/decisions/events-and-webhooks.md). A claimed group of deliveries (a batch of first attempts, or an endpoint's queued ones) is sent
 * through its endpoint's lane while the delivery worker goes back to claiming: nothing but the lane waits for
 * an endpoint's answers. A lane has its own connections (at most `concurrency`, never shared with another
 * endpoint on the same host) and sends at most that many attempts at once; the rest of a group waits in the
 * lane, not in a worker.
 *
 * Two limits end a group early, its unsent deliveries answered as `skipped` (the worker records them due again
 * without counting an attempt):
 * - `backoff`: an attempt of the endpoint got no answer since the group began (a timeout, a refused connection):
 *   the rest is not sent into it; the endpoint backs off (Deliveries.ts `backOff`).
 * - `budget`: the group's in-flight time. An attempt starts only if its timeout would end within `budgetMs`
 *   of the group's start (the first always starts), so a slow endpoint's group ends well inside its lease and
 *   is never sent twice for having outlived it.
 * - `stopping`: the process is stopping (`stop`); what is in flight ends within its timeout, inside the shutdown's
 *   deadline, and the rest is left to the next claim, here or on another instance.
 */
import type { Dispatcher } from "undici"
import type { AttemptResult } from "./WebhookSender.ts"

export type SkipReason = "backoff" | "budget" | "stopping"

export type LaneOutcome<D> =
  | { readonly item: D; readonly result: AttemptResult }
  | { readonly item: D; readonly result: null; readonly skipped: SkipReason }

export interface LanesOptions {
  /** Attempts in flight at once per endpoint (and connections kept to it). */
  readonly concurrency: number
  /** A group's in-flight time: no attempt starts that could run past it. */
  readonly budgetMs: number
  /** An attempt's longest time, from its connection on. */
  readonly timeoutMs: number
  /** Milliseconds, from the caller's clock. */
  readonly now: () => number
  /** The endpoint's own connections, made when its lane is. */
  readonly connect: (concurrency: number) => Dispatcher
}

interface Lane {
  readonly dispatcher: Dispatcher
  inFlight: number
  /** Attempts waiting for one in flight to end, each a start. */
  readonly waiting: Array<() => void>
  /** When an attempt last ended without an answer (−∞: never). */
  unansweredAt: number
  usedAt: number
}

/** A lane idle this long is closed (its connections too): an endpoint deleted or quiet keeps nothing open. */
const IDLE_MS = 60_000

export class EndpointLanes {
  private readonly lanes = new Map<string, Lane>()
  private sweptAt = 0
  private stopping = false

  constructor(private readonly options: LanesOptions) {}

  /** Endpoints with a lane now (open connections or attempts out): for tests and metrics. */
  get size(): number {
    return this.lanes.size
  }

  /**
   * Sends `items` to `endpointId` with `attempt`, at most `concurrency` at once, in order; resolves when every
   * item was sent and answered, or skipped.
   */
  run<D>(
    endpointId: string,
    items: ReadonlyArray<D>,
    attempt: (item: D, dispatcher: Dispatcher) => Promise<AttemptResult>
  ): Promise<Array<LaneOutcome<D>>> {
    const startedAt = this.options.now()
    this.sweep(startedAt)
    const lane = this.laneOf(endpointId, startedAt)
    let started = 0
    return Promise.all(items.map((item) =>
      this.acquire(lane).then((): LaneOutcome<D> | Promise<LaneOutcome<D>> => {
        const now = this.options.now()
        lane.usedAt = now
        const skipped: SkipReason | undefined = this.stopping
          ? "stopping"
          : lane.unansweredAt >= startedAt
          ? "backoff"
          : started > 0 && now + this.options.timeoutMs > startedAt + this.options.budgetMs
          ? "budget"
          : undefined
        if (skipped !== undefined) {
          this.release(lane)
          return { item, result: null, skipped }
        }
        started++
        return attempt(item, lane.dispatcher).then((result) => {
          const ended = this.options.now()
          lane.usedAt = ended
          if (result.statusCode === null) lane.unansweredAt = ended
          this.release(lane)
          return { item, result }
        })
      })
    ))
  }

  private laneOf(endpointId: string, now: number): Lane {
    const known = this.lanes.get(endpointId)
    if (known !== undefined) return known
    const lane: Lane = { dispatcher: this.options.connect(this.options.concurrency), inFlight: 0, waiting: [], unansweredAt: -Infinity, usedAt: now }
    this.lanes.set(endpointId, lane)
    return lane
  }

  private acquire(lane: Lane): Promise<void> {
    if (lane.inFlight < this.options.concurrency) {
      lane.inFlight++
      return Promise.resolve()
    }
    return new Promise((resolve) => lane.waiting.push(resolve))
  }

  /** The slot goes to the next waiting attempt, if any. */
  private release(lane: Lane): void {
    const next = lane.waiting.shift()
    if (next === undefined) lane.inFlight--
    else next()
  }

  /** Closes the lanes idle for IDLE_MS, at most once every IDLE_MS. */
  private sweep(now: number): void {
    if (now - this.sweptAt < IDLE_MS) return
    this.sweptAt = now
    for (const [endpointId, lane] of this.lanes) {
      if (lane.inFlight > 0 || lane.waiting.length > 0 || now - lane.usedAt < IDLE_MS) continue
      this.lanes.delete(endpointId)
      // Idle: nothing is cut short; a close that fails leaves only sockets the keep-alive ends anyway.
      lane.dispatcher.close().catch(() => undefined)
    }
  }

  /** No attempt starts from now on: each group ends with those in flight. */
  stop(): void {
    this.stopping = true
  }

  /** Closes every lane's connections (at shutdown, once the groups have ended). */
  close(): Promise<void> {
    const closing = [...this.lanes.values()].map((lane) => lane.dispatcher.close().catch(() => undefined))
    this.lanes.clear()
    return Promise.all(closing).then(() => undefined)
  }
}
