/**
 * The policy for a changeset as a whole (policy/ChangesetPolicy.ts): it auto-applies only when every member would
 * and all members fit the 24-hour window and the spend envelope; otherwise it queues, naming each reason once with
 * the members it holds.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type ChangesetPolicyInput, decideChangeset, type MemberDecision } from "../../src/policy/ChangesetPolicy.ts"
import { AUTO_APPLY_LIMIT_PER_24H } from "../../src/policy/Policy.ts"

const auto = (id: number): MemberDecision => ({
  actionId: `act_${id}`,
  mode: "auto_applied",
  riskTier: "safe",
  reasons: ["auto-apply: keyword bid change of 5.0% is within the 15% bid rule"]
})
const byKey = (id: number): MemberDecision => ({
  actionId: `act_${id}`,
  mode: "queued",
  riskTier: "safe",
  reasons: ["proposed with an API key: every key-proposed change queues for review", "would auto-apply: a rule"]
})

const base = (members: ReadonlyArray<MemberDecision>, used = 0): ChangesetPolicyInput => ({
  members,
  autoAppliesLast24h: used,
  killSwitchOn: true,
  accountStatus: "active",
  envelopeHolds: [],
  highRisk: null
})

describe("decideChangeset", () => {
  it("auto-applies exactly when every member would and all fit the window", () => {
    fc.assert(fc.property(
      fc.array(fc.boolean(), { minLength: 1, maxLength: 30 }),
      fc.integer({ min: 0, max: AUTO_APPLY_LIMIT_PER_24H + 5 }),
      (autos, used) => {
        const members = autos.map((a, i) => a ? auto(i) : byKey(i))
        const decision = decideChangeset(base(members, used))
        const expected = autos.every(Boolean) && used + members.length <= AUTO_APPLY_LIMIT_PER_24H
        expect(decision.mode).toBe(expected ? "auto_applied" : "queued")
        if (decision.mode === "queued") expect(decision.reasons.length).toBeGreaterThan(0)
      }
    ))
  })

  it("names a shared reason once, with how many members it holds and which", () => {
    const decision = decideChangeset(base([auto(0), byKey(1), byKey(2), byKey(3), byKey(4), byKey(5)]))
    expect(decision).toEqual({
      mode: "queued",
      riskTier: "safe",
      reasons: ["5 members (act_1, act_2, act_3 and 2 more): proposed with an API key: every key-proposed change queues for review"]
    })
  })

  it("says the window is too small for the whole, with the numbers", () => {
    const members = Array.from({ length: 8 }, (_, i) => auto(i))
    expect(decideChangeset(base(members, 15)).reasons).toEqual([
      "24-hour window: the changeset's 8 members would need 8 auto-applies; the account has 5 left (15 of 20 used)"
    ])
  })

  it("takes the kill switch and the account's status as they are now, not as a member recorded them", () => {
    const heldBySwitch: MemberDecision = {
      ...auto(1),
      mode: "queued",
      reasons: ["kill switch: platformAutoApply is off for this organisation, so nothing auto-applies", "would auto-apply: a rule"]
    }
    expect(decideChangeset(base([auto(0), heldBySwitch])).mode).toBe("auto_applied")
    expect(decideChangeset({ ...base([auto(0)]), killSwitchOn: false }).reasons[0]).toMatch(/^kill switch/)
    expect(decideChangeset({ ...base([auto(0)]), accountStatus: "paused" }).reasons[0]).toMatch(/^account status is paused/)
  })

  it("queues a changeset whose raises together do not fit the spend envelope, saying so last", () => {
    const envelope = "spend envelope: this raise of 50.00 USD would bring the net increase of daily budgets in 24 hours to 120.00 USD, …"
    fc.assert(fc.property(fc.integer({ min: 1, max: 10 }), (n) => {
      const members = Array.from({ length: n }, (_, i) => auto(i))
      expect(decideChangeset(base(members)).mode).toBe("auto_applied")
      expect(decideChangeset({ ...base(members), envelopeHolds: [envelope] })).toEqual({ mode: "queued", riskTier: "safe", reasons: [envelope] })
      expect(decideChangeset({ ...base(members, 20), envelopeHolds: [envelope] }).reasons.at(-1)).toBe(envelope)
    }))
  })

  it("takes the highest risk tier of its members", () => {
    const high: MemberDecision = { ...byKey(9), riskTier: "high", reasons: ["always review: bid strategy switches always need review"] }
    expect(decideChangeset(base([auto(0), high])).riskTier).toBe("high")
  })

  it("never auto-applies a changeset its members make high risk together, saying why once", () => {
    const together = "two people: the changeset's members raise campaign 7's budget by 30.0% together, past the 25% high-risk line"
    fc.assert(fc.property(fc.integer({ min: 1, max: 10 }), (n) => {
      const members = Array.from({ length: n }, (_, i) => auto(i))
      expect(decideChangeset({ ...base(members), highRisk: together })).toEqual({ mode: "queued", riskTier: "high", reasons: [together] })
    }))
    // A member high risk alone is named among the members' reasons, not again.
    const alone: MemberDecision = { ...byKey(9), riskTier: "high", reasons: ["two people: enabling a campaign is high risk"] }
    const decision = decideChangeset({ ...base([auto(0), alone]), highRisk: "two people: member act_9: enabling a campaign is high risk" })
    expect(decision.reasons.filter((reason) => reason.includes("enabling a campaign"))).toHaveLength(1)
  })
})
