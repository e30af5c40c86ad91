/**
 * The spend envelope's rule (policy/Envelope.ts), at, below and past each edge: a raise fits the 24-hour envelope
 * while what is applied and reserved plus the raise stays within it, and the ceiling while the account's daily
 * budgets, the approved raises on their way and the raise stay within it; a change that raises nothing always fits.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { checkEnvelope, envelopeReasons, type EnvelopeState } from "../../src/policy/Envelope.ts"

const micros = fc.integer({ min: 0, max: 10_000_000_000 })

const state = fc.record({
  used: fc.integer({ min: -5_000_000_000, max: 5_000_000_000 }),
  reserved: micros,
  total: micros,
  maxIncrease: micros,
  maxTotal: fc.option(micros, { nil: null })
}).chain((s) => fc.integer({ min: 0, max: s.reserved }).map((committed): EnvelopeState => ({ ...s, committed })))

const usd = (m: number) => `${(m / 1_000_000).toFixed(2)} USD`

describe("checkEnvelope", () => {
  it("fits the 24-hour envelope exactly while used + reserved + raise ≤ the envelope", () => {
    fc.assert(fc.property(state, fc.integer({ min: 1, max: 2_000_000_000 }), (s, raise) => {
      expect(checkEnvelope(s, raise).fits24h).toBe(s.used + s.reserved + raise <= s.maxIncrease)
    }))
  })

  it("holds at the edge, one micro past it, and below it", () => {
    const s: EnvelopeState = { used: 30_000_000, reserved: 20_000_000, committed: 0, total: 500_000_000, maxIncrease: 100_000_000, maxTotal: 600_000_000 }
    expect(checkEnvelope(s, 50_000_000).fits24h).toBe(true)
    expect(checkEnvelope(s, 50_000_001).fits24h).toBe(false)
    expect(checkEnvelope(s, 49_999_999).fits24h).toBe(true)
    expect(checkEnvelope(s, 100_000_000).underCeiling).toBe(true)
    expect(checkEnvelope(s, 100_000_001).underCeiling).toBe(false)
  })

  it("is under the ceiling while total + committed + raise ≤ the ceiling, and always without one", () => {
    fc.assert(fc.property(state, fc.integer({ min: 1, max: 2_000_000_000 }), (s, raise) => {
      const { underCeiling } = checkEnvelope(s, raise)
      expect(underCeiling).toBe(s.maxTotal === null || s.total + s.committed + raise <= s.maxTotal)
    }))
  })

  it("never holds a change that raises nothing", () => {
    fc.assert(fc.property(state, fc.integer({ min: -2_000_000_000, max: 0 }), (s, raise) => {
      expect(checkEnvelope(s, raise)).toEqual({ fits24h: true, underCeiling: true })
      expect(envelopeReasons(s, raise, usd)).toEqual({ envelope: undefined, ceiling: undefined })
    }))
  })

  it("words each hold with its numbers", () => {
    const s: EnvelopeState = { used: 30_000_000, reserved: 20_000_000, committed: 10_000_000, total: 500_000_000, maxIncrease: 60_000_000, maxTotal: 520_000_000 }
    expect(envelopeReasons(s, 15_000_000, usd)).toEqual({
      envelope: "spend envelope: this raise of 15.00 USD would bring the net increase of daily budgets in 24 hours to 65.00 USD, " +
        "past the envelope of 60.00 USD (30.00 USD applied, 20.00 USD reserved by changes not yet applied)",
      ceiling: "budget ceiling: this raise of 15.00 USD would bring the account's daily budgets to 525.00 USD, past its ceiling of " +
        "520.00 USD: nobody can approve it until budgets fall or an admin raises the ceiling"
    })
  })
})
