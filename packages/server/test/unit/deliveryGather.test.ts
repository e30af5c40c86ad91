/**
 * The delivery workers' gather as pure functions (webhooks/DeliveryGather.ts): the decayed rate of claims, and a
 * gather that stays within its bounds, grows with the rate, and never waits past the time most of a batch takes
 * to fill.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { gatherMs, MAX_GATHER_MS, MIN_GATHER_MS, nextRate } from "../../src/webhooks/DeliveryGather.ts"

const rates = fc.double({ min: 0, max: 100_000, noNaN: true })
const batches = fc.integer({ min: 1, max: 1_000 })
/** Rates at which a batch of up to 1,000 would not fill within the longest gather. */
const lowRates = fc.double({ min: 0, max: 3_000, noNaN: true })

describe("nextRate", () => {
  it("settles on the rate claims come at", () => {
    // 320 deliveries a second, claimed as 32 every 100 ms, for ten seconds.
    let rate = 0
    for (let i = 0; i < 100; i++) rate = nextRate(rate, 100, 32)
    expect(rate).toBeGreaterThan(300)
    expect(rate).toBeLessThan(360)
  })

  it("forgets a burst once the instance has been quiet for seconds", () => {
    expect(nextRate(500, 10_000, 0)).toBeLessThan(0.1)
  })

  it("never falls below what was just claimed, nor below zero", () => {
    fc.assert(fc.property(rates, fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 0, max: 1_000 }), (rate, elapsed, claimed) => {
      const next = nextRate(rate, elapsed, claimed)
      expect(next).toBeGreaterThanOrEqual(claimed)
      expect(next).toBeLessThanOrEqual(rate + claimed)
    }))
  })
})

describe("gatherMs", () => {
  it("keeps a lone event waiting no longer than the shortest gather", () => {
    expect(gatherMs(0, 96)).toBe(MIN_GATHER_MS)
    expect(gatherMs(1, 96)).toBe(MIN_GATHER_MS)
  })

  it("gathers the longest at a busy org's rate, and only as long as a batch takes to fill beyond it", () => {
    expect(gatherMs(250, 96)).toBe(MAX_GATHER_MS)
    // At 960 a second, 90 of the 96 come in 90 ms.
    expect(gatherMs(960, 96)).toBeCloseTo(90)
  })

  it("stays within its bounds", () => {
    fc.assert(fc.property(rates, batches, (rate, batch) => {
      const ms = gatherMs(rate, batch)
      expect(ms).toBeGreaterThanOrEqual(MIN_GATHER_MS)
      expect(ms).toBeLessThanOrEqual(MAX_GATHER_MS)
    }))
  })

  it("gathers less than a batch's worth (a full claim leaves a remainder), unless that is under the shortest gather", () => {
    fc.assert(fc.property(rates, batches, (rate, batch) => {
      const expected = (rate * gatherMs(rate, batch)) / 1_000
      expect(expected <= 0.9 * batch + 1e-9 || gatherMs(rate, batch) === MIN_GATHER_MS).toBe(true)
    }))
  })

  it("grows with the rate while a batch would not fill", () => {
    fc.assert(fc.property(lowRates, lowRates, batches, (a, b, batch) => {
      const [low, high] = a <= b ? [a, b] : [b, a]
      fc.pre((high * MAX_GATHER_MS) / 1_000 <= 0.9 * batch)
      expect(gatherMs(high, batch)).toBeGreaterThanOrEqual(gatherMs(low, batch))
    }))
  })
})
