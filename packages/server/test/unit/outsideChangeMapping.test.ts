/** Which entities an acs action touched, and a change-history detail's fields in acs's words. */
import { describe, expect, it } from "vitest"
import { acsChanges } from "../../src/actions/outside/OutsideChangeFields.ts"
import { touchedEntities } from "../../src/actions/outside/TouchedEntities.ts"

describe("touchedEntities", () => {
  it("names the most specific entity of each payload object, and every id a result holds", () => {
    expect(touchedEntities({ kind: "budget_change", payload: { campaignId: "1", campaignName: "c" }, result: {} }))
      .toEqual([{ type: "Campaign", id: "1" }])
    expect(touchedEntities({ kind: "ad_group_status", payload: { campaignId: "1", adGroupId: "2" }, result: null }))
      .toEqual([{ type: "AdGroup", id: "2" }])
    expect(touchedEntities({
      kind: "keyword_bid_change",
      payload: { keywords: [{ keywordId: "7", adGroupId: "2", campaignId: "1" }, { keywordId: "8", adGroupId: "2", campaignId: "1" }] },
      result: {}
    })).toEqual([{ type: "Keyword", id: "7" }, { type: "Keyword", id: "8" }])
    expect(touchedEntities({ kind: "rename", payload: { entity: "adGroup", id: "2", campaignId: "1" }, result: null }))
      .toEqual([{ type: "AdGroup", id: "2" }])
    expect(touchedEntities({ kind: "delete_ad_group", payload: { adGroupId: "2", campaignId: "1", keywordIds: ["7"] }, result: {} }))
      .toEqual([{ type: "AdGroup", id: "2" }, { type: "Keyword", id: "7" }])
  })

  it("takes a create's entities from its result only: the parent it created under was not changed", () => {
    expect(touchedEntities({
      kind: "create_ad_group",
      payload: { campaignId: "1", name: "new" },
      result: { adGroupId: "5", keywordIds: ["9", "10"], "negativeKeywordIds:0": ["11"] }
    })).toEqual([
      { type: "AdGroup", id: "5" },
      { type: "Keyword", id: "9" },
      { type: "Keyword", id: "10" },
      { type: "NegativeKeyword", id: "11" }
    ])
    expect(touchedEntities({ kind: "external_change", payload: { entity: { id: "1" } }, result: null })).toEqual([])
  })
})

describe("acsChanges", () => {
  it("maps v1 names and money to acs's fields and micros, and keeps the rest as the platform says", () => {
    expect(acsChanges({
      entityType: "Campaign",
      fields: [
        { field: "dailyBudget", oldValues: [{ value: { amount: "50", currency: "USD" } }], newValues: [{ value: { amount: "60.5", currency: "USD" } }] },
        {
          field: "bidStrategy",
          oldValues: [{ bidStrategyType: "MANUAL_CPT", bidStrategyGoal: "TAP" }],
          newValues: [{ bidStrategyType: "MAX_CONVERSIONS", bidStrategyGoal: "INSTALL", bid: { amount: "2.5", currency: "USD" } }]
        },
        { field: "billingEvent", oldValues: ["TAPS"], newValues: ["IMPRESSIONS"] },
        { field: "name", oldValues: [], newValues: ["created"] }
      ]
    })).toEqual([
      { field: "dailyBudgetMicros", oldValue: 50_000_000, newValue: 60_500_000 },
      { field: "bidStrategy", oldValue: "MANUAL_CPT", newValue: "MAX_CONVERSIONS" },
      { field: "targetCpaMicros", oldValue: null, newValue: 2_500_000 },
      { field: "billingEvent", oldValue: "TAPS", newValue: "IMPRESSIONS" },
      { field: "name", oldValue: null, newValue: "created" }
    ])
    expect(acsChanges({
      entityType: "Keyword",
      fields: [
        { field: "bid", oldValues: [null], newValues: [{ amount: "1.23", currency: "EUR" }] },
        { field: "status", oldValues: ["ENABLED"], newValues: ["PAUSED"] }
      ]
    })).toEqual([
      { field: "bidMicros", oldValue: null, newValue: 1_230_000 },
      { field: "status", oldValue: "ACTIVE", newValue: "PAUSED" }
    ])
    expect(acsChanges({
      entityType: "AdGroup",
      fields: [{ field: "automatedKeywordsOptIn", oldValues: [false], newValues: [true] }]
    })).toEqual([{ field: "searchMatch", oldValue: false, newValue: true }])
  })
})
