/**
 * What becomes of a delivery after an attempt: delivered on a 2xx; otherwise tried again after a backoff that
 * doubles from the base, at most an hour apart, until the wait would outlast the retry window, when it gives up
 * (and its endpoint is disabled). A first attempt never gives up at once: it is recorded with its batch as a
 * queued delivery, and gives up at its next attempt if it fails again.
 */

export type DeliveryOutcome = "delivered" | "failed" | "gave_up"

/** The longest wait between two attempts of a delivery, and an endpoint's longest back-off. */
export const MAX_BACKOFF_MS = 3_600_000

/** The wait before attempt `attempts + 1`: base × 2^(attempts − 1), at most an hour. */
export const backoffMs = (attempts: number, baseMs: number): number => Math.min(MAX_BACKOFF_MS, baseMs * 2 ** Math.max(0, attempts - 1))

/** The outcome of an attempt that waits `delayMs` before the next, `windowLeftMs` before the window ends. */
export const deliveryOutcome = (attempt: {
  readonly delivered: boolean
  readonly firstOfBatch: boolean
  readonly delayMs: number
  readonly windowLeftMs: number
}): DeliveryOutcome =>
  attempt.delivered ? "delivered" : !attempt.firstOfBatch && attempt.delayMs >= attempt.windowLeftMs ? "gave_up" : "failed"
