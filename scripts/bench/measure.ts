/** Timing helpers for the benchmark: a keep-alive HTTP client, samplers and percentiles. */
import * as Http from "node:http"
import { performance } from "node:perf_hooks"

export interface Summary {
  readonly samples: number
  readonly p50Ms: number
  readonly p95Ms: number
  readonly minMs: number
  readonly maxMs: number
  readonly meanMs: number
}

/** Nearest-rank percentile of sorted values. */
const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? Number.NaN

const round = (ms: number) => Math.round(ms * 1000) / 1000

export const summarize = (durations: ReadonlyArray<number>): Summary => {
  const sorted = [...durations].sort((a, b) => a - b)
  const sum = sorted.reduce((a, b) => a + b, 0)
  return {
    samples: sorted.length,
    p50Ms: round(percentile(sorted, 0.5)),
    p95Ms: round(percentile(sorted, 0.95)),
    minMs: round(sorted[0] ?? Number.NaN),
    maxMs: round(sorted[sorted.length - 1] ?? Number.NaN),
    meanMs: round(sorted.length === 0 ? Number.NaN : sum / sorted.length)
  }
}

export interface HttpAnswer {
  readonly status: number
  readonly body: string
}

export interface HttpClient {
  readonly request: (method: string, url: string) => Promise<HttpAnswer>
  /** GET that must answer 200; the body parsed as JSON. */
  readonly getJson: (url: string) => Promise<unknown>
  /** POST without a body that must answer 2xx; the body parsed as JSON. */
  readonly postJson: (url: string) => Promise<unknown>
  /** A request with a JSON body that must answer 2xx; the answer parsed as JSON. */
  readonly sendJson: (method: string, url: string, body: unknown) => Promise<unknown>
  readonly close: () => void
}

/** One keep-alive connection per client, requests strictly one after another; the body is read whole. */
export const makeHttpClient = (headers: Record<string, string> = {}): HttpClient => {
  const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
  const send = (method: string, url: string, body?: string): Promise<HttpAnswer> =>
    new Promise((resolve, reject) => {
      const withBody = body === undefined ? headers : { ...headers, "content-type": "application/json" }
      const request = Http.request(url, { agent, method, headers: withBody }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }))
        response.on("error", reject)
      })
      request.on("error", reject)
      request.end(body)
    })
  const request = (method: string, url: string): Promise<HttpAnswer> => send(method, url)
  const json = async (method: string, url: string, body?: unknown): Promise<unknown> => {
    const answer = await send(method, url, body === undefined ? undefined : JSON.stringify(body))
    if (answer.status < 200 || answer.status > 299) {
      throw new Error(`${method} ${url} answered ${answer.status}: ${answer.body.slice(0, 500)}`)
    }
    return JSON.parse(answer.body) as unknown
  }
  return {
    request,
    getJson: (url) => json("GET", url),
    postJson: (url) => json("POST", url),
    sendJson: (method, url, body) => json(method, url, body),
    close: () => agent.destroy()
  }
}

/** Time one call in milliseconds. */
export const timeIt = async (run: () => Promise<unknown>): Promise<number> => {
  const started = performance.now()
  await run()
  return performance.now() - started
}

export interface SampleOptions {
  readonly warmup: number
  readonly samples: number
  /** Stop early once this much time has been spent sampling (after `minSamples`). */
  readonly budgetMs?: number
  readonly minSamples?: number
}

/** Sequential samples of one operation after a warm-up. */
export const sample = async (run: () => Promise<unknown>, options: SampleOptions): Promise<Array<number>> => {
  for (let i = 0; i < options.warmup; i++) await run()
  const durations: Array<number> = []
  const started = performance.now()
  while (durations.length < options.samples) {
    durations.push(await timeIt(run))
    const spent = performance.now() - started
    if (options.budgetMs !== undefined && spent > options.budgetMs && durations.length >= (options.minSamples ?? 1)) break
  }
  return durations
}

/**
 * Samples several operations in alternating blocks, so that drift (caches, autovacuum, the other process)
 * falls on all of them alike. Each gets `warmup` calls first, then `rounds` blocks of `block` calls.
 */
export const interleaved = async <K extends string>(
  runs: Record<K, () => Promise<unknown>>,
  options: { readonly warmup: number; readonly rounds: number; readonly block: number }
): Promise<Record<K, Array<number>>> => {
  const keys = Object.keys(runs) as Array<K>
  const out = {} as Record<K, Array<number>>
  for (const key of keys) {
    out[key] = []
    for (let i = 0; i < options.warmup; i++) await runs[key]()
  }
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? keys : [...keys].reverse()
    for (const key of order) {
      for (let i = 0; i < options.block; i++) out[key].push(await timeIt(runs[key]))
    }
  }
  return out
}

/**
 * An idempotent call (a poll, a GET) retried on failure: a refused connection, a reset or a 5xx while the
 * machine is overloaded must not end a run that takes minutes. Up to `attempts` tries, backing off from 250 ms;
 * the last failure is thrown.
 */
export const retrying = async <A>(what: string, run: () => Promise<A>, attempts = 5): Promise<A> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run()
    } catch (error) {
      if (attempt >= attempts) throw error
      process.stderr.write(`[bench] ${what} failed (attempt ${attempt} of ${attempts}), retrying: ${String(error).slice(0, 200)}\n`)
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** (attempt - 1)))
    }
  }
}
