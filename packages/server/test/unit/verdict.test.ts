/**
 * The guard's verdict (guard/Verdict.ts) under property tests: a change that moved nothing passes; too little data
 * or a confounder is inconclusive whatever the numbers; within the noise band passes; past the failure lines fails,
 * and the same numbers the other way round (an improvement) never do; a zero baseline never fails a change on its
 * own; the windows are compared per day, whatever their lengths.
 */
import { DEFAULT_GUARD } from "@acs/domain/Guard"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { changePct, judge, restatedBaseline, type WindowTotals } from "../../src/guard/Verdict.ts"

const settings = DEFAULT_GUARD

/** A window with enough data: at least `minTaps` taps and `minInstalls` installs. */
const window = fc.record({
  days: fc.integer({ min: 1, max: 30 }),
  spendMicros: fc.integer({ min: 1_000_000, max: 100_000_000_000 }),
  impressions: fc.integer({ min: 10_000, max: 10_000_000 }),
  taps: fc.integer({ min: 100, max: 100_000 }),
  installs: fc.integer({ min: 10, max: 10_000 })
})

const scaled = (w: WindowTotals, k: number): WindowTotals => ({
  days: w.days * k,
  spendMicros: w.spendMicros * k,
  impressions: w.impressions * k,
  taps: w.taps * k,
  installs: w.installs * k
})

describe("judge", () => {
  it("passes a change after which nothing moved, every metric at 0 %", () => {
    fc.assert(fc.property(window, (w) => {
      const judgement = judge({ baseline: w, after: w, settings, confounders: [] })
      expect(judgement.verdict).toBe("passed")
      expect(judgement.metrics.map((m) => m.changePct)).toEqual([0, 0, 0, 0, 0, 0])
    }))
  })

  it("compares per day: windows of any length with the same daily rates judge alike", () => {
    fc.assert(fc.property(window, window, fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 5 }), (a, b, j, k) => {
      expect(judge({ baseline: scaled(a, j), after: scaled(b, k), settings, confounders: [] }).verdict)
        .toBe(judge({ baseline: a, after: b, settings, confounders: [] }).verdict)
    }))
  })

  it("is inconclusive with too little data in either window, whatever the numbers, and says which", () => {
    const thin = fc.record({
      days: fc.integer({ min: 1, max: 30 }),
      spendMicros: fc.integer({ min: 0, max: 1_000_000_000 }),
      impressions: fc.integer({ min: 0, max: 100_000 }),
      taps: fc.integer({ min: 0, max: settings.minTaps - 1 }),
      installs: fc.integer({ min: 0, max: settings.minInstalls - 1 })
    })
    fc.assert(fc.property(window, thin, fc.boolean(), (full, few, fewAfter) => {
      const judgement = judge({ baseline: fewAfter ? full : few, after: fewAfter ? few : full, settings, confounders: [] })
      expect(judgement.verdict).toBe("inconclusive")
      expect(judgement.reasons).toEqual([expect.stringMatching(new RegExp(`^too little data ${fewAfter ? "after" : "before"} the change: `))])
    }))
    // Exactly at the minimum, a window counts.
    const edge: WindowTotals = { days: 7, spendMicros: 50_000_000, impressions: 5_000, taps: 100, installs: 0 }
    expect(judge({ baseline: edge, after: edge, settings, confounders: [] }).verdict).toBe("passed")
  })

  it("is inconclusive when something else changed the entity in the window, naming it", () => {
    fc.assert(fc.property(window, window, (a, b) => {
      const judgement = judge({ baseline: a, after: b, settings, confounders: ["an outside change of the bid on 2026-11-20"] })
      expect(judgement).toMatchObject({ verdict: "inconclusive", reasons: ["confounded: an outside change of the bid on 2026-11-20"] })
    }))
  })

  it("passes changes within the noise band, and fails past the failure lines exactly", () => {
    fc.assert(fc.property(window, fc.integer({ min: -100, max: 100 }), (w, tenths) => {
      // Spend moves by ±10 % at most, installs and taps stay: the cost per install moves within the band.
      const after = { ...w, spendMicros: Math.round(w.spendMicros * (1 + tenths / 1000)) }
      const cpa = changePct(w.spendMicros / w.installs, after.spendMicros / after.installs)!
      expect(judge({ baseline: w, after, settings, confounders: [] }).verdict).toBe(cpa > settings.noiseBandPct ? "inconclusive" : "passed")
    }))
    const base: WindowTotals = { days: 7, spendMicros: 1_000_000_000, impressions: 100_000, taps: 1_000, installs: 100 }
    const withCpa = (rise: number) => judge({ baseline: base, after: { ...base, spendMicros: Math.round(1_000_000_000 * (1 + rise / 100)) }, settings, confounders: [] })
    expect(withCpa(20).verdict).toBe("inconclusive")
    expect(withCpa(20.1)).toMatchObject({ verdict: "failed", reasons: ["cost per install +20.1%, past the +20% failure line"] })
    expect(withCpa(10).verdict).toBe("passed")
    expect(withCpa(10.1).verdict).toBe("inconclusive")
    const withInstalls = (n: number) => judge({ baseline: base, after: { ...base, installs: n, spendMicros: base.spendMicros * n / 100 }, settings, confounders: [] })
    expect(withInstalls(80).verdict).toBe("inconclusive")
    expect(withInstalls(79)).toMatchObject({ verdict: "failed", reasons: ["installs per day −21.0%, past the −20% failure line"] })
  })

  it("never fails the improvement: a change failed for its cost per install passes the other way round", () => {
    fc.assert(fc.property(window, fc.integer({ min: 1, max: 500 }), (w, rise) => {
      // Installs per day unchanged: only the spend (and so the cost per install) moves.
      const dearer = { ...w, spendMicros: w.spendMicros * (1 + rise / 100) }
      const forward = judge({ baseline: w, after: dearer, settings, confounders: [] })
      const back = judge({ baseline: dearer, after: w, settings, confounders: [] })
      if (forward.verdict === "failed") expect(back.verdict).toBe("passed")
      expect(back.verdict).not.toBe("failed")
    }))
  })

  it("never fails a change on a zero baseline alone, and fails installs that fell to none", () => {
    fc.assert(fc.property(window, (w) => {
      const none = { ...w, installs: 0 }
      const fromNone = judge({ baseline: none, after: w, settings, confounders: [] })
      expect(fromNone.verdict).toBe("passed")
      expect(fromNone.metrics.find((m) => m.metric === "cpa")).toMatchObject({ before: null, changePct: null })
      const toNone = judge({ baseline: w, after: none, settings, confounders: [] })
      expect(toNone).toMatchObject({ verdict: "failed", reasons: expect.arrayContaining([expect.stringMatching(/^installs per day −100\.0%/)]) })
    }))
  })
})

