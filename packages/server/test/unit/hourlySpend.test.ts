/**
 * The guard's hourly rules with generated hours: the spend-anomaly breaker (guard/SpendAnomaly.ts) and the watches'
 * hourly lane (guard/HourlySpend.ts), each against the median of the same hour on the 6 days before.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { hourAfter, hourlyLane, latestCompleteHour, USUAL_DAYS } from "../../src/guard/HourlySpend.ts"
import { spendAnomaly } from "../../src/guard/SpendAnomaly.ts"
import { addDays } from "../../src/warehouse/Window.ts"

const LATEST = "2026-12-06T14"
const before = (daysBack: number) => `${addDays("2026-12-06", -daysBack)}T14`

const usualSpends = fc.array(fc.integer({ min: 0, max: 10_000_000 }), { minLength: USUAL_DAYS, maxLength: USUAL_DAYS })
const rowsOf = (usual: ReadonlyArray<number>, latest: number) => [
  ...usual.map((spendMicros, i) => ({ campaignId: "1", hour: before(i + 1), spendMicros })),
  { campaignId: "1", hour: LATEST, spendMicros: latest }
]
const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return (sorted[2]! + sorted[3]!) / 2
}

describe("the hourly rules", () => {
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
      const split = [{ campaignId: "1", hour: LATEST, spendMicros: Math.floor(latest / 2) }, { campaignId: "2", hour: LATEST, spendMicros: latest - Math.floor(latest / 2) }]
      const noise = usual.map((spendMicros, i) => ({ campaignId: "1", hour: before(i + 1).replace("T14", "T15"), spendMicros: spendMicros * 100 }))
      expect(spendAnomaly([...rowsOf(usual, 0).slice(0, USUAL_DAYS), ...split, ...noise], LATEST, 3)).toEqual(
        spendAnomaly(rowsOf(usual, latest), LATEST, 3)
      )
    }))
  })

  it("says nothing without a usual spend, however much the hour spends", () => {
    expect(spendAnomaly([{ campaignId: "1", hour: LATEST, spendMicros: 999_000_000 }], LATEST, 3)).toBeUndefined()
  })

  it("names the hour before the current one in the account's time zone", () => {
    const instant = Date.parse("2026-12-06T14:30:00Z")
    expect(latestCompleteHour(instant, "UTC")).toBe("2026-12-06T13")
    expect(latestCompleteHour(instant, "America/Los_Angeles")).toBe("2026-12-06T05")
    expect(latestCompleteHour(Date.parse("2026-12-07T00:10:00Z"), "UTC")).toBe("2026-12-06T23")
  })

  it("gives a watch's hourly lane its campaigns' spend in the complete hours after the apply, against their usual, for 24 hours", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 0, max: 1_000 }), fc.integer({ min: 0, max: 1_000 }), (elapsed, usual, now) => {
      const applied = "2026-12-06T09"
      const latest = hourAfter(applied, elapsed)
      const rows = [1, 2, 3, 4, 5, 6, 7].flatMap((daysBack) => Array.from({ length: 24 }, (_, h) => ({
        campaignId: "1",
        hour: `${addDays("2026-12-08", -daysBack)}T${String(h).padStart(2, "0")}`,
        spendMicros: usual
      })))
      const after = Array.from({ length: elapsed }, (_, i) => ({ campaignId: "1", hour: hourAfter(applied, i + 1), spendMicros: now }))
      const other = after.map((row) => ({ ...row, campaignId: "2", spendMicros: 999 }))
      const lane = hourlyLane({ latest, rows: [...rows.filter((r) => r.hour <= applied), ...after, ...other] }, ["1"], applied)
      if (elapsed > 24) expect(lane).toBeUndefined()
      else expect(lane).toMatchObject({ hours: elapsed, spendMicros: now * elapsed, usualMicros: usual * elapsed })
    }))
  })

  it("has no hourly lane before the first complete hour after the apply", () => {
    expect(hourlyLane({ latest: "2026-12-06T09", rows: [] }, ["1"], "2026-12-06T09")).toBeUndefined()
  })
})
