/**
 * Two people for high risk (policy/HighRisk.ts), at, below and past each line: a budget raise past the percentage,
 * removing at least `removals` keywords or negatives, enabling a campaign (when the guardrail is on).
 */
import { DEFAULT_GUARDRAILS } from "@acs/domain/Guardrails"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { highRiskReason } from "../../src/policy/HighRisk.ts"

const rules = DEFAULT_GUARDRAILS.highRisk

describe("highRiskReason", () => {
  it("holds a budget raise exactly when it is past the line, whatever the line", () => {
    fc.assert(fc.property(
      fc.integer({ min: 1_000, max: 10_000_000_000 }),
      fc.integer({ min: -500_000, max: 2_000_000 }),
      fc.integer({ min: 0, max: 200 }),
      (prior, by, pct) => {
        const next = prior + Math.floor((prior * by) / 1_000_000)
        const reason = highRiskReason("budget_change", { priorDailyBudgetMicros: prior, newDailyBudgetMicros: next }, { ...rules, budgetIncreasePct: pct })
        expect(reason !== null).toBe((next - prior) * 100 > pct * prior)
      }
    ))
    const at = (next: number) => highRiskReason("budget_change", { priorDailyBudgetMicros: 100_000_000, newDailyBudgetMicros: next }, rules)
    expect(at(125_000_000)).toBeNull()
    expect(at(125_000_001)).toBe("two people: a budget raise of 25.0% is past the 25% high-risk line")
    expect(at(90_000_000)).toBeNull()
  })

  it("holds removing `removals` or more keywords or negatives at once, not one fewer", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 0, max: 40 }), (removals, n) => {
      const items = Array.from({ length: n }, (_, i) => ({ keywordId: String(i) }))
      expect(highRiskReason("remove_keywords", { priorKeywords: items }, { ...rules, removals }) !== null).toBe(n >= removals)
      expect(highRiskReason("remove_negative_keywords", { priorNegatives: items }, { ...rules, removals }) !== null).toBe(n >= removals)
    }))
  })

  it("holds enabling a campaign only while the guardrail says so, never pausing one", () => {
    const enabling = { status: "ENABLED", priorStatus: "PAUSED" }
    expect(highRiskReason("campaign_status", enabling, rules)).toBe("two people: enabling a campaign is high risk")
    expect(highRiskReason("campaign_status", enabling, { ...rules, enableCampaign: false })).toBeNull()
    expect(highRiskReason("campaign_status", { status: "PAUSED", priorStatus: "ENABLED" }, rules)).toBeNull()
    expect(highRiskReason("keyword_bid_change", { keywords: [] }, rules)).toBeNull()
  })
})
