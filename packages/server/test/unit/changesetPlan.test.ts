/**
 * A changeset's plan as pure functions (actions/changesets/Plan.ts): the apply order puts parents before children
 * and every dependency before its dependant, keeps every member exactly once, and is otherwise the order members
 * were added; the hash changes exactly when the plan or a member's payload does; the impact adds up.
 */
import type { KindName } from "@acs/domain/ProposalKinds"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { impactOf, type PlanMember, planHashOf, planOf } from "../../src/actions/changesets/Plan.ts"

const KINDS: ReadonlyArray<KindName> = [
  "budget_change",
  "campaign_status",
  "create_ad_group",
  "default_bid_change",
  "add_keywords",
  "keyword_bid_change",
  "add_negative_keywords",
  "remove_negative_keywords"
]
const LEVEL: Partial<Record<KindName, number>> = {
  budget_change: 0,
  campaign_status: 0,
  create_ad_group: 1,
  default_bid_change: 1,
  add_keywords: 2,
  keyword_bid_change: 2,
  add_negative_keywords: 3,
  remove_negative_keywords: 3
}

/** Members as added: each may depend on members added before it (as Membership.ts requires). */
const membersArb = fc.array(fc.record({ kind: fc.constantFrom(...KINDS), deps: fc.array(fc.nat(), { maxLength: 3 }) }), { maxLength: 40 })
  .map((specs) =>
    specs.map((spec, index): PlanMember => ({
      actionId: `act_${index}`,
      kind: spec.kind,
      dependsOn: index === 0 ? [] : [...new Set(spec.deps.map((d) => `act_${d % index}`))],
      payload: { campaignId: `c${index % 3}`, newDailyBudgetMicros: 2_000_000 + index, priorDailyBudgetMicros: 2_000_000 }
    }))
  )

describe("planOf", () => {
  it("orders every member once, each after its dependencies", () => {
    fc.assert(fc.property(membersArb, (members) => {
      const { order } = planOf(members)
      expect([...order].sort()).toEqual(members.map((m) => m.actionId).sort())
      const at = new Map(order.map((id, index) => [id, index]))
      for (const member of members) for (const dependency of member.dependsOn) expect(at.get(dependency)!).toBeLessThan(at.get(member.actionId)!)
    }))
  })

  it("without dependencies, puts parents before children and keeps the order members were added within a level", () => {
    fc.assert(fc.property(membersArb, (withDeps) => {
      const members = withDeps.map((m) => ({ ...m, dependsOn: [] }))
      const { order, dependencies } = planOf(members)
      expect(dependencies).toEqual([])
      const byId = new Map(members.map((m, index) => [m.actionId, { level: LEVEL[m.kind]!, index }]))
      for (let i = 1; i < order.length; i++) {
        const before = byId.get(order[i - 1]!)!
        const after = byId.get(order[i]!)!
        expect(before.level < after.level || (before.level === after.level && before.index < after.index)).toBe(true)
      }
    }))
  })

  it("lets a negative keyword go first when a keyword change depends on it", () => {
    const members: ReadonlyArray<PlanMember> = [
      { actionId: "act_neg", kind: "add_negative_keywords", dependsOn: [], payload: {} },
      { actionId: "act_bid", kind: "keyword_bid_change", dependsOn: ["act_neg"], payload: {} },
      { actionId: "act_budget", kind: "budget_change", dependsOn: [], payload: {} }
    ]
    expect(planOf(members)).toEqual({
      order: ["act_budget", "act_neg", "act_bid"],
      dependencies: [{ actionId: "act_bid", dependsOn: ["act_neg"] }]
    })
  })
})

describe("planHashOf", () => {
  it("is the same for the same plan and payloads, and changes with a payload's prior state or the order", () => {
    fc.assert(fc.property(membersArb.filter((m) => m.length >= 2), (members) => {
      const plan = planOf(members)
      const hash = planHashOf("cs_1", plan, members)
      expect(planHashOf("cs_1", planOf([...members]), members.map((m) => ({ ...m, payload: { ...m.payload } })))).toBe(hash)
      const moved = members.map((m, index) => index === 0 ? { ...m, payload: { ...m.payload, priorDailyBudgetMicros: 1 } } : m)
      expect(planHashOf("cs_1", plan, moved)).not.toBe(hash)
      expect(planHashOf("cs_1", { ...plan, order: [...plan.order].reverse() }, members)).not.toBe(hash)
      expect(planHashOf("cs_2", plan, members)).not.toBe(hash)
    }))
  })
})

describe("impactOf", () => {
  it("adds the budget changes' deltas and counts members by kind and by campaign", () => {
    fc.assert(fc.property(membersArb, (members) => {
      const impact = impactOf(members)
      const budgetDelta = members.filter((m) => m.kind === "budget_change")
        .reduce((sum, m) => sum + (m.payload["newDailyBudgetMicros"] as number) - (m.payload["priorDailyBudgetMicros"] as number), 0)
      expect(impact.dailyBudgetDeltaMicros).toBe(budgetDelta)
      expect(Object.values(impact.byKind).reduce((a, b) => a + b, 0)).toBe(members.length)
      expect(impact.byCampaign.reduce((sum, c) => sum + c.members, 0)).toBe(members.length)
      expect(impact.byCampaign.reduce((sum, c) => sum + c.dailyBudgetDeltaMicros, 0)).toBe(budgetDelta)
    }))
  })
})
