/**
 * The ad-group kinds' auto-apply rules (docs/contract.md 3.1) at, just inside and just outside each bound: pausing an ad
 * group; one CPA goal step of at most 10 % on an existing goal; everything else (default bid, Search Match, ads,
 * create and clone) always held. Pure: the definitions are called with hand-built policy facts.
 */
import { Effect, Schema } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { Kind, PolicyFacts, Verdict } from "../../src/actions/kinds/Kind.ts"
import { AdGroupStatus } from "../../src/actions/kinds/AdGroupStatus.ts"
import { AdStatus } from "../../src/actions/kinds/AdStatus.ts"
import { CloneAdGroup } from "../../src/actions/kinds/CloneAdGroup.ts"
import { CpaGoalChange, MAX_AUTO_CPA_GOAL_STEP_PERCENT } from "../../src/actions/kinds/CpaGoalChange.ts"
import { CreateAdGroup } from "../../src/actions/kinds/CreateAdGroup.ts"
import { DefaultBidChange } from "../../src/actions/kinds/DefaultBidChange.ts"
import { DeleteAdGroup } from "../../src/actions/kinds/DeleteAdGroup.ts"
import { SearchMatchChange } from "../../src/actions/kinds/SearchMatchChange.ts"
import { decide } from "../../src/policy/Policy.ts"

/** Facts no ad-group rule should need: each one fails the test if read. */
const facts: PolicyFacts = {
  campaignCpa30d: () => Effect.die("the ad-group rules do not read the campaign CPA"),
  campaignEvidence30d: () => Effect.die("the ad-group rules do not read the campaign evidence"),
  minimumEvidence: Effect.die("these rules do not read the evidence gate"),
  accountAvgCpt30d: Effect.die("the ad-group rules do not read the average CPT"),
  cpaBand: () => Effect.die("the ad-group rules do not read the CPA band")
}

/** The kind's verdict on a payload, decoded by the kind's own schema (so a wrong test payload fails loudly). */
const verdict = (kind: Kind, payload: unknown): Verdict =>
  kind.use((definition) => Effect.runSync(definition.autoApply(Schema.decodeUnknownSync(definition.payload)(payload), facts)))

const Status = fc.constantFrom("ENABLED" as const, "PAUSED" as const)

describe("ad_group_status auto-apply rule", () => {
  const payload = (status: "ENABLED" | "PAUSED", priorStatus: "ENABLED" | "PAUSED") => ({
    adGroupId: "2",
    adGroupName: "Ad group",
    campaignId: "1",
    campaignName: "Campaign",
    status,
    priorStatus
  })

  it("clears pausing and holds enabling, naming the rule", () => {
    fc.assert(fc.property(Status, Status, (status, prior) => {
      const result = verdict(AdGroupStatus, payload(status, prior))
      expect(result.clears).toBe(status === "PAUSED")
      expect(result.rule).toMatch(status === "PAUSED" ? /pausing ad group "Ad group"/ : /only pausing an ad group auto-applies/)
    }))
  })
})

