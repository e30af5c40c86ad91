/**
 * The 3 × budget hard cap as a local validation rule, pure: a new daily budget above three times the warehouse
 * value is refused with a reason naming the cap, exactly three times is accepted (inclusive, integer micros),
 * and the reason says the largest budget that would be.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { hardCapReason } from "../../src/actions/kinds/BudgetChange.ts"
import { BUDGET_HARD_CAP_MULTIPLE } from "../../src/policy/Policy.ts"

/** A warehouse daily budget in micros: from one micro to a million units. */
const warehouse = fc.integer({ min: 1, max: 1_000_000_000_000 })

describe("the budget hard cap at proposal", () => {
  it("is three times the warehouse value", () => {
    expect(BUDGET_HARD_CAP_MULTIPLE).toBe(3)
  })

  it("accepts exactly 3 × and refuses the next micro, naming the cap", () => {
    fc.assert(fc.property(warehouse, (w) => {
      expect(hardCapReason(w, 3 * w, "USD")).toBeNull()
      expect(hardCapReason(w, 3 * w + 1, "USD")).toMatch(/^hard cap: the new daily budget .* is more than 3 × the campaign's daily budget/)
    }))
  })

  it("refuses exactly the budgets above 3 ×, whatever the direction of the change", () => {
    fc.assert(fc.property(warehouse, fc.integer({ min: 1, max: 4_000_000_000_000 }), (w, next) => {
      expect(hardCapReason(w, next, "USD") !== null).toBe(next > 3 * w)
    }))
  })

  it("says the warehouse value and the most it accepts, in the account's currency", () => {
    expect(hardCapReason(10_000_000, 30_010_000, "EUR")).toBe(
      "hard cap: the new daily budget 30.01 EUR is more than 3 × the campaign's daily budget in the warehouse (10.00 EUR); " +
        "at most 30.00 EUR is accepted"
    )
  })
})
