/** The simulator's entities in the v1 wire format (one model, two encodings: see SimulatorWire for v5). */
import { V1Acl, V1Ad, V1AdGroup, V1Campaign, V1Keyword, V1NegativeKeyword } from "../../v1/WireV1.ts"
import type { SimAccount, SimAd, SimAdGroup, SimCampaign, SimKeyword, SimNegativeKeyword, SimWorld } from "../SimulatorModel.ts"
import type { SimEntity } from "../SimulatorState.ts"
import { encodedAs, money, type WireObject } from "../SimulatorWire.ts"

// Typed by the v1 schemas, not run through them: see `encodedAs`.
const encodeAcl = encodedAs(V1Acl)
const encodeCampaign = encodedAs(V1Campaign)
const encodeAdGroup = encodedAs(V1AdGroup)
const encodeKeyword = encodedAs(V1Keyword)
const encodeNegative = encodedAs(V1NegativeKeyword)
const encodeAd = encodedAs(V1Ad)

/** v1 keywords and negatives use ENABLED where v5 says ACTIVE. */
export const v1KeywordStatus = (status: "ACTIVE" | "PAUSED"): "ENABLED" | "PAUSED" => status === "ACTIVE" ? "ENABLED" : "PAUSED"

export const aclToV1 = (world: SimWorld, account: SimAccount): WireObject =>
  encodeAcl({
    adAccountId: account.orgId,
    adAccountName: account.orgName,
    orgId: world.parentOrgId,
    orgName: world.parentOrgName,
    currency: account.currency,
    timeZone: account.timeZone,
    roles: [...account.roleNames]
  })

export const campaignToV1 = (account: SimAccount, campaign: SimCampaign): WireObject =>
  encodeCampaign({
    id: campaign.id,
    adAccountId: campaign.orgId,
    name: campaign.name,
    promotedObjectType: "APPSTORE_APP",
    promotedObjectId: String(campaign.adamId),
    billingEvent: "TAPS",
    targeting: { countryOrRegion: { include: [...campaign.countriesOrRegions] } },
    dailyBudget: { value: money(campaign.dailyBudgetMicros, account.currency) },
    status: campaign.status,
    bidStrategy: campaign.biddingStrategy === "MAX_CONVERSIONS"
      ? {
        bidStrategyType: "MAX_CONVERSIONS",
        bidStrategyGoal: "INSTALL",
        bid: campaign.targetCpaMicros === null ? null : money(campaign.targetCpaMicros, account.currency)
      }
      : { bidStrategyType: "MANUAL_CPT", bidStrategyGoal: "TAP" },
    deleted: campaign.deleted
  })

export const adGroupToV1 = (account: SimAccount, adGroup: SimAdGroup): WireObject =>
  encodeAdGroup({
    id: adGroup.id,
    adAccountId: adGroup.orgId,
    campaignId: adGroup.campaignId,
    name: adGroup.name,
    status: adGroup.status,
    pricingModel: "CPC",
    defaultBid: money(adGroup.defaultBidMicros, account.currency),
    cpaGoal: adGroup.cpaGoalMicros === null ? null : money(adGroup.cpaGoalMicros, account.currency),
    automatedKeywordsOptIn: adGroup.searchMatch,
    deleted: adGroup.deleted
  })

export const keywordToV1 = (account: SimAccount, keyword: SimKeyword): WireObject =>
  encodeKeyword({
    id: keyword.id,
    adAccountId: account.orgId,
    campaignId: keyword.campaignId,
    adGroupId: keyword.adGroupId,
    text: keyword.text,
    matchType: keyword.matchType,
    bid: keyword.bidMicros === null ? null : money(keyword.bidMicros, account.currency),
    status: v1KeywordStatus(keyword.status),
    deleted: keyword.deleted
  })

export const negativeToV1 = (account: SimAccount, negative: SimNegativeKeyword): WireObject =>
  encodeNegative({
    id: negative.id,
    adAccountId: account.orgId,
    campaignId: negative.campaignId,
    adGroupId: negative.adGroupId,
    text: negative.text,
    matchType: negative.matchType,
    status: v1KeywordStatus(negative.status),
    deleted: negative.deleted
  })

export const adToV1 = (account: SimAccount, ad: SimAd): WireObject =>
  encodeAd({
    id: ad.id,
    adAccountId: account.orgId,
    campaignId: ad.campaignId,
    adGroupId: ad.adGroupId,
    name: ad.name,
    creative: { id: ad.creativeId, creativeType: ad.creativeType },
    status: ad.status,
    deleted: ad.deleted
  })

export const entityToV1 = (account: SimAccount, found: SimEntity): WireObject => {
  switch (found.kind) {
    case "CAMPAIGN":
      return campaignToV1(account, found.entity)
    case "ADGROUP":
      return adGroupToV1(account, found.entity)
    case "KEYWORD":
      return keywordToV1(account, found.entity)
    case "NEGATIVE_KEYWORD":
      return negativeToV1(account, found.entity)
    case "AD":
      return adToV1(account, found.entity)
  }
}
