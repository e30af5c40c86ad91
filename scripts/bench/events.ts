/**
 * Events and webhooks under load (bench/README.md), on the pipeline's world (scripts/bench/pipeline.ts: 1,000,000
 * ledger rows, acs as a real process with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true):
 *
 * - key proposals at `clients` clients (each queues, so each writes one `action.proposed` event) with one
 *   webhook endpoint subscribed to every event type, against the same without any endpoint. The endpoint is
 *   a real HTTP receiver in this process (a thread of its own) answering 204. Windows alternate (the order
 *   reversed every other round) so load from elsewhere falls on both alike; the ratio is taken per round and
 *   the median reported.
 *   A "with" window creates the endpoint, proposes for `seconds`, then waits until the receiver has every
 *   event of the window (the drain) and deletes the endpoint: acs's CPU and statements are counted over
 *   window and drain, so the deliveries' cost is in the per-proposal figures, and the drain is reported.
 * - commit → delivery: for every event delivered in a "with" window, the receiver's clock at receipt minus
 *   the event's `createdAt` (the database's clock_timestamp() at insert, in the proposal's transaction; the
 *   same machine clock). The target's p95 is over these, under the full load of the window; the same taken
 *   one proposal at a time is reported beside it.
 */
import * as Os from "node:os"
import { performance } from "node:perf_hooks"
import { Worker } from "node:worker_threads"
import { eventTypes } from "../../packages/domain/src/Events.ts"
import { cpuMeter, processCpuSeconds } from "./cpu.ts"
import { type HttpClient, makeHttpClient, summarize, type Summary } from "./measure.ts"
import { makePool } from "./pg.ts"
import type { Pipeline } from "./pipeline.ts"
import { statementDelta, statementSnapshot } from "./statements.ts"

/** Throughput with the webhook / without, at least (bench/README.md: within 10 %). */
export const TARGET_WEBHOOK_SHARE = 0.9
export const TARGET_DELIVERY_P95_MS = 1_000
const WARMUP_SECONDS = 30

export type EventsSubject = "without" | "with"

export interface EventsWindow {
  readonly subject: EventsSubject
  readonly round: number
  readonly proposals: number
  readonly seconds: number
  readonly tps: number
  /** With: from the window's end to the receiver's last event of it. */
  readonly drainMs: number | null
  /** acs's CPU ms per proposal over the window and its drain (the deliveries included). */
  readonly cpuMsPerProposal: number | null
  /** Where the machine's CPU went, ms per proposal over the same span (null off Linux). */
  readonly cpuSplit: CpuSplit | null
  readonly statementsPerProposal: number
  /** With: commit → received, every event of the window. */
  readonly delivery: Summary | null
  readonly loadAverage: number
}

/** CPU per proposal of each process a window ran: acs's two, the cluster, the bench's own (clients, receiver). */
export interface CpuSplit {
  readonly api: number
  readonly worker: number
  readonly postgres: number
  readonly bench: number
}

/** Milliseconds per proposal between two readings of CPU seconds (null when either is missing). */
const cpuPerProposal = (before: CpuSplit | null, after: CpuSplit | null, proposals: number): CpuSplit | null => {
  if (before === null || after === null) return null
  const ms = (key: keyof CpuSplit) => round3(((after[key] - before[key]) * 1000) / proposals)
  return { api: ms("api"), worker: ms("worker"), postgres: ms("postgres"), bench: ms("bench") }
}

