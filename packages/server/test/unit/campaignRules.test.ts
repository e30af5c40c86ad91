/**
 * The campaign kinds' auto-apply rules, pure: target_cpa_change clears one step of at most 10 % on an existing
 * target (docs/contract.md 3.1, integer arithmetic, inclusive) and nothing else; the other campaign kinds never clear.
 */
import * as fc from "fast-check"
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import type { Kind, PolicyFacts, Verdict } from "../../src/actions/kinds/Kind.ts"
import { BidStrategyChange } from "../../src/actions/kinds/BidStrategyChange.ts"
import { CampaignStatus } from "../../src/actions/kinds/CampaignStatus.ts"
import { CloneCampaign } from "../../src/actions/kinds/CloneCampaign.ts"
import { CreateCampaign } from "../../src/actions/kinds/CreateCampaign.ts"
import { Rename } from "../../src/actions/kinds/Rename.ts"
import { TargetCpaChange } from "../../src/actions/kinds/TargetCpaChange.ts"

const facts: PolicyFacts = {
  campaignCpa30d: () => Effect.succeed(null),
  campaignEvidence30d: () => Effect.die("the campaign rules do not read the campaign evidence"),
  minimumEvidence: Effect.die("these rules do not read the evidence gate"),
  accountAvgCpt30d: Effect.succeed(null),
  cpaBand: () => Effect.succeed(null)
}

/** The kind's verdict on a payload, decoded through the kind's own payload schema. */
const verdict = (kind: Kind, payload: unknown): Verdict =>
  kind.use((definition) => Effect.runSync(definition.autoApply(Schema.decodeUnknownSync(definition.payload)(payload), facts)))

const targetCpa = (prior: number | null, next: number): Verdict =>
  verdict(TargetCpaChange, {
    campaignId: "1",
    campaignName: "Campaign",
    currency: "USD",
    priorTargetCpaMicros: prior,
    newTargetCpaMicros: next
  })

/** A prior target, in micros, at least 20 so a 10 % step is at least 2. */
const prior = fc.integer({ min: 20, max: 1_000_000_000 })

describe("target_cpa_change auto-apply", () => {
  it("clears a step of exactly 10% (raise or cut)", () => {
    fc.assert(fc.property(prior.map((p) => p - (p % 10)), (p) => {
      expect(targetCpa(p, p + p / 10).clears).toBe(true)
      expect(targetCpa(p, p - p / 10).clears).toBe(true)
    }))
  })

  it("clears the largest step just inside 10%, and holds the next micro", () => {
    fc.assert(fc.property(prior, (p) => {
      const inside = Math.floor(p / 10)
      expect(targetCpa(p, p + inside)).toMatchObject({ clears: true, rule: expect.stringMatching(/within the 10% step rule/) })
      expect(targetCpa(p, p - inside).clears).toBe(true)
      expect(targetCpa(p, p + inside + 1)).toMatchObject({ clears: false, rule: expect.stringMatching(/beyond the 10% auto-apply bound/) })
      expect(targetCpa(p, p - inside - 1).clears).toBe(false)
    }))
  })

  it("clears every step within the bound and holds every step beyond it", () => {
    fc.assert(fc.property(prior, fc.integer({ min: 1, max: 2_000_000_000 }), (p, next) => {
      expect(targetCpa(p, next).clears).toBe(Math.abs(next - p) * 100 <= 10 * p)
    }))
  })

  it("holds without an existing target", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 1_000_000_000 }), (next) => {
      expect(targetCpa(null, next)).toMatchObject({ clears: false, rule: expect.stringMatching(/only on an existing target/) })
    }))
  })
})

describe("the other campaign kinds never auto-apply", () => {
  const tree = {
    name: "New",
    adamId: "1",
    countriesOrRegions: ["US"],
    dailyBudgetMicros: 1_000_000,
    bidStrategy: "MANUAL_CPT",
    targetCpaMicros: null,
    status: "ENABLED",
    negativeKeywords: [],
    adGroups: []
  }
  const cases: ReadonlyArray<readonly [Kind, unknown]> = [
    [CampaignStatus, { campaignId: "1", campaignName: "C", status: "PAUSED", priorStatus: "ENABLED" }],
    [BidStrategyChange, {
      campaignId: "1",
      campaignName: "C",
      currency: "USD",
      bidStrategy: "MAX_CONVERSIONS",
      targetCpaMicros: 1_000_000,
      priorBidStrategy: "MANUAL_CPT",
      priorTargetCpaMicros: null
    }],
    [Rename, { entity: "campaign", id: "1", campaignId: "1", name: "B", priorName: "A" }],
    [CreateCampaign, { currency: "USD", campaign: tree }],
    [CloneCampaign, { currency: "USD", sourceCampaignId: "2", sourceCampaignName: "S", campaign: tree }]
  ]

  it.each(cases.map(([kind, payload]) => [kind.kind, kind, payload] as const))("%s holds", (_, kind, payload) => {
    expect(verdict(kind, payload)).toMatchObject({ clears: false, rule: expect.stringMatching(/always needs review/) })
  })

  it("switching the bid strategy and creating or copying a campaign are high tier (always review)", () => {
    expect([BidStrategyChange, CreateCampaign, CloneCampaign].map((k) => k.reviewTier)).toEqual(["high", "high", "high"])
    expect([CampaignStatus, Rename, TargetCpaChange].map((k) => k.reviewTier)).toEqual(["review", "review", "review"])
  })
})
