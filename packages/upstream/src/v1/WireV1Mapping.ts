/** v1 wire (integer ids, decimal money, v1 field names) ↔ port (string ids, integer micros), in one place. */
import { microsFromDecimal } from "../Money.ts"
import type {
  AdGroupChange,
  CampaignChange,
  FindCondition,
  NewAdGroup,
  NewCampaign,
  UpstreamAccount,
  UpstreamAd,
  UpstreamAdGroup,
  UpstreamCampaign,
  UpstreamKeyword,
  UpstreamNegativeKeyword
} from "../Upstream.ts"
import { canWrite, money } from "../WireMapping.ts"
import type { V1Acl, V1Ad, V1AdGroup, V1Campaign, V1Filter, V1Keyword, V1Money, V1NegativeKeyword } from "./WireV1.ts"

const micros = (value: V1Money | null | undefined): number | null =>
  value === null || value === undefined ? null : microsFromDecimal(value.amount)

export const accountFromV1 = (acl: V1Acl): UpstreamAccount => ({
  upstreamAccountId: String(acl.adAccountId),
  name: acl.adAccountName,
  parentOrgId: String(acl.orgId),
  currency: acl.currency,
  timeZone: acl.timeZone,
  roles: acl.roles,
  readOnly: !canWrite(acl.roles)
})

export const campaignFromV1 = (c: V1Campaign): UpstreamCampaign => ({
  campaignId: String(c.id),
  name: c.name,
  adamId: c.promotedObjectId,
  countriesOrRegions: c.targeting.countryOrRegion.include,
  dailyBudgetMicros: micros(c.dailyBudget?.value),
  status: c.status,
  bidStrategy: c.bidStrategy.bidStrategyType,
  // v1 carries the cost-per-acquisition goal as the MAX_CONVERSIONS strategy's bid.
  targetCpaMicros: c.bidStrategy.bidStrategyType === "MAX_CONVERSIONS" ? micros(c.bidStrategy.bid) : null,
  deleted: c.deleted
})

export const adGroupFromV1 = (a: V1AdGroup): UpstreamAdGroup => ({
  adGroupId: String(a.id),
  campaignId: String(a.campaignId),
  name: a.name,
  status: a.status,
  defaultBidMicros: microsFromDecimal(a.defaultBid.amount),
  cpaGoalMicros: micros(a.cpaGoal),
  searchMatch: a.automatedKeywordsOptIn,
  deleted: a.deleted
})

/** v1 says ENABLED where acs (after v5) says ACTIVE for keywords. */
const keywordStatus = (status: "ENABLED" | "PAUSED") => status === "ENABLED" ? "ACTIVE" as const : "PAUSED" as const
export const v1KeywordStatus = (status: "ACTIVE" | "PAUSED") => status === "ACTIVE" ? "ENABLED" as const : "PAUSED" as const

export const keywordFromV1 = (k: V1Keyword): UpstreamKeyword => ({
  keywordId: String(k.id),
  adGroupId: String(k.adGroupId),
  campaignId: String(k.campaignId),
  text: k.text,
  matchType: k.matchType,
  status: keywordStatus(k.status),
  bidMicros: micros(k.bid),
  deleted: k.deleted
})

export const negativeFromV1 = (n: V1NegativeKeyword): UpstreamNegativeKeyword => ({
  negativeKeywordId: String(n.id),
  campaignId: String(n.campaignId),
  adGroupId: n.adGroupId === null || n.adGroupId === undefined ? null : String(n.adGroupId),
  text: n.text,
  matchType: n.matchType,
  status: keywordStatus(n.status),
  deleted: n.deleted
})

export const adFromV1 = (a: V1Ad): UpstreamAd => ({
  adId: String(a.id),
  adGroupId: String(a.adGroupId),
  campaignId: String(a.campaignId),
  name: a.name,
  creativeType: a.creative.creativeType,
  status: a.status,
  deleted: a.deleted
})

const bidStrategyOf = (strategy: NewCampaign["bidStrategy"], targetCpaMicros: number | null, currency: string) =>
  strategy === "MAX_CONVERSIONS"
    ? { bidStrategyType: strategy, bidStrategyGoal: "INSTALL", ...(targetCpaMicros !== null ? { bid: money(targetCpaMicros, currency) } : {}) }
    : { bidStrategyType: strategy, bidStrategyGoal: "TAP" }

export const newCampaignToV1 = (c: NewCampaign, currency: string) => ({
  name: c.name,
  promotedObjectType: "APPSTORE_APP",
  promotedObjectId: c.adamId,
  billingEvent: "TAPS",
  targeting: { countryOrRegion: { include: c.countriesOrRegions }, supplyPlacement: { include: ["APPSTORE_SEARCH_RESULTS"] } },
  dailyBudget: { value: money(c.dailyBudgetMicros, currency) },
  status: c.status,
  bidStrategy: bidStrategyOf(c.bidStrategy, c.targetCpaMicros, currency)
})

/** A partial PUT: only what changes. */
export const campaignChangeToV1 = (change: CampaignChange, currency: string) => ({
  ...(change.name !== undefined ? { name: change.name } : {}),
  ...(change.status !== undefined ? { status: change.status } : {}),
  ...(change.dailyBudgetMicros !== undefined ? { dailyBudget: { value: money(change.dailyBudgetMicros, currency) } } : {}),
  ...(change.bidStrategy !== undefined || change.targetCpaMicros !== undefined
    ? {
      bidStrategy: {
        ...(change.bidStrategy !== undefined ? { bidStrategyType: change.bidStrategy } : {}),
        ...(change.targetCpaMicros !== undefined ? { bid: change.targetCpaMicros === null ? null : money(change.targetCpaMicros, currency) } : {})
      }
    }
    : {})
})

export const newAdGroupToV1 = (a: NewAdGroup, campaignId: string, currency: string) => ({
  campaignId: Number(campaignId),
  name: a.name,
  pricingModel: "CPC",
  defaultBid: money(a.defaultBidMicros, currency),
  cpaGoal: a.cpaGoalMicros === null ? null : money(a.cpaGoalMicros, currency),
  automatedKeywordsOptIn: a.searchMatch,
  status: a.status
})

export const adGroupChangeToV1 = (change: AdGroupChange, currency: string) => ({
  ...(change.name !== undefined ? { name: change.name } : {}),
  ...(change.status !== undefined ? { status: change.status } : {}),
  ...(change.defaultBidMicros !== undefined ? { defaultBid: money(change.defaultBidMicros, currency) } : {}),
  ...(change.cpaGoalMicros !== undefined ? { cpaGoal: change.cpaGoalMicros === null ? null : money(change.cpaGoalMicros, currency) } : {}),
  ...(change.searchMatch !== undefined ? { automatedKeywordsOptIn: change.searchMatch } : {})
})

/** The port's find conditions use v5 field names; v1 renamed a few. */
const V1_FIELDS: Readonly<Record<string, string>> = {
  adamId: "promotedObjectId",
  biddingStrategy: "bidStrategy.bidStrategyType",
  countriesOrRegions: "targeting.countryOrRegion.include",
  defaultBidAmount: "defaultBid.amount",
  bidAmount: "bid.amount"
}

export const filterFromCondition = (condition: FindCondition): V1Filter => ({
  field: V1_FIELDS[condition.field] ?? condition.field,
  operator: condition.operator,
  value: condition.operator === "IN" ? condition.values : condition.values[0] ?? ""
})
