/**
 * How long a woken delivery worker gathers before it claims, from the rate this instance claims deliveries at.
 * A claim and its record cost about the same whatever the batch's size (on the bench machine 2.5 ms of the
 * worker's CPU and 1 ms of PostgreSQL's for a batch, against under 30 µs per delivery in it), so at a high rate
 * the worker waits until a batch would be full, at most MAX_GATHER_MS; when few events come there is little to
 * share and the gather shrinks towards MIN_GATHER_MS, so a lone event is not kept waiting.
 */

/** The shortest gather: the commits of the next few milliseconds (the sequencer's own gather is 25 ms). */
export const MIN_GATHER_MS = 25

/** The longest: well inside the second an event may take from its commit to its delivery. */
export const MAX_GATHER_MS = 300

/** Milliseconds of gather per delivery a second: 30 ms at 10 a second, 300 ms (batches of 30) at 100. */
const GATHER_MS_PER_RATE = 3

/** The share of a batch a gather aims at: a full claim wakes another worker at once, for the few left over. */
const FILL = 0.9

/** The rate's memory: claims older than a few seconds hardly count. */
const RATE_TIME_CONSTANT_MS = 1_000

/** Deliveries a second after `claimed` more were claimed `elapsedMs` after the estimate `rate` (decayed). */
export const nextRate = (rate: number, elapsedMs: number, claimed: number): number =>
  rate * Math.exp(-Math.max(0, elapsedMs) / RATE_TIME_CONSTANT_MS) + (claimed * 1_000) / RATE_TIME_CONSTANT_MS

/**
 * The gather at `rate` deliveries a second for batches of `batch`: longer as the rate rises, never past the
 * time most of the batch takes to fill, within MIN_GATHER_MS and MAX_GATHER_MS.
 */
export const gatherMs = (rate: number, batch: number): number => {
  const fills = rate > 0 ? (FILL * batch * 1_000) / rate : MAX_GATHER_MS
  return Math.max(MIN_GATHER_MS, Math.min(MAX_GATHER_MS, fills, rate * GATHER_MS_PER_RATE))
}
