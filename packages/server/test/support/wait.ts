/**
 * Waiting on a condition, for tests that run on a busy machine. The suite must pass on a loaded 2-core CI
 * runner, where anything may take many times as long as on an idle laptop; so a wait polls its condition
 * and its deadline is minutes, not seconds: it only turns a hang into a failure that says what it waited for
 * and what it saw last. The deadline stays well inside the test and hook timeouts of the vitest configs
 * (ten minutes), so that message, not vitest's bare timeout, is what a hang reports.
 */

/** How long a wait may take before it fails. */
export const WAIT_MS = 4 * 60_000

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export interface WaitOptions<A> {
  /** Fails after this long; WAIT_MS unless given. */
  readonly timeoutMs?: number
  /** Between two probes; 100 ms unless given. */
  readonly intervalMs?: number
  /** What the failure says about the last value seen (its JSON, cut at 2,000 characters, unless given). */
  readonly show?: (last: A) => string
  /** A probe that throws counts as "not yet" (a server not listening yet, say) instead of failing the wait. */
  readonly ignoreErrors?: boolean
}

/** Probes until `done` holds for the value `probe` answered, and returns that value. */
export const waitFor = async <A>(
  what: string,
  probe: () => Promise<A>,
  done: (value: A) => boolean,
  options: WaitOptions<A> = {}
): Promise<A> => {
  const timeoutMs = options.timeoutMs ?? WAIT_MS
  const started = Date.now()
  let last = "nothing yet"
  for (;;) {
    try {
      const value = await probe()
      if (done(value)) return value
      last = options.show ? options.show(value) : String(JSON.stringify(value)).slice(0, 2000)
    } catch (error) {
      if (options.ignoreErrors !== true) throw error
      last = `the probe threw: ${error instanceof Error ? error.message : String(error)}`
    }
    if (Date.now() - started >= timeoutMs) break
    await sleep(options.intervalMs ?? 100)
  }
  throw new Error(`waited ${Math.round((Date.now() - started) / 1000)} s for ${what}; last seen: ${last}`)
}
