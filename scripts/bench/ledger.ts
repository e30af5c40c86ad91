/**
 * The ledger reads of `pnpm bench`, on the pipeline's world (scripts/bench/pipeline.ts):
 *
 * - ledger page latency (`GET actions?limit=50`, the first page and a page half-way down the history) on the
 *   account with 10,000 ledger rows and the one with 1,000,000 (target: within 1.5× of each other at p95);
 * - the cheap authenticated read against the bare baseline: the same first page of the large ledger from a
 *   bare `node:http` + `pg` server running acs's statement (scripts/bench/bareServer.ts), no authentication
 *   (target: acs within 1.5× of it at p50). It shows acs's fixed cost per request, which a slow read hides.
 *
 * All six are sampled in alternating blocks, each on its own keep-alive connection, the same number of times.
 */
import { canonical } from "./json.ts"
import { type HttpClient, interleaved, makeHttpClient, summarize, type Summary } from "./measure.ts"
import type { Pipeline } from "./pipeline.ts"
import { LARGE_LEDGER, SMALL_LEDGER } from "./pipeline.ts"
import type { BareServer } from "./processes.ts"

export const TARGET_LEDGER_PAGE_RATIO = 1.5
export const TARGET_CHEAP_READ_RATIO = 1.5

export interface LedgerResults {
  readonly ledgerRows: { readonly small: number; readonly large: number }
  readonly pages: {
    readonly small: { readonly first: Summary; readonly deep: Summary }
    readonly large: { readonly first: Summary; readonly deep: Summary }
    readonly ratioP95: number
  }
  readonly cheapRead: {
    readonly read: string
    readonly acs: Summary
    readonly bare: Summary
    readonly bareDeep: Summary
    /** acs p50 / bare p50, first page of the large ledger. */
    readonly ratio: number
    /** The same, for the deep page. */
    readonly ratioDeep: number
    /** The bare server answered the same actions, in the same order. */
    readonly identical: boolean
  }
}

export const benchLedgerReads = async (pipeline: Pipeline, bare: BareServer, log: (message: string) => void): Promise<LedgerResults> => {
  const { acs, large, small } = pipeline
  const clients: Array<HttpClient> = []
  const client = (headers: Record<string, string> = {}) => {
    const made = makeHttpClient(headers)
    clients.push(made)
    return made
  }
  try {
    const auth = { authorization: `Bearer ${pipeline.writeKey}` }
    const [smallFirst, smallDeep, largeFirst, largeDeep] = [client(auth), client(auth), client(auth), client(auth)]
    const [bareFirst, bareDeep] = [client(), client()]
    // The seeded rows end an hour ago, one millisecond apart: `before` half-way down the history.
    const oldest = Date.now() - 3_600_000
    const middle = (rows: number) => new Date(oldest - Math.floor(rows / 2)).toISOString()
    const page = (projectId: string, before?: string) =>
      `${acs.api}/accounts/${projectId}/actions?limit=50${before === undefined ? "" : `&before=${encodeURIComponent(before)}`}`
    const barePage = (projectId: string, before?: string) =>
      `${bare.baseUrl}/ledger/${projectId}?limit=50${before === undefined ? "" : `&before=${encodeURIComponent(before)}`}`
    const largeMiddle = middle(LARGE_LEDGER)

    const ids = (answer: unknown) => canonical((answer as { actions: Array<{ actionId: string }> }).actions.map((a) => a.actionId))
    const identical = ids(await largeFirst.getJson(page(large.projectId))) === ids(await bareFirst.getJson(barePage(large.projectId))) &&
      ids(await largeDeep.getJson(page(large.projectId, largeMiddle))) === ids(await bareDeep.getJson(barePage(large.projectId, largeMiddle)))

    log("ledger: pages of 10,000 and 1,000,000 rows, and the bare server's (interleaved)")
    const samples = await interleaved({
      smallFirst: () => smallFirst.getJson(page(small.projectId)),
      smallDeep: () => smallDeep.getJson(page(small.projectId, middle(SMALL_LEDGER))),
      largeFirst: () => largeFirst.getJson(page(large.projectId)),
      largeDeep: () => largeDeep.getJson(page(large.projectId, largeMiddle)),
      bareFirst: () => bareFirst.getJson(barePage(large.projectId)),
      bareDeep: () => bareDeep.getJson(barePage(large.projectId, largeMiddle))
    }, { warmup: 100, rounds: 40, block: 10 })
    const s = {
      smallFirst: summarize(samples.smallFirst),
      smallDeep: summarize(samples.smallDeep),
      largeFirst: summarize(samples.largeFirst),
      largeDeep: summarize(samples.largeDeep),
      bareFirst: summarize(samples.bareFirst),
      bareDeep: summarize(samples.bareDeep)
    }
    return {
      ledgerRows: { small: SMALL_LEDGER, large: LARGE_LEDGER },
      pages: {
        small: { first: s.smallFirst, deep: s.smallDeep },
        large: { first: s.largeFirst, deep: s.largeDeep },
        ratioP95: Math.max(s.largeFirst.p95Ms / s.smallFirst.p95Ms, s.largeDeep.p95Ms / s.smallDeep.p95Ms)
      },
      cheapRead: {
        read: "GET actions?limit=50, first page of the 1,000,000-row ledger (write key)",
        acs: s.largeFirst,
        bare: s.bareFirst,
        bareDeep: s.bareDeep,
        ratio: s.largeFirst.p50Ms / s.bareFirst.p50Ms,
        ratioDeep: s.largeDeep.p50Ms / s.bareDeep.p50Ms,
        identical
      }
    }
  } finally {
    for (const one of clients) one.close()
  }
}