describe("restatedBaseline", () => {
  it("names a baseline whose installs or spend moved past the noise band since the watch opened, and only then", () => {
    fc.assert(fc.property(window, fc.double({ min: -0.5, max: 0.5, noNaN: true }), fc.boolean(), (w, move, onInstalls) => {
      const now = onInstalls
        ? { ...w, installs: Math.round(w.installs * (1 + move)) }
        : { ...w, spendMicros: Math.round(w.spendMicros * (1 + move)) }
      const moved = onInstalls ? Math.abs(now.installs - w.installs) / w.installs : Math.abs(now.spendMicros - w.spendMicros) / w.spendMicros
      const named = restatedBaseline(w, now, settings.noiseBandPct)
      expect(named.length).toBe(moved * 100 > settings.noiseBandPct ? 1 : 0)
      if (named.length > 0) expect(named[0]).toMatch(/^the days before the change were restated since the watch opened: installs \d+ → \d+/)
    }))
  })

  it("makes the verdict inconclusive, named as a confounder", () => {
    const baseline = { days: 7, spendMicros: 7_000_000_000, impressions: 70_000, taps: 7_000, installs: 700 }
    const confounders = restatedBaseline({ ...baseline, installs: 500 }, baseline, settings.noiseBandPct)
    expect(judge({ baseline, after: { ...baseline, installs: 300 }, settings, confounders })).toMatchObject({
      verdict: "inconclusive",
      reasons: [expect.stringMatching(/^confounded: the days before the change were restated/)]
    })
  })
})
