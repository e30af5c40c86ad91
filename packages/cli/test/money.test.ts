/** Amounts as `acs` prints them: the currency's own decimals, then its code. */
import { describe, expect, it } from "vitest"
import { money } from "../src/Output.ts"

describe("money", () => {
  it("prints micro-units in the currency's own decimals with its code", () => {
    expect(money(12_500_000, "USD")).toBe("12.50 USD")
    expect(money(1_234_567_890, "EUR")).toBe("1,234.57 EUR")
    expect(money(1_200_000_000, "JPY")).toBe("1,200 JPY")
    expect(money(4_000_000, "KRW")).toBe("4 KRW")
    expect(money(null, "USD")).toBeNull()
  })

  it("falls back to two decimals for a code Intl does not know", () => {
    expect(money(1_000_000, "ZZZ1")).toBe("1.00 ZZZ1")
  })
})
