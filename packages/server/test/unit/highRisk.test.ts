/**
 * Two people for high risk (policy/HighRisk.ts), at, below and past each line: a budget raise past the percentage,
 * removing at least `removals` keywords or negatives, enabling a campaign (when the guardrail is on); a changeset
 * whose member is high risk, or whose members together cross a line.
 */
import { DEFAULT_GUARDRAILS } from "@acs/domain/Guardrails"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { changesetHighRiskReason, highRiskReason } from "../../src/policy/HighRisk.ts"

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

describe("changesetHighRiskReason", () => {
  const budget = (actionId: string, campaignId: string, prior: number, next: number) => ({
    actionId,
    kind: "budget_change",
    payload: { campaignId, priorDailyBudgetMicros: prior, newDailyBudgetMicros: next }
  })

  it("holds a changeset with a high-risk member, naming it", () => {
    const members = [budget("act_a", "1", 100_000_000, 110_000_000), { actionId: "act_b", kind: "campaign_status", payload: { status: "ENABLED", priorStatus: "PAUSED" } }]
    expect(changesetHighRiskReason(members, rules)).toBe("two people: member act_b: enabling a campaign is high risk")
    expect(changesetHighRiskReason(members.slice(0, 1), rules)).toBeNull()
  })

  it("holds removals that cross the line only together, exactly at the line", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 30 }), fc.array(fc.integer({ min: 0, max: 12 }), { maxLength: 6 }), (removals, sizes) => {
      const members = sizes.map((n, i) => ({
        actionId: `act_${i}`,
        kind: i % 2 === 0 ? "remove_keywords" : "remove_negative_keywords",
        payload: i % 2 === 0 ? { priorKeywords: Array.from({ length: n }, () => ({})) } : { priorNegatives: Array.from({ length: n }, () => ({})) }
      }))
      const total = sizes.reduce((a, b) => a + b, 0)
      const alone = sizes.some((n) => n >= removals)
      expect(changesetHighRiskReason(members, { ...rules, removals }) !== null).toBe(total >= removals)
      if (!alone && total >= removals) expect(changesetHighRiskReason(members, { ...rules, removals })).toMatch(new RegExp(`remove ${total} keywords and negative keywords together`))
    }))
  })

  it("holds one campaign raised past the line by several members, not raises of different campaigns", () => {
    fc.assert(fc.property(fc.integer({ min: 1_000, max: 1_000_000_000 }), fc.array(fc.integer({ min: 0, max: 200_000 }), { minLength: 1, maxLength: 5 }), fc.integer({ min: 0, max: 100 }), (prior, steps, pct) => {
      const raises = steps.map((step) => Math.floor((prior * step) / 1_000_000))
      const sameCampaign = raises.map((by, i) => budget(`act_${i}`, "7", prior, prior + by))
      const together = raises.reduce((a, b) => a + b, 0)
      const alone = raises.some((by) => by * 100 > pct * prior)
      expect(changesetHighRiskReason(sameCampaign, { ...rules, budgetIncreasePct: pct }) !== null).toBe(together * 100 > pct * prior)
      const spread = raises.map((by, i) => budget(`act_${i}`, String(i), prior, prior + by))
      expect(changesetHighRiskReason(spread, { ...rules, budgetIncreasePct: pct }) !== null).toBe(alone)
    }))
    expect(changesetHighRiskReason([budget("act_1", "7", 100_000_000, 115_000_000), budget("act_2", "7", 100_000_000, 115_000_000)], rules)).toBe(
      "two people: the changeset's members raise campaign 7's budget by 30.0% together, past the 25% high-risk line"
    )
  })
})
