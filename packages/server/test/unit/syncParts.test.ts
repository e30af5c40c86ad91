/** The pure parts of a sync: the window it reads, rows merged per day, spend suffixes computed in memory. */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import type { AccountRecord } from "../../src/accounts/AccountRecord.ts"
import { mergePeriods, type Period } from "../../src/warehouse/ReportRows.ts"
import { suffixDaysOf, suffixElement } from "../../src/warehouse/SpendSuffixes.ts"
import { planWindow, reportStart, RESTATED_DAYS } from "../../src/warehouse/SyncPlan.ts"
import { addDays, daysBetween, MAX_DAYS } from "../../src/warehouse/Window.ts"

const day = (date: string, spendMicros: number): Period => ({ date, impressions: 1, taps: 1, installs: 0, spendMicros })

const account = (lastSyncedDay: string | null, timeZone = "UTC") => ({ timeZone, lastSyncedDay }) as unknown as AccountRecord

describe("sync parts", () => {
  it("reads the first sync's days, then from a few restated days back, never past 90 days", () => {
    const now = Date.parse("2026-06-15T12:00:00Z")
    expect(planWindow(account(null), now, 30)).toEqual({ windowStart: "2026-05-16", windowEnd: "2026-06-14" })
    expect(planWindow(account("2026-06-10"), now).windowStart).toBe(addDays("2026-06-10", -(RESTATED_DAYS - 1)))
    const stale = planWindow(account("2025-01-01"), now)
    expect(daysBetween(stale.windowStart, stale.windowEnd) + 1).toBe(MAX_DAYS)
  })

  it("asks a report from the day the platform still gives when the account's midnight passed after the plan", () => {
    // 23:59 in Tokyo when planned, 00:01 the next day there when the report is sent: the platform's 90 days moved on.
    const planned = Date.parse("2026-11-29T14:59:00Z")
    const plan = planWindow(account(null, "Asia/Tokyo"), planned)
    expect(plan).toEqual({ windowStart: "2026-08-31", windowEnd: "2026-11-28" })
    expect(reportStart(plan, planned, "Asia/Tokyo")).toBe("2026-08-31")
    expect(reportStart(plan, Date.parse("2026-11-29T15:01:00Z"), "Asia/Tokyo")).toBe("2026-09-01")
    // A later sync's window, days after the platform's first, is asked as planned.
    const later = planWindow(account("2026-11-27", "Asia/Tokyo"), planned)
    expect(reportStart(later, Date.parse("2026-11-29T15:01:00Z"), "Asia/Tokyo")).toBe(later.windowStart)
  })

  it("sums two rows of one entity per day", () => {
    expect(mergePeriods([day("2026-06-01", 5), day("2026-06-02", 1)], [day("2026-06-02", 2)])).toEqual([
      day("2026-06-01", 5),
      { date: "2026-06-02", impressions: 2, taps: 2, installs: 0, spendMicros: 3 }
    ])
  })

  it("computes a suffix as the running spend from the last day back, nothing when nothing was spent", () => {
    const through = "2026-06-14"
    const days = suffixDaysOf(through)
    const byAge = new Array<number>(MAX_DAYS)
    expect(suffixElement(days, [day(through, 0)], byAge)).toBeUndefined()
    fc.assert(fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: MAX_DAYS + 5 }), fc.integer({ min: 1, max: 1000 }))), (spends) => {
      const periods = spends.map(([age, spend]) => day(addDays(through, -age), spend))
      const element = suffixElement(days, periods, byAge)
      const inWindow = spends.filter(([age]) => age < MAX_DAYS)
      if (inWindow.length === 0) {
        expect(element).toBeUndefined()
      } else {
        const values = element!.slice(2, -2).split(",").map(Number)
        expect(values).toHaveLength(MAX_DAYS)
        expect(values[MAX_DAYS - 1]).toBe(inWindow.reduce((a, [, s]) => a + s, 0))
        for (let i = 1; i < MAX_DAYS; i++) expect(values[i]).toBeGreaterThanOrEqual(values[i - 1]!)
      }
    }))
  })
})
