/** Wire (v5 JSON: integer ids, decimal money) ↔ port (string ids, integer micros), in one place. */
import { decimalFromMicros, microsFromDecimal } from "./Money.ts"
import type {
  AdGroupChange,
  CampaignChange,
  NewAdGroup,
  NewCampaign,
  UpstreamAccount,
  UpstreamAd,
  UpstreamAdGroup,
  UpstreamCampaign,
  UpstreamKeyword,
  UpstreamNegativeKeyword
} from "./Upstream.ts"
import type {
  WireAcl,
  WireAd,
  WireAdGroup,
  WireCampaign,
  WireKeyword,
  WireMoney,
  WireNegativeKeyword
} from "./Wire.ts"

const WRITE_ROLES = ["account manager", "read & write", "admin"]

/** Role names vary ("API Account Manager", "Limited Access: API Read & Write", "Admin"): match loosely. */
export const canWrite = (roles: ReadonlyArray<string>): boolean =>
  roles.some((role) => WRITE_ROLES.some((writer) => role.toLowerCase().includes(writer)))

const micros = (money: WireMoney | null | undefined): number | null =>
  money === null || money === undefined ? null : microsFromDecimal(money.amount)

export const money = (value: number, currency: string): WireMoney => ({ amount: decimalFromMicros(value), currency })

export const accountFromWire = (acl: WireAcl): UpstreamAccount => ({
  upstreamAccountId: String(acl.orgId),
  name: acl.displayName ?? acl.orgName,
  parentOrgId: acl.parentOrgId === null || acl.parentOrgId === undefined ? null : String(acl.parentOrgId),
  currency: acl.currency,
  timeZone: acl.timeZone,
  roles: acl.roleNames,
  readOnly: !canWrite(acl.roleNames)
})

export const campaignFromWire = (c: WireCampaign): UpstreamCampaign => ({
  campaignId: String(c.id),
  name: c.name,
  adamId: String(c.adamId),
  countriesOrRegions: c.countriesOrRegions,
  dailyBudgetMicros: micros(c.dailyBudgetAmount),
  status: c.status,
  bidStrategy: c.biddingStrategy ?? "MANUAL_CPT",
  targetCpaMicros: micros(c.targetCpa),
  deleted: c.deleted
})

export const adGroupFromWire = (a: WireAdGroup): UpstreamAdGroup => ({
  adGroupId: String(a.id),
  campaignId: String(a.campaignId),
  name: a.name,
  status: a.status,
  defaultBidMicros: microsFromDecimal(a.defaultBidAmount.amount),
  cpaGoalMicros: micros(a.cpaGoal),
  searchMatch: a.automatedKeywordsOptIn,
  deleted: a.deleted
})

export const keywordFromWire = (campaignId: string) => (k: WireKeyword): UpstreamKeyword => ({
  keywordId: String(k.id),
  adGroupId: String(k.adGroupId),
  campaignId: k.campaignId === undefined ? campaignId : String(k.campaignId),
  text: k.text,
  matchType: k.matchType,
  status: k.status,
  bidMicros: micros(k.bidAmount),
  deleted: k.deleted
})

export const negativeFromWire = (n: WireNegativeKeyword): UpstreamNegativeKeyword => ({
  negativeKeywordId: String(n.id),
  campaignId: String(n.campaignId),
  adGroupId: n.adGroupId === null || n.adGroupId === undefined ? null : String(n.adGroupId),
  text: n.text,
  matchType: n.matchType,
  status: n.status,
  deleted: n.deleted
})

export const adFromWire = (a: WireAd): UpstreamAd => ({
  adId: String(a.id),
  adGroupId: String(a.adGroupId),
  campaignId: String(a.campaignId),
  name: a.name,
  creativeType: a.creativeType,
  status: a.status,
  deleted: a.deleted
})

export const campaignChangeToWire = (change: CampaignChange, currency: string) => ({
  ...(change.name !== undefined ? { name: change.name } : {}),
  ...(change.status !== undefined ? { status: change.status } : {}),
  ...(change.dailyBudgetMicros !== undefined ? { dailyBudgetAmount: money(change.dailyBudgetMicros, currency) } : {}),
  ...(change.bidStrategy !== undefined ? { biddingStrategy: change.bidStrategy } : {}),
  ...(change.targetCpaMicros !== undefined
    ? { targetCpa: change.targetCpaMicros === null ? null : money(change.targetCpaMicros, currency) }
    : {})
})

export const newCampaignToWire = (campaign: NewCampaign, orgId: string, currency: string) => ({
  orgId: Number(orgId),
  name: campaign.name,
  adamId: Number(campaign.adamId),
  adChannelType: "SEARCH",
  billingEvent: "TAPS",
  supplySources: ["APPSTORE_SEARCH_RESULTS"],
  countriesOrRegions: campaign.countriesOrRegions,
  dailyBudgetAmount: money(campaign.dailyBudgetMicros, currency),
  status: campaign.status,
  biddingStrategy: campaign.bidStrategy,
  ...(campaign.targetCpaMicros !== null ? { targetCpa: money(campaign.targetCpaMicros, currency) } : {})
})

export const adGroupChangeToWire = (change: AdGroupChange, currency: string) => ({
  ...(change.name !== undefined ? { name: change.name } : {}),
  ...(change.status !== undefined ? { status: change.status } : {}),
  ...(change.defaultBidMicros !== undefined ? { defaultBidAmount: money(change.defaultBidMicros, currency) } : {}),
  ...(change.cpaGoalMicros !== undefined
    ? { cpaGoal: change.cpaGoalMicros === null ? null : money(change.cpaGoalMicros, currency) }
    : {}),
  ...(change.searchMatch !== undefined ? { automatedKeywordsOptIn: change.searchMatch } : {})
})

export const newAdGroupToWire = (adGroup: NewAdGroup, campaignId: string, currency: string) => ({
  campaignId: Number(campaignId),
  name: adGroup.name,
  pricingModel: "CPC",
  status: adGroup.status,
  defaultBidAmount: money(adGroup.defaultBidMicros, currency),
  ...(adGroup.cpaGoalMicros !== null ? { cpaGoal: money(adGroup.cpaGoalMicros, currency) } : {}),
  automatedKeywordsOptIn: adGroup.searchMatch
})
