/**
 * What an attempt makes of a delivery (webhooks/DeliveryOutcome.ts): the backoff doubles from its base up to an
 * hour; a delivery gives up only when its next wait would outlast the retry window, and never at its first
 * attempt, which is recorded with its batch as a queued delivery (counting it as given up would count it twice).
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { backoffMs, deliveryOutcome } from "../../src/webhooks/DeliveryOutcome.ts"

const attempts = fc.record({
  delivered: fc.boolean(),
  firstOfBatch: fc.boolean(),
  delayMs: fc.integer({ min: 0, max: 3_600_000 }),
  windowLeftMs: fc.integer({ min: -1_000, max: 86_400_000 })
})

describe("backoffMs", () => {
  it("doubles from the base, at most an hour", () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(n, 5_000))).toEqual([5_000, 10_000, 20_000, 40_000])
    expect(backoffMs(30, 5_000)).toBe(3_600_000)
    fc.assert(fc.property(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 60_000 }), (n, base) =>
      backoffMs(n + 1, base) >= backoffMs(n, base) && backoffMs(n, base) <= 3_600_000))
  })
})

describe("deliveryOutcome", () => {
  it("a 2xx is delivered, whatever the window", () => {
    fc.assert(fc.property(attempts, (a) => deliveryOutcome({ ...a, delivered: true }) === "delivered"))
  })

  it("a failed first attempt of a batch is queued for its retry, never given up at once", () => {
    fc.assert(fc.property(attempts, (a) => deliveryOutcome({ ...a, delivered: false, firstOfBatch: true }) === "failed"))
  })

  it("a failed queued delivery gives up exactly when its next wait reaches the window's end", () => {
    fc.assert(fc.property(attempts, (a) =>
      deliveryOutcome({ ...a, delivered: false, firstOfBatch: false }) === (a.delayMs >= a.windowLeftMs ? "gave_up" : "failed")))
    expect(deliveryOutcome({ delivered: false, firstOfBatch: false, delayMs: 5_000, windowLeftMs: 4_999 })).toBe("gave_up")
    expect(deliveryOutcome({ delivered: false, firstOfBatch: false, delayMs: 5_000, windowLeftMs: 5_001 })).toBe("failed")
  })
})
