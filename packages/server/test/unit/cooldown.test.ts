/**
 * Which changes wait out a cooldown (policy/Cooldown.ts): a raise of a budget or a bid and an entity enabled do; a
 * cut, a lowered bid, a pause and an unchanged value never do, at, below and past each edge.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { cooldownReason, raisesSpend } from "../../src/policy/Cooldown.ts"

const micros = fc.integer({ min: 10_000, max: 1_000_000_000 })

describe("raisesSpend", () => {
  it("is true for a budget raise only, one micro past the prior budget included", () => {
    fc.assert(fc.property(micros, fc.integer({ min: -1_000_000, max: 1_000_000 }), (prior, by) => {
      const payload = { campaignId: "1", priorDailyBudgetMicros: prior, newDailyBudgetMicros: prior + by }
      expect(raisesSpend("budget_change", payload)).toBe(by > 0)
    }))
  })

  it("is true for a keyword bid change when any keyword's bid rises, and for a default bid raised", () => {
    fc.assert(fc.property(fc.array(fc.tuple(micros, fc.integer({ min: -100_000, max: 100_000 })), { minLength: 1, maxLength: 5 }), (bids) => {
      const keywords = bids.map(([prior, by], i) => ({ keywordId: String(i), priorBidMicros: prior, newBidMicros: prior + by }))
      expect(raisesSpend("keyword_bid_change", { keywords })).toBe(bids.some(([, by]) => by > 0))
    }))
    expect(raisesSpend("default_bid_change", { priorDefaultBidMicros: 1_000_000, newDefaultBidMicros: 1_000_001 })).toBe(true)
    expect(raisesSpend("default_bid_change", { priorDefaultBidMicros: 1_000_000, newDefaultBidMicros: 1_000_000 })).toBe(false)
  })

  it("is true for enabling, never for pausing", () => {
    expect(raisesSpend("campaign_status", { status: "ENABLED", priorStatus: "PAUSED" })).toBe(true)
    expect(raisesSpend("campaign_status", { status: "PAUSED", priorStatus: "ENABLED" })).toBe(false)
    expect(raisesSpend("ad_group_status", { status: "ENABLED", priorStatus: "ENABLED" })).toBe(false)
    expect(raisesSpend("keyword_status", { status: "ACTIVE", keywords: [] })).toBe(true)
    expect(raisesSpend("keyword_status", { status: "PAUSED", keywords: [] })).toBe(false)
  })

  it("is false for kinds no cooldown covers", () => {
    expect(raisesSpend("add_negative_keywords", { newDailyBudgetMicros: 2, priorDailyBudgetMicros: 1 })).toBe(false)
  })
})

describe("cooldownReason", () => {
  it("names the earlier action, or an outside change, and when the cooldown ends", () => {
    const earlier = { actionId: "act_1", kind: "budget_change", at: "2026-11-27T10:00:00Z", endsAt: "2026-11-30T10:00:00Z", applied: true }
    expect(cooldownReason("budget", 72, earlier)).toBe(
      "cooldown: action act_1 changed the budget of the same entity at 2026-11-27T10:00:00Z; another budget raise auto-applies " +
        "only after 2026-11-30T10:00:00Z (72-hour cooldown)"
    )
    expect(cooldownReason("bid", 24, { ...earlier, kind: "external_change" })).toMatch(/^cooldown: an outside change act_1 changed the bid/)
  })

  it("says when the earlier change is approved and still on its way", () => {
    const earlier = { actionId: "act_2", kind: "budget_change", at: "2026-11-27T10:00:00Z", endsAt: "2026-11-30T10:00:00Z", applied: false }
    expect(cooldownReason("budget", 72, earlier)).toBe(
      "cooldown: action act_2, approved at 2026-11-27T10:00:00Z, is changing the budget of the same entity; another budget " +
        "raise auto-applies only after 2026-11-30T10:00:00Z (72-hour cooldown)"
    )
  })
})
