/** Money crosses the wire as decimal strings and lives in acs as integer micros: both ways exactly. */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { decimalFromMicros, microsFromDecimal } from "../src/Money.ts"

describe("money conversion", () => {
  it("round-trips every micros amount exactly", () => {
    fc.assert(fc.property(fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }), (micros) => {
      expect(microsFromDecimal(decimalFromMicros(micros))).toBe(micros)
    }), { numRuns: 2000 })
  })

  it("round-trips every decimal string with up to six fraction digits, up to trailing zeros", () => {
    const decimal = fc.tuple(fc.bigInt({ min: 0n, max: 9_000_000_000n }), fc.string({ unit: fc.constantFrom(..."0123456789".split("")), minLength: 0, maxLength: 6 }))
      .map(([whole, fraction]) => (fraction.length > 0 ? `${whole}.${fraction}` : `${whole}`))
    fc.assert(fc.property(decimal, (text) => {
      const micros = microsFromDecimal(text)
      const back = decimalFromMicros(micros)
      expect(Number(back)).toBe(Number(text))
      expect(microsFromDecimal(back)).toBe(micros)
    }), { numRuns: 2000 })
  })

  it("reads values that floating point gets wrong", () => {
    expect(microsFromDecimal("0.1")).toBe(100_000)
    expect(microsFromDecimal("1.005")).toBe(1_005_000)
    expect(microsFromDecimal("19.99")).toBe(19_990_000)
    expect(microsFromDecimal("4503599627.370495")).toBe(4_503_599_627_370_495)
    expect(decimalFromMicros(1_500_000)).toBe("1.50")
    expect(decimalFromMicros(1_234_567)).toBe("1.234567")
    expect(decimalFromMicros(-250_000)).toBe("-0.25")
    // Just below a whole amount at the top of the range, where floating division would round up.
    expect(decimalFromMicros(8_999_999_999_999_999)).toBe("8999999999.999999")
    expect(decimalFromMicros(Number.MAX_SAFE_INTEGER)).toBe("9007199254.740991")
  })

  it("refuses what is not a plain amount", () => {
    for (const bad of ["", "1e3", "1,50", "1.1234567", "abc", "--1", "1.", ".5", "NaN", "9007199254.740992"]) {
      expect(() => microsFromDecimal(bad), bad).toThrow()
    }
  })
})
