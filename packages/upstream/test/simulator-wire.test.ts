/**
 * The simulator's entity encoders (v5 and v1) build their wire objects as literals typed by the Wire
 * schemas instead of running `Schema.encodeSync` (see `encodedAs`). Encoding what they build must change
 * nothing, key order included, for every entity of a world and for the variants a world may not have
 * (deleted, MAX_CONVERSIONS with and without a target CPA, no bid, no CPA goal, campaign negatives).
 */
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { V1Acl, V1Ad, V1AdGroup, V1Campaign, V1Keyword, V1NegativeKeyword } from "../src/v1/WireV1.ts"
import { WireAcl, WireAd, WireAdGroup, WireApp, WireCampaign, WireGeo, WireKeyword, WireNegativeKeyword } from "../src/Wire.ts"
import { GEO } from "../src/simulator/SimulatorCatalog.ts"
import { SimulatorState } from "../src/simulator/SimulatorState.ts"
import { resolveSize } from "../src/simulator/SimulatorSize.ts"
import {
  aclToWire,
  adGroupToWire,
  adToWire,
  appToWire,
  campaignToWire,
  geoToWire,
  keywordToWire,
  negativeToWire,
  type WireObject
} from "../src/simulator/SimulatorWire.ts"
import {
  aclToV1,
  adGroupToV1,
  adToV1,
  campaignToV1,
  keywordToV1,
  negativeToV1
} from "../src/simulator/v1/SimulatorV1Wire.ts"

/** `built` is exactly what encoding it with `schema` gives: same values, same key order, no shared arrays. */
const expectEncoded = <A, I>(schema: Schema.Schema<A, I>, built: WireObject) => {
  const encoded = Schema.encodeUnknownSync(schema)(built)
  expect(JSON.stringify(built)).toBe(JSON.stringify(encoded))
  expect(built).toStrictEqual(encoded)
}

describe("simulator wire encoders", () => {
  const state = new SimulatorState(3, resolveSize("demo"), () => Date.UTC(2026, 5, 15, 12))
  const { world } = state

  it("every entity of a world, in v5 and v1, is its own encoding", () => {
    let entities = 0
    for (const account of world.accounts) {
      expectEncoded(WireAcl, aclToWire(world, account))
      expectEncoded(V1Acl, aclToV1(world, account))
      for (const campaign of account.campaigns) {
        const variants = [
          campaign,
          { ...campaign, deleted: true, status: "PAUSED" as const },
          { ...campaign, biddingStrategy: "MAX_CONVERSIONS" as const, targetCpaMicros: 2_500_000 },
          { ...campaign, biddingStrategy: "MAX_CONVERSIONS" as const, targetCpaMicros: null },
          { ...campaign, biddingStrategy: "MANUAL_CPT" as const, targetCpaMicros: 1_000_000 }
        ]
        for (const variant of variants) {
          expectEncoded(WireCampaign, campaignToWire(account, variant))
          expectEncoded(V1Campaign, campaignToV1(account, variant))
        }
        for (const negative of campaign.negatives) {
          expectEncoded(WireNegativeKeyword, negativeToWire(negative))
          expectEncoded(V1NegativeKeyword, negativeToV1(account, negative))
        }
        for (const adGroup of campaign.adGroups) {
          for (const variant of [adGroup, { ...adGroup, cpaGoalMicros: null, deleted: true }, { ...adGroup, cpaGoalMicros: 750_000 }]) {
            expectEncoded(WireAdGroup, adGroupToWire(account, variant))
            expectEncoded(V1AdGroup, adGroupToV1(account, variant))
          }
          for (const keyword of adGroup.keywords) {
            for (const variant of [keyword, { ...keyword, bidMicros: null, status: "PAUSED" as const }, { ...keyword, bidMicros: 1_230_000 }]) {
              expectEncoded(WireKeyword, keywordToWire(account, variant))
              expectEncoded(V1Keyword, keywordToV1(account, variant))
            }
          }
          for (const negative of adGroup.negatives) {
            expectEncoded(WireNegativeKeyword, negativeToWire(negative))
            expectEncoded(V1NegativeKeyword, negativeToV1(account, negative))
          }
          for (const ad of adGroup.ads) {
            expectEncoded(WireAd, adToWire(ad))
            expectEncoded(V1Ad, adToV1(account, ad))
          }
          entities += 1 + adGroup.keywords.length + adGroup.negatives.length + adGroup.ads.length
        }
        entities += 1 + campaign.negatives.length
      }
    }
    expect(entities).toBeGreaterThan(100)
  })

  it("apps and geo entries are their own encoding", () => {
    for (const app of world.apps) expectEncoded(WireApp, appToWire(app))
    for (const geo of GEO) expectEncoded(WireGeo, geoToWire(geo))
  })

  it("an answer shares no array with the model", () => {
    const account = world.accounts[0]!
    const campaign = account.campaigns[0]!
    const v5 = campaignToWire(account, campaign)
    const v1 = campaignToV1(account, campaign)
    expect(v5["countriesOrRegions"]).not.toBe(campaign.countriesOrRegions)
    expect((v1["targeting"] as { countryOrRegion: { include: unknown } }).countryOrRegion.include).not.toBe(campaign.countriesOrRegions)
    expect(aclToWire(world, account)["roleNames"]).not.toBe(account.roleNames)
    expect(aclToV1(world, account)["roles"]).not.toBe(account.roleNames)
  })
})