export interface EventsResults {
  readonly clients: number
  readonly rounds: number
  readonly seconds: number
  readonly windows: ReadonlyArray<EventsWindow>
  readonly withoutTps: number
  readonly withTps: number
  /** Median of the per-round ratios with / without. */
  readonly share: number
  readonly shares: ReadonlyArray<number>
  readonly withoutCpuMs: number | null
  readonly withCpuMs: number | null
  /** Medians of the windows' splits, with and without the webhook. */
  readonly cpuSplit: Record<EventsSubject, CpuSplit | null>
  readonly withoutStatements: number
  readonly withStatements: number
  /** Commit → delivery of every event of the "with" windows (the target's p95). */
  readonly delivery: Summary
  /** Commit → delivery, one proposal at a time. */
  readonly deliveryOneAtATime: Summary
  readonly drainMs: Summary
  /** Deliveries the receiver got more than once (at least once allows it; reported). */
  readonly duplicates: number
  /** The statements of the last window of each kind, most calls first, per proposal (deliveries' included). */
  readonly statements: Record<EventsSubject, ReadonlyArray<{ readonly query: string; readonly perProposal: number; readonly meanMs: number }>>
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
const round3 = (value: number) => Math.round(value * 1000) / 1000

/**
 * The receiver's server, run in a worker thread: it answers 204 at once and reports, per event, how long
 * after the event's commit it arrived (batched, every 10 ms). A thread of its own, as a receiver would be a
 * process of its own: its work still competes for the machine's cores, but it does not hold up the event
 * loop of the clients sending proposals, which would lower their rate for a reason that is not acs.
 */
const RECEIVER_THREAD = `
const { parentPort } = require("node:worker_threads")
const http = require("node:http")
let pending = []
let timer
const flush = () => { timer = undefined; parentPort.postMessage({ receipts: pending }); pending = [] }
const server = http.createServer((request, response) => {
  const chunks = []
  request.on("data", (chunk) => chunks.push(chunk))
  request.on("end", () => {
    const receivedAt = Date.now()
    response.writeHead(204).end()
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    const actionId = body.data && body.data.action ? body.data.action.actionId : undefined
    pending.push([body.eventId, actionId, receivedAt - Date.parse(body.createdAt)])
    if (timer === undefined) timer = setTimeout(flush, 10)
  })
})
server.keepAliveTimeout = 60000
server.listen(0, "127.0.0.1", () => parentPort.postMessage({ port: server.address().port }))
`

/** The local receiver (in its thread) and what it got: per action, commit → receipt of its event. */
const startReceiver = async () => {
  const latencyByAction = new Map<string, number>()
  const seenEvents = new Set<string>()
  const waiters = new Map<string, () => void>()
  let duplicates = 0
  const thread = new Worker(RECEIVER_THREAD, { eval: true })
  const port = await new Promise<number>((resolve, reject) => {
    thread.once("error", reject)
    thread.once("message", (message: { readonly port: number }) => resolve(message.port))
  })
  thread.on("message", (message: { readonly receipts?: ReadonlyArray<readonly [string, string | undefined, number]> }) => {
    for (const [eventId, actionId, latencyMs] of message.receipts ?? []) {
      if (seenEvents.has(eventId)) {
        duplicates++
        continue
      }
      seenEvents.add(eventId)
      if (actionId === undefined) continue
      latencyByAction.set(actionId, latencyMs)
      waiters.get(actionId)?.()
      waiters.delete(actionId)
    }
  })
  return {
    url: `http://127.0.0.1:${port}/acs-events`,
    duplicates: () => duplicates,
    /** Commit → receipt of each action's event (ms), once all have arrived; throws after `timeoutMs`. */
    awaitActions: async (actionIds: ReadonlyArray<string>, timeoutMs: number): Promise<Array<number>> => {
      const arrived = Promise.all(
        actionIds.filter((id) => !latencyByAction.has(id)).map((id) => new Promise<void>((resolve) => waiters.set(id, resolve)))
      )
      let timer: NodeJS.Timeout | undefined
      const timedOut = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs)))
      const outcome = await Promise.race([arrived, timedOut])
      clearTimeout(timer)
      if (outcome === "timeout") {
        const missing = actionIds.filter((id) => !latencyByAction.has(id))
        for (const id of missing) waiters.delete(id)
        throw new Error(`events: ${missing.length} of ${actionIds.length} events not delivered within ${timeoutMs / 1000} s`)
      }
      return actionIds.map((id) => latencyByAction.get(id)!)
    },
    close: async () => {
      await thread.terminate()
    }
  }
}

