/** The spend-anomaly rule (guard/SpendAnomaly.ts) with generated hours: the median of the same hour on 6 days before. */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { latestCompleteHour, spendAnomaly, USUAL_DAYS } from "../../src/guard/SpendAnomaly.ts"
import { addDays } from "../../src/warehouse/Window.ts"

const LATEST = "2026-12-06T14"
const before = (daysBack: number) => `${addDays("2026-12-06", -daysBack)}T14`

const usualSpends = fc.array(fc.integer({ min: 0, max: 10_000_000 }), { minLength: USUAL_DAYS, maxLength: USUAL_DAYS })
const rowsOf = (usual: ReadonlyArray<number>, latest: number) => [
  ...usual.map((spendMicros, i) => ({ hour: before(i + 1), spendMicros })),
  { hour: LATEST, spendMicros: latest }
]
const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return (sorted[2]! + sorted[3]!) / 2
}

describe("the spend-anomaly rule", () => {
  it("flags the hour exactly when its spend is past the multiple of the median of the same hour before, with some usual spend", () => {
    fc.assert(fc.property(usualSpends, fc.double({ min: 1.5, max: 20, noNaN: true }), fc.double({ min: 0, max: 40, noNaN: true }), (usual, multiple, factor) => {
      const usualMicros = median(usual)
      const latest = Math.round(usualMicros * factor)
      const anomaly = spendAnomaly(rowsOf(usual, latest), LATEST, multiple)
      expect(anomaly !== undefined).toBe(usualMicros > 0 && latest > multiple * usualMicros)
      if (anomaly !== undefined) expect(anomaly).toEqual({ hour: LATEST, spendMicros: latest, usualMicros })
    }))
  })

  it("sums the campaigns of one hour, and other hours of the day never count", () => {
    fc.assert(fc.property(usualSpends, fc.integer({ min: 0, max: 1_000_000_000 }), (usual, latest) => {
      const split = [{ hour: LATEST, spendMicros: Math.floor(latest / 2) }, { hour: LATEST, spendMicros: latest - Math.floor(latest / 2) }]
      const noise = usual.map((spendMicros, i) => ({ hour: before(i + 1).replace("T14", "T15"), spendMicros: spendMicros * 100 }))
      expect(spendAnomaly([...rowsOf(usual, 0).slice(0, USUAL_DAYS), ...split, ...noise], LATEST, 3)).toEqual(
        spendAnomaly(rowsOf(usual, latest), LATEST, 3)
      )
    }))
  })

  it("says nothing without a usual spend, however much the hour spends", () => {
    expect(spendAnomaly([{ hour: LATEST, spendMicros: 999_000_000 }], LATEST, 3)).toBeUndefined()
  })

  it("names the hour before the current one in the account's time zone", () => {
    const instant = Date.parse("2026-12-06T14:30:00Z")
    expect(latestCompleteHour(instant, "UTC")).toBe("2026-12-06T13")
    expect(latestCompleteHour(instant, "America/Los_Angeles")).toBe("2026-12-06T05")
    expect(latestCompleteHour(Date.parse("2026-12-07T00:10:00Z"), "UTC")).toBe("2026-12-06T23")
  })
})
