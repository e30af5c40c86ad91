/**
 * Each endpoint's lane (webhooks/EndpointLanes.ts), with attempts the test answers by hand and a clock it moves:
 * at most `concurrency` of an endpoint's attempts in flight, in order, the rest waiting in the lane; one
 * endpoint that never answers leaves another's group untouched; an attempt given no answer stops the rest of
 * its endpoint's groups (skipped: `backoff`), and a group later starts afresh; no attempt starts that could run
 * past the group's budget, the first always does; each endpoint has connections of its own, closed once idle.
 */
import type { Dispatcher } from "undici"
import { describe, expect, it } from "vitest"
import type { AttemptResult } from "../../src/webhooks/WebhookSender.ts"
import { EndpointLanes, type LaneOutcome } from "../../src/webhooks/EndpointLanes.ts"

const answered: AttemptResult = { delivered: true, statusCode: 204, durationMs: 1, error: null, response: null }
const noAnswer: AttemptResult = { delivered: false, statusCode: null, durationMs: 1_000, error: "no answer within 1000 ms", response: null }

/** Attempts held until the test answers them; the dispatchers made and closed; a clock the test moves. */
const harness = (options: { readonly concurrency: number; readonly budgetMs?: number; readonly timeoutMs?: number }) => {
  let now = 1_000_000
  const out: Array<{ readonly endpoint: string; readonly item: number; readonly answer: (result: AttemptResult) => void }> = []
  const made: Array<{ readonly connections: number; closed: boolean }> = []
  const lanes = new EndpointLanes({
    concurrency: options.concurrency,
    budgetMs: options.budgetMs ?? 60_000,
    timeoutMs: options.timeoutMs ?? 1_000,
    now: () => now,
    connect: (connections) => {
      const dispatcher = { connections, closed: false }
      made.push(dispatcher)
      return { close: () => Promise.resolve(void (dispatcher.closed = true)) } as unknown as Dispatcher
    }
  })
  const run = (endpoint: string, items: ReadonlyArray<number>) =>
    lanes.run(endpoint, items, (item) => new Promise<AttemptResult>((answer) => out.push({ endpoint, item, answer })))
  /** Lets the lanes' promise chains run. */
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve))
  const inFlight = (endpoint: string) => out.filter((o) => o.endpoint === endpoint).map((o) => o.item)
  const answer = (endpoint: string, result: AttemptResult) => {
    for (const attempt of out.filter((o) => o.endpoint === endpoint)) {
      out.splice(out.indexOf(attempt), 1)
      attempt.answer(result)
    }
  }
  return { lanes, run, settle, inFlight, answer, made, tick: (ms: number) => void (now += ms) }
}

const summary = <D>(outcomes: ReadonlyArray<LaneOutcome<D>>) =>
  outcomes.map((o) => o.result === null ? `${String(o.item)}:${o.skipped}` : `${String(o.item)}:${o.result.statusCode ?? "none"}`)

describe("EndpointLanes", () => {
  it("sends at most `concurrency` of an endpoint's attempts at once, in order; a hung endpoint leaves another's group alone", async () => {
    const h = harness({ concurrency: 3 })
    const hung = h.run("whk_hung", [1, 2, 3, 4, 5, 6, 7])
    const healthy = h.run("whk_healthy", [1, 2])
    await h.settle()
    expect(h.inFlight("whk_hung")).toEqual([1, 2, 3])
    expect(h.inFlight("whk_healthy")).toEqual([1, 2])
    h.answer("whk_healthy", answered)
    expect(summary(await healthy)).toEqual(["1:204", "2:204"])
    // Still none of the hung endpoint's four others started.
    await h.settle()
    expect(h.inFlight("whk_hung")).toEqual([1, 2, 3])
    h.answer("whk_hung", answered)
    await h.settle()
    expect(h.inFlight("whk_hung")).toEqual([4, 5, 6])
    h.answer("whk_hung", answered)
    await h.settle()
    h.answer("whk_hung", answered)
    expect(summary(await hung)).toEqual(["1:204", "2:204", "3:204", "4:204", "5:204", "6:204", "7:204"])
    // Connections of its own for each endpoint, as many as it may have attempts out.
    expect(h.made).toEqual([{ connections: 3, closed: false }, { connections: 3, closed: false }])
  })

  it("an attempt given no answer skips the rest of its endpoint's groups; a later group starts afresh", async () => {
    const h = harness({ concurrency: 2 })
    const batch = h.run("whk_dead", [1, 2, 3, 4])
    await h.settle()
    h.tick(10)
    const retries = h.run("whk_dead", [9])
    await h.settle()
    expect(h.inFlight("whk_dead")).toEqual([1, 2])
    h.tick(1_000)
    h.answer("whk_dead", noAnswer)
    // The batch's last two and the other group's retry are not sent into the endpoint.
    expect(summary(await batch)).toEqual(["1:none", "2:none", "3:backoff", "4:backoff"])
    expect(summary(await retries)).toEqual(["9:backoff"])
    h.tick(5_000)
    const probe = h.run("whk_dead", [10])
    await h.settle()
    expect(h.inFlight("whk_dead")).toEqual([10])
    h.answer("whk_dead", answered)
    expect(summary(await probe)).toEqual(["10:204"])
  })

  it("starts no attempt that could run past the group's budget; the first always starts", async () => {
    const h = harness({ concurrency: 1, budgetMs: 2_500, timeoutMs: 1_000 })
    const group = h.run("whk_slow", [1, 2, 3, 4])
    for (const ms of [900, 900]) {
      await h.settle()
      h.tick(ms)
      h.answer("whk_slow", answered)
    }
    // 1800 ms in: a third attempt could end at 2800 ms, past the 2500 ms budget.
    expect(summary(await group)).toEqual(["1:204", "2:204", "3:budget", "4:budget"])
    const tight = harness({ concurrency: 1, budgetMs: 500, timeoutMs: 1_000 })
    const alone = tight.run("whk_slow", [1, 2])
    await tight.settle()
    tight.answer("whk_slow", answered)
    expect(summary(await alone)).toEqual(["1:204", "2:budget"])
  })

  it("closes a lane idle for a minute, and its connections", async () => {
    const h = harness({ concurrency: 2 })
    const first = h.run("whk_quiet", [1])
    await h.settle()
    h.answer("whk_quiet", answered)
    await first
    h.tick(61_000)
    const other = h.run("whk_busy", [1])
    await h.settle()
    expect(h.made.map((m) => m.closed)).toEqual([true, false])
    expect(h.lanes.size).toBe(1)
    h.answer("whk_busy", answered)
    await other
    await h.lanes.close()
    expect(h.made.map((m) => m.closed)).toEqual([true, true])
  })
})
