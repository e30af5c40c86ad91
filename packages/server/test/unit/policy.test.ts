/**
 * The safe-apply policy as pure functions: every queue reason of docs/contract.md 3 (1–6) with its policyReasons, the
 * risk tier, and the budget rules of docs/contract.md 3.1 at, just inside and just outside their bounds (property tests).
 */
import type { Band } from "@acs/domain/Actions"
import { DEFAULT_GUARDRAILS, type Evidence } from "@acs/domain/Guardrails"
import { Effect, Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { PolicyFacts, Verdict } from "../../src/actions/kinds/Kind.ts"
import { BudgetChange } from "../../src/actions/kinds/BudgetChange.ts"
import { AUTO_APPLY_LIMIT_PER_24H, decide, type PolicyInput, stillClears } from "../../src/policy/Policy.ts"

const clearing: Verdict = { clears: true, rule: "budget cut of 10.0% is within the 30% cut rule" }
const holding: Verdict = { clears: false, rule: "budget cut of 40.0% is beyond the 30% auto-apply bound" }

const base: PolicyInput = {
  proposedBy: "person",
  killSwitchOn: true,
  accountStatus: "active",
  autoApplyPaused: null,
  cooldown: null,
  highRisk: null,
  autoAppliesLast24h: 0,
  reviewTier: "review",
  verdict: clearing
}

const PAUSE = { reason: "5 upstream write failures in 10 minutes", since: "2026-11-28T10:00:00.000Z" }
const COOLDOWN = "cooldown: action act_1 changed the budget of the same entity at 2026-11-27T10:00:00Z; another budget raise auto-applies only after 2026-11-30T10:00:00Z (72-hour cooldown)"

describe("decide", () => {
  it("auto-applies a person's change the rule clears, naming the rule", () => {
    expect(decide(base)).toEqual({ mode: "auto_applied", riskTier: "safe", reasons: [`auto-apply: ${clearing.rule}`] })
  })

  const reasons: ReadonlyArray<readonly [string, Partial<PolicyInput>, RegExp]> = [
    ["1 kill switch off", { killSwitchOn: false }, /^kill switch: platformAutoApply is off/],
    ["2 account not active", { accountStatus: "paused" }, /^account status is paused/],
    ["3 daily cap reached", { autoAppliesLast24h: AUTO_APPLY_LIMIT_PER_24H }, /^daily cap: .* 20 auto-applies/],
    ["circuit breaker open", { autoApplyPaused: PAUSE }, /^circuit breaker: auto-apply of this account is paused since 2026-11-28T10:00:00.000Z \(5 upstream/],
    ["inside a cooldown", { cooldown: COOLDOWN }, /^cooldown: action act_1 changed the budget/],
    ["4 always-review kind", { reviewTier: "high", verdict: { clears: false, rule: "bid strategy switches always need review" } }, /^always review: bid strategy/],
    ["5 outside the auto-apply set", { verdict: holding }, /^outside the auto-apply set: budget cut of 40\.0%/],
    ["6 proposed with a key", { proposedBy: "key" }, /^proposed with an API key/]
  ]

  it.each(reasons)("queues for reason %s, saying so first", (_name, change, reason) => {
    const decision = decide({ ...base, ...change })
    expect(decision.mode).toBe("queued")
    expect(decision.reasons[0]).toMatch(reason)
  })

  it("lists every reason that holds, and the rule that would have cleared a safe change", () => {
    const decision = decide({ ...base, killSwitchOn: false, proposedBy: "key", autoAppliesLast24h: 25 })
    expect(decision.reasons.map((r) => r.split(":")[0])).toEqual(["kill switch", "daily cap", "proposed with an API key", "would auto-apply"])
    expect(decision.riskTier).toBe("safe")
  })

  it("auto-applies only with the circuit breaker closed and outside any cooldown (property)", () => {
    fc.assert(fc.property(fc.boolean(), fc.boolean(), fc.nat({ max: 30 }), (paused, cooling, used) => {
      const decision = decide({ ...base, autoApplyPaused: paused ? PAUSE : null, cooldown: cooling ? COOLDOWN : null, autoAppliesLast24h: used })
      expect(decision.mode).toBe(!paused && !cooling && used < AUTO_APPLY_LIMIT_PER_24H ? "auto_applied" : "queued")
      expect(decision.reasons.includes(COOLDOWN)).toBe(cooling)
      if (decision.mode === "queued") expect(decision.reasons.at(-1)).toBe(`would auto-apply: ${clearing.rule}`)
    }))
  })

  it("auto-applies under the cap and queues at it (property)", () => {
    fc.assert(fc.property(fc.nat({ max: 100 }), (used) => {
      expect(decide({ ...base, autoAppliesLast24h: used }).mode).toBe(used < AUTO_APPLY_LIMIT_PER_24H ? "auto_applied" : "queued")
    }))
  })

  it("re-checks at apply: a kill switch turned off, an account no longer active, a rule that no longer clears", () => {
    expect(stillClears({ killSwitchOn: true, autoApplyPaused: null, accountStatus: "active", reviewTier: "review", verdict: clearing })).toEqual([])
    const reasons = stillClears({ killSwitchOn: false, autoApplyPaused: PAUSE, accountStatus: "disconnected", reviewTier: "review", verdict: holding })
    expect(reasons).toHaveLength(4)
    expect(reasons.every((r) => r.startsWith("demoted at apply"))).toBe(true)
  })
})

/** Enough evidence behind a raise unless a test says otherwise. */
const ENOUGH = { days: 30, installs: 100 }

const facts = (
  cpa: number | null,
  band: Band | null,
  evidence: { readonly days: number; readonly installs: number } = ENOUGH,
  minimum: Evidence = DEFAULT_GUARDRAILS.evidence
): PolicyFacts => ({
  campaignEvidence30d: () => Effect.succeed(evidence),
  minimumEvidence: Effect.succeed(minimum),
  campaignCpa30d: () => Effect.succeed(cpa),
  accountAvgCpt30d: Effect.succeed(null),
  cpaBand: () => Effect.succeed(band)
})

/** The kind's own verdict on a payload, decoded with the kind's own payload schema. */
const verdictFor = (prior: number, next: number, policyFacts: PolicyFacts): Verdict =>
  BudgetChange.use((definition) =>
    Effect.runSync(
      Schema.decodeUnknown(definition.payload)({
        campaignId: "1",
        campaignName: "c",
        currency: "USD",
        priorDailyBudgetMicros: prior,
        newDailyBudgetMicros: next
      }).pipe(Effect.flatMap((payload) => definition.autoApply(payload, policyFacts)), Effect.orDie)
    )
  )

const budget = fc.integer({ min: 1_000, max: 10_000_000_000 })

describe("budget_change rules (docs/contract.md 3.1)", () => {
  it("clears a cut of at most 30% and holds a deeper one", () => {
    fc.assert(fc.property(budget, (prior) => {
      const bound = Math.ceil((7 * prior) / 10) // the lowest budget that is a cut of at most 30%
      expect(verdictFor(prior, bound, facts(null, null)).clears).toBe(true)
      expect(verdictFor(prior, prior - 1, facts(null, null)).clears).toBe(true)
      expect(verdictFor(prior, bound - 1, facts(null, null)).clears).toBe(false)
    }))
  })

  it("clears a raise of at most 30% only with the 30-day CPA inside the band, bounds included", () => {
    fc.assert(fc.property(budget, fc.integer({ min: 1, max: 100_000_000 }), fc.integer({ min: 0, max: 100_000_000 }), (prior, cpa, width) => {
      const top = Math.floor((13 * prior) / 10) // the highest budget that is a raise of at most 30%
      const band = { minMicros: cpa, maxMicros: cpa + width }
      expect(verdictFor(prior, top, facts(cpa, band)).clears).toBe(true)
      expect(verdictFor(prior, top, facts(cpa + width, band)).clears).toBe(true)
      expect(verdictFor(prior, top + 1, facts(cpa, band)).clears).toBe(false)
      expect(verdictFor(prior, top, facts(cpa + width + 1, band)).clears).toBe(false)
      if (cpa > 0) expect(verdictFor(prior, top, facts(cpa - 1, band)).clears).toBe(false)
      expect(verdictFor(prior, top, facts(null, band)).clears).toBe(false)
      expect(verdictFor(prior, top, facts(cpa, null)).clears).toBe(false)
    }))
  })

  it("clears a raise only with at least 7 complete days and 20 installs of data in 30 days, and says what it has", () => {
    fc.assert(fc.property(budget, fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 1_000 }), (prior, days, installs) => {
      const band = { minMicros: 1_000_000, maxMicros: 2_000_000 }
      const raise = verdictFor(prior, Math.floor((13 * prior) / 10), facts(1_500_000, band, { days, installs }))
      expect(raise.clears).toBe(days >= 7 && installs >= 20)
      if (!raise.clears) expect(raise.rule).toMatch(new RegExp(`needs at least 7 complete days and 20 installs .* has ${days} days? and ${installs} installs?$`))
      // A cut needs no evidence.
      expect(verdictFor(prior, prior - 1, facts(null, null, { days, installs })).clears).toBe(true)
    }))
    expect(verdictFor(1_000_000, 1_300_000, facts(1_500_000, { minMicros: 1_000_000, maxMicros: 2_000_000 }, { days: 7, installs: 20 })).clears).toBe(true)
    expect(verdictFor(1_000_000, 1_300_000, facts(1_500_000, { minMicros: 1_000_000, maxMicros: 2_000_000 }, { days: 6, installs: 20 })).clears).toBe(false)
    expect(verdictFor(1_000_000, 1_300_000, facts(1_500_000, { minMicros: 1_000_000, maxMicros: 2_000_000 }, { days: 7, installs: 19 })).clears).toBe(false)
  })

  it("takes the evidence gate from the account's guardrails, at, below and past its edge", () => {
    fc.assert(fc.property(
      fc.integer({ min: 0, max: 30 }),
      fc.integer({ min: 0, max: 500 }),
      fc.integer({ min: 0, max: 30 }),
      fc.integer({ min: 0, max: 500 }),
      (minDays, minInstalls, days, installs) => {
        const band = { minMicros: 1_000_000, maxMicros: 2_000_000 }
        const at = (d: number, i: number) => verdictFor(1_000_000, 1_200_000, facts(1_500_000, band, { days: d, installs: i }, { minDays, minInstalls }))
        expect(at(days, installs).clears).toBe(days >= minDays && installs >= minInstalls)
        expect(at(minDays, minInstalls).clears).toBe(true)
        if (minDays > 0) expect(at(minDays - 1, minInstalls).rule).toContain(`needs at least ${minDays} complete days and ${minInstalls} installs`)
        if (minInstalls > 0) expect(at(minDays, minInstalls - 1).clears).toBe(false)
      }
    ))
  })
})
