/**
 * What the console makes of a harvest (console/src/harvest.ts, domain/src/ActionDiff.ts; docs/decisions/console.md): a term
 * is chosen once per source whatever its case or spaces; the terms are negated at their sources by default only when
 * none goes into the ad group it came from; the delivery a harvest records is read from its payload; and its record
 * shows, per term, the EXACT keyword with its bid and the negative at the source, not `priorDelivery` as a field.
 */
import { Option } from "effect"
import { describe, expect, it } from "vitest"
import { diffOf } from "@acs/domain/ActionDiff"
import { deliveryOf, negatesAtSource, termKey } from "../../../console/src/harvest.ts"

const totals = (spendMicros: number, taps: number, installs: number) => ({ spendMicros, taps, installs })

const payload = {
  currency: "USD",
  negateAtSource: true,
  terms: [
    { text: "puzzle game", sourceAdGroupId: "1", sourceAdGroupName: "Discovery", targetAdGroupId: "2", targetAdGroupName: "Exact", bidMicros: 90_000 },
    { text: "tile game", sourceAdGroupId: "1", sourceAdGroupName: "Discovery", targetAdGroupId: "2", targetAdGroupName: "Exact", bidMicros: null }
  ],
  priorDelivery: {
    start: "2026-10-29",
    end: "2026-11-27",
    adGroups: [{
      campaignId: "9",
      adGroupId: "1",
      adGroupName: "Discovery",
      total: totals(100_000_000, 400, 40),
      removed: totals(12_500_000, 20, 4),
      removedPct: { spend: 12.5, taps: 5, installs: 10 }
    }]
  }
}

describe("the console's harvest", () => {
  it("chooses a term once per source ad group, whatever its case or spaces", () => {
    expect(termKey("1", " Puzzle Game ")).toBe(termKey("1", "puzzle game"))
    expect(termKey("1", "puzzle game")).not.toBe(termKey("2", "puzzle game"))
  })

  it("negates at the sources by default only when no term goes into the ad group it came from", () => {
    const across = { text: "a", sourceAdGroupId: "1", targetAdGroupId: "2" }
    const inPlace = { text: "b", sourceAdGroupId: "1", targetAdGroupId: "1" }
    expect(negatesAtSource([across])).toBe(true)
    expect(negatesAtSource([across, inPlace])).toBe(false)
    expect(negatesAtSource([])).toBe(false)
  })

  it("reads the delivery its negatives remove from the payload, and nothing from another kind's", () => {
    expect(Option.getOrThrow(deliveryOf(payload)).adGroups.map((d) => [d.adGroupName, d.removedPct.spend])).toEqual([["Discovery", 12.5]])
    expect(Option.isNone(deliveryOf({ campaignId: "9", newDailyBudgetMicros: 1, priorDailyBudgetMicros: 2 }))).toBe(true)
  })

  it("shows per term the EXACT keyword with its bid and the negative at its source", () => {
    expect(diffOf("harvest_search_terms", payload)).toEqual([
      { entity: "puzzle game", field: "exactKeyword", prior: undefined, proposed: `in "Exact"`, change: "add" },
      { entity: "puzzle game", field: "keywordBidMicros", prior: undefined, proposed: 90_000, change: "add" },
      { entity: "puzzle game", field: "exactNegative", prior: undefined, proposed: `in "Discovery"`, change: "add" },
      { entity: "tile game", field: "exactKeyword", prior: undefined, proposed: `in "Exact"`, change: "add" },
      { entity: "tile game", field: "keywordBidMicros", prior: undefined, proposed: null, change: "add" },
      { entity: "tile game", field: "exactNegative", prior: undefined, proposed: `in "Discovery"`, change: "add" }
    ])
    const kept = diffOf("harvest_search_terms", { ...payload, negateAtSource: false })
    expect(kept.map((r) => r.field)).toEqual(["exactKeyword", "keywordBidMicros", "exactKeyword", "keywordBidMicros"])
  })
})