describe("cpa_goal_change auto-apply rule", () => {
  const payload = (prior: number | null, next: number | null) => ({
    adGroupId: "2",
    adGroupName: "Ad group",
    campaignId: "1",
    currency: "USD",
    newCpaGoalMicros: next,
    priorCpaGoalMicros: prior
  })
  const goal = fc.integer({ min: 1, max: 1_000_000_000_000 })
  /** The largest whole-micro step inside the bound: exactly 10 % when the goal is a multiple of 10. */
  const step = (prior: number) => Math.floor((prior * MAX_AUTO_CPA_GOAL_STEP_PERCENT) / 100)

  it("clears a step of exactly 10 % either way", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 100_000_000_000 }).map((n) => n * 10), fc.boolean(), (prior, up) => {
      const next = up ? prior + prior / 10 : prior - prior / 10
      const result = verdict(CpaGoalChange, payload(prior, next))
      expect(result.clears).toBe(true)
      expect(result.rule).toMatch(/within the 10% step rule/)
    }))
  })

  it("clears any step just inside the bound and holds one micro beyond it", () => {
    fc.assert(fc.property(goal, fc.boolean(), (prior, up) => {
      const inside = step(prior)
      const sign = up ? 1 : -1
      if (prior + sign * inside > 0 && inside > 0) expect(verdict(CpaGoalChange, payload(prior, prior + sign * inside)).clears).toBe(true)
      const beyond = prior + sign * (inside + 1)
      if (beyond > 0) {
        const result = verdict(CpaGoalChange, payload(prior, beyond))
        expect(result.clears).toBe(false)
        expect(result.rule).toMatch(/beyond the 10% auto-apply bound/)
      }
    }))
  })

  it("agrees with |new − prior| × 100 ≤ 10 × prior for any pair", () => {
    fc.assert(fc.property(goal, goal, (prior, next) => {
      fc.pre(prior !== next)
      expect(verdict(CpaGoalChange, payload(prior, next)).clears).toBe(Math.abs(next - prior) * 100 <= 10 * prior)
    }))
  })

  it("holds a first goal (no prior) and the clearing of a goal, naming why", () => {
    fc.assert(fc.property(goal, (next) => {
      const first = verdict(CpaGoalChange, payload(null, next))
      expect(first.clears).toBe(false)
      expect(first.rule).toMatch(/on an existing goal; ad group "Ad group" has none/)
    }))
    expect(verdict(CpaGoalChange, payload(5_000_000, null)).clears).toBe(false)
  })

  it("explicitly: 10 % of 5 USD clears, 10 % plus one micro holds", () => {
    expect(verdict(CpaGoalChange, payload(5_000_000, 5_500_000)).clears).toBe(true)
    expect(verdict(CpaGoalChange, payload(5_000_000, 4_500_000)).clears).toBe(true)
    expect(verdict(CpaGoalChange, payload(5_000_000, 5_500_001)).clears).toBe(false)
    expect(verdict(CpaGoalChange, payload(5_000_000, 4_499_999)).clears).toBe(false)
  })
})

describe("ad-group kinds that never auto-apply", () => {
  const tree = {
    name: "Copy",
    defaultBidMicros: 1_000_000,
    cpaGoalMicros: null,
    searchMatch: false,
    status: "ENABLED",
    keywords: [{ text: "a", matchType: "EXACT", bidMicros: null, status: "ACTIVE" }],
    negativeKeywords: []
  }
  const cases: ReadonlyArray<readonly [Kind, unknown]> = [
    [DefaultBidChange, {
      adGroupId: "2",
      adGroupName: "Ad group",
      campaignId: "1",
      campaignName: "Campaign",
      currency: "USD",
      newDefaultBidMicros: 1_000_001,
      priorDefaultBidMicros: 1_000_000
    }],
    [SearchMatchChange, { adGroupId: "2", adGroupName: "Ad group", campaignId: "1", enabled: false, priorEnabled: true }],
    [AdStatus, { adId: "3", adName: "Ad", adGroupId: "2", campaignId: "1", status: "PAUSED", priorStatus: "ENABLED" }],
    [CreateAdGroup, {
      campaignId: "1",
      campaignName: "Campaign",
      currency: "USD",
      name: "New",
      defaultBidMicros: 1_000_000,
      cpaGoalMicros: null,
      searchMatch: false,
      keywords: [],
      negativeKeywords: []
    }],
    [CloneAdGroup, {
      sourceAdGroupId: "2",
      sourceAdGroupName: "Ad group",
      sourceCampaignId: "1",
      campaignId: "1",
      campaignName: "Campaign",
      currency: "USD",
      copy: tree,
      keywordBidsDropped: 0
    }],
    [DeleteAdGroup, { adGroupId: "2", adGroupName: "Ad group", campaignId: "1", keywordIds: [] }]
  ]

  it("holds every one, even the smallest change or a pause", () => {
    for (const [kind, payload] of cases) {
      const result = verdict(kind, payload)
      expect(result.clears, kind.kind).toBe(false)
      expect(result.rule, kind.kind).toMatch(/always needs review|only the revert/)
    }
  })

  it("gives create and clone the high tier: always review, even for a person with the kill switch on", () => {
    for (const kind of [CreateAdGroup, CloneAdGroup]) {
      expect(kind.reviewTier).toBe("high")
      expect(kind.composite).toBe(true)
      const [, payload] = cases.find(([k]) => k === kind)!
      const decision = decide({
        proposedBy: "person",
        killSwitchOn: true,
        accountStatus: "active",
        autoApplyPaused: null,
        cooldown: null,
        highRisk: null,
        autoAppliesLast24h: 0,
        reviewTier: kind.reviewTier,
        verdict: verdict(kind, payload)
      })
      expect(decision).toMatchObject({ mode: "queued", riskTier: "high" })
      expect(decision.reasons[0]).toMatch(/^always review: /)
    }
  })
})