export const benchEvents = async (pipeline: Pipeline, log: (message: string) => void, options: {
  readonly rounds: number
  readonly seconds: number
  readonly clients: number
}): Promise<EventsResults> => {
  const { acs, large } = pipeline
  const receiver = await startReceiver()
  const stats = makePool({ connectionString: pipeline.cluster.benchUrl("postgres"), max: 1 })
  const clients: Array<HttpClient> = Array.from({ length: options.clients }, () => makeHttpClient({ authorization: `Bearer ${pipeline.writeKey}` }))
  const proposeUrl = `${acs.api}/accounts/${large.projectId}/actions/budget-change`
  const budgets = await pipeline.budgets()
  const campaigns = [...budgets.keys()]
  let sequence = 0
  // A cut of 1 to 20 cents from a campaign's budget: a key proposal queues (one action.proposed event).
  const keyBody = () => {
    const i = sequence++
    const campaignId = campaigns[i % campaigns.length]!
    return { campaignId, newDailyBudgetMicros: budgets.get(campaignId)! - 10_000 * (1 + (i % 20)), reason: "bench events" }
  }
  const othersCpu = cpuMeter(undefined, pipeline.cluster.dataDirectory)
  /** CPU seconds of the API process, the worker process (0 when it runs inside the API), the cluster and this process. */
  const cpuNow = (): CpuSplit | null => {
    const [api, worker] = pipeline.pids.map((pid) => pid === undefined ? 0 : processCpuSeconds(pid))
    const others = othersCpu()
    return api === undefined || api === null || worker === null || others.postgres === null
      ? null
      : { api, worker: worker ?? 0, postgres: others.postgres, bench: others.bench }
  }
  const propose = async (client: HttpClient) => {
    const answer = (await client.sendJson("POST", proposeUrl, keyBody())) as { actionId: string; mode: string }
    if (answer.mode !== "queued") throw new Error(`events: expected a queued proposal, got ${JSON.stringify(answer).slice(0, 600)}`)
    return answer.actionId
  }
  const drive = async (seconds: number) => {
    const actionIds: Array<string> = []
    const started = performance.now()
    const deadline = started + seconds * 1000
    await Promise.all(clients.map(async (client) => {
      while (performance.now() < deadline) actionIds.push(await propose(client))
    }))
    return { actionIds, seconds: (performance.now() - started) / 1000, endedAt: performance.now() }
  }
  const createWebhook = async () =>
    ((await acs.client.sendJson("POST", `${acs.api}/webhooks`, { url: receiver.url, events: eventTypes, description: "bench" })) as {
      webhook: { webhookId: string }
    }).webhook.webhookId
  const deleteWebhook = async (webhookId: string) => {
    const answer = await acs.client.request("DELETE", `${acs.api}/webhooks/${webhookId}`)
    if (answer.status !== 204) throw new Error(`events: DELETE /webhooks/${webhookId} answered ${answer.status}: ${answer.body}`)
  }

  try {
    const windows: Array<EventsWindow> = []
    const withLatencies: Array<number> = []
    const statements: Record<EventsSubject, EventsResults["statements"][EventsSubject]> = { with: [], without: [] }
    const measure = async (subject: EventsSubject, round: number): Promise<EventsWindow> => {
      const webhookId = subject === "with" ? await createWebhook() : undefined
      const before = await statementSnapshot(stats, pipeline.database)
      const cpuBefore = cpuNow()
      const run = await drive(options.seconds)
      let drainMs: number | null = null
      let delivery: Summary | null = null
      if (webhookId !== undefined) {
        const latencies = await receiver.awaitActions(run.actionIds, 120_000)
        drainMs = round3(Math.max(0, performance.now() - run.endedAt))
        delivery = summarize(latencies)
        withLatencies.push(...latencies)
      }
      const cpuAfter = cpuNow()
      const delta = statementDelta(before, await statementSnapshot(stats, pipeline.database))
      if (webhookId !== undefined) await deleteWebhook(webhookId)
      const proposals = run.actionIds.length
      const cpuSplit = cpuPerProposal(cpuBefore, cpuAfter, proposals)
      statements[subject] = delta.top.slice(0, 12).map((t) => ({ query: t.query, perProposal: round3(t.calls / proposals), meanMs: t.meanMs }))
      const window: EventsWindow = {
        subject,
        round,
        proposals,
        seconds: round3(run.seconds),
        tps: round3(proposals / run.seconds),
        drainMs,
        cpuMsPerProposal: cpuSplit === null ? null : round3(cpuSplit.api + cpuSplit.worker),
        cpuSplit,
        statementsPerProposal: round3(delta.calls / proposals),
        delivery,
        loadAverage: Math.round((Os.loadavg()[0] ?? 0) * 100) / 100
      }
      log(
        `  ${subject} webhook, round ${round + 1}: ${window.tps.toFixed(1)}/s (${proposals} in ${window.seconds.toFixed(2)} s)` +
          (cpuSplit === null
            ? ""
            : `, acs CPU ${(cpuSplit.api + cpuSplit.worker).toFixed(2)} ms (${cpuSplit.api.toFixed(2)} + ${cpuSplit.worker.toFixed(2)}), ` +
              `PostgreSQL ${cpuSplit.postgres.toFixed(2)} ms, bench ${cpuSplit.bench.toFixed(2)} ms`) +
          `, ${window.statementsPerProposal.toFixed(1)} statements` +
          (delivery === null ? "" : `; commit → delivery p50 ${delivery.p50Ms.toFixed(0)} ms p95 ${delivery.p95Ms.toFixed(0)} ms, drain ${drainMs?.toFixed(0)} ms`) +
          `; load ${window.loadAverage}`
      )
      windows.push(window)
      return window
    }

    // Long enough for both paths to run optimized code: the target is about sustained throughput, not the first
    // requests after a start. After 6 s each, the rounds' rate still rose through the first minute (about 250
    // to 400 proposals a second, without the webhook as with it), which swung the rounds' ratios both ways.
    log(`events: warming up (key proposals with and without the webhook, ${WARMUP_SECONDS} s each)`)
    await drive(WARMUP_SECONDS)
    const warmup = await createWebhook()
    const warm = await drive(WARMUP_SECONDS)
    await receiver.awaitActions(warm.actionIds, 120_000)
    await deleteWebhook(warmup)

    log(`events: ${options.rounds} rounds of key proposals at ${options.clients} clients without and with a webhook, ${options.seconds} s each`)
    const rounds: Array<Record<EventsSubject, EventsWindow>> = []
    for (let round = 0; round < options.rounds; round++) {
      const order: ReadonlyArray<EventsSubject> = round % 2 === 0 ? ["without", "with"] : ["with", "without"]
      const got: Partial<Record<EventsSubject, EventsWindow>> = {}
      for (const subject of order) got[subject] = await measure(subject, round)
      rounds.push(got as Record<EventsSubject, EventsWindow>)
    }

    log("events: commit → delivery, one proposal at a time")
    const oneAtATime: Array<number> = []
    const single = await createWebhook()
    for (let i = 0; i < 30; i++) {
      const actionId = await propose(clients[0]!)
      oneAtATime.push(...(await receiver.awaitActions([actionId], 30_000)))
    }
    await deleteWebhook(single)

    const of = (subject: EventsSubject) => windows.filter((w) => w.subject === subject)
    const medianOf = (subject: EventsSubject, pick: (w: EventsWindow) => number | null) => {
      const values = of(subject).map(pick).filter((v): v is number => v !== null)
      return values.length === 0 ? null : round3(median(values))
    }
    const shares = rounds.map((r) => round3(r.with.tps / r.without.tps))
    const splitOf = (subject: EventsSubject): CpuSplit | null => {
      const part = (key: keyof CpuSplit) => medianOf(subject, (w) => w.cpuSplit?.[key] ?? null)
      const [api, worker, postgres, bench] = [part("api"), part("worker"), part("postgres"), part("bench")]
      return api === null || worker === null || postgres === null || bench === null ? null : { api, worker, postgres, bench }
    }
    return {
      clients: options.clients,
      rounds: options.rounds,
      seconds: options.seconds,
      windows,
      withoutTps: medianOf("without", (w) => w.tps) ?? 0,
      withTps: medianOf("with", (w) => w.tps) ?? 0,
      share: round3(median(shares)),
      shares,
      withoutCpuMs: medianOf("without", (w) => w.cpuMsPerProposal),
      withCpuMs: medianOf("with", (w) => w.cpuMsPerProposal),
      cpuSplit: { with: splitOf("with"), without: splitOf("without") },
      withoutStatements: medianOf("without", (w) => w.statementsPerProposal) ?? 0,
      withStatements: medianOf("with", (w) => w.statementsPerProposal) ?? 0,
      delivery: summarize(withLatencies),
      deliveryOneAtATime: summarize(oneAtATime),
      drainMs: summarize(of("with").map((w) => w.drainMs ?? 0)),
      duplicates: receiver.duplicates(),
      statements
    }
  } finally {
    for (const client of clients) client.close()
    await receiver.close()
    await stats.end()
  }
}
