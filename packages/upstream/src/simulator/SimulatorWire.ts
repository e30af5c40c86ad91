/**
 * Entities to the v5 wire format and money from it. Every entity answer is typed by the schemas of
 * Wire.ts, the ones the real client decodes with, so a drift between the two fails to compile here first
 * (and test/simulator-wire.test.ts encodes every entity of a world with them).
 */
import { Schema } from "effect"
import { decimalFromMicros, MoneyFormatError, microsFromDecimal } from "../Money.ts"
import {
  WireAcl,
  WireAd,
  WireAdGroup,
  WireApp,
  WireCampaign,
  WireGeo,
  WireKeyword,
  type WireMoney,
  WireNegativeKeyword
} from "../Wire.ts"
import type { GeoEntry } from "./SimulatorCatalog.ts"
import { invalid } from "./SimulatorHttp.ts"
import type {
  SimAccount,
  SimAd,
  SimAdGroup,
  SimApp,
  SimCampaign,
  SimKeyword,
  SimNegativeKeyword,
  SimWorld
} from "./SimulatorModel.ts"

/** A wire object as the selector engine sees it. */
export type WireObject = Readonly<Record<string, unknown>>

export const money = (micros: number, currency: string): WireMoney => ({ amount: decimalFromMicros(micros), currency })

/**
 * A value as `schema` encodes it, without running the encoder. The wire schemas are plain structs (no
 * transformations), so `Schema.encodeSync` only checks and copies; the literals passed here are typed by the
 * schema's encoded side (a missing or unknown field does not compile), are written in the schema's field
 * order and copy every array, so they are what it returned. Running it cost ~7 µs per entity, paid per
 * answer, per change-history snapshot and per row of a v1 query.
 */
export const encodedAs = <A, I extends WireObject>(_schema: Schema.Schema<A, I>) => (value: I): WireObject => value

const encodeAcl = encodedAs(WireAcl)
const encodeCampaign = encodedAs(WireCampaign)
const encodeAdGroup = encodedAs(WireAdGroup)
const encodeKeyword = encodedAs(WireKeyword)
const encodeNegative = encodedAs(WireNegativeKeyword)
const encodeAd = encodedAs(WireAd)
const encodeApp = encodedAs(WireApp)
const encodeGeo = encodedAs(WireGeo)

export const aclToWire = (world: SimWorld, account: SimAccount): WireObject =>
  encodeAcl({
    orgId: account.orgId,
    orgName: account.orgName,
    parentOrgId: world.parentOrgId,
    currency: account.currency,
    timeZone: account.timeZone,
    paymentModel: account.paymentModel,
    roleNames: [...account.roleNames],
    displayName: account.orgName
  })

const displayStatusOf = (deleted: boolean, status: string): string =>
  deleted ? "DELETED" : status === "ENABLED" ? "RUNNING" : "PAUSED"

export const campaignToWire = (account: SimAccount, campaign: SimCampaign): WireObject =>
  encodeCampaign({
    id: campaign.id,
    orgId: campaign.orgId,
    name: campaign.name,
    adamId: campaign.adamId,
    adChannelType: "SEARCH",
    billingEvent: "TAPS",
    supplySources: ["APPSTORE_SEARCH_RESULTS"],
    countriesOrRegions: [...campaign.countriesOrRegions],
    dailyBudgetAmount: money(campaign.dailyBudgetMicros, account.currency),
    status: campaign.status,
    servingStatus: !campaign.deleted && campaign.status === "ENABLED" ? "RUNNING" : "NOT_RUNNING",
    displayStatus: displayStatusOf(campaign.deleted, campaign.status),
    biddingStrategy: campaign.biddingStrategy,
    targetCpa: campaign.targetCpaMicros === null ? null : money(campaign.targetCpaMicros, account.currency),
    deleted: campaign.deleted
  })

export const adGroupToWire = (account: SimAccount, adGroup: SimAdGroup): WireObject =>
  encodeAdGroup({
    id: adGroup.id,
    campaignId: adGroup.campaignId,
    orgId: adGroup.orgId,
    name: adGroup.name,
    status: adGroup.status,
    pricingModel: "CPC",
    defaultBidAmount: money(adGroup.defaultBidMicros, account.currency),
    cpaGoal: adGroup.cpaGoalMicros === null ? null : money(adGroup.cpaGoalMicros, account.currency),
    automatedKeywordsOptIn: adGroup.searchMatch,
    deleted: adGroup.deleted
  })

export const keywordToWire = (account: SimAccount, keyword: SimKeyword): WireObject =>
  encodeKeyword({
    id: keyword.id,
    adGroupId: keyword.adGroupId,
    campaignId: keyword.campaignId,
    text: keyword.text,
    matchType: keyword.matchType,
    status: keyword.status,
    bidAmount: keyword.bidMicros === null ? null : money(keyword.bidMicros, account.currency),
    deleted: keyword.deleted
  })

export const negativeToWire = (negative: SimNegativeKeyword): WireObject =>
  encodeNegative({
    id: negative.id,
    campaignId: negative.campaignId,
    adGroupId: negative.adGroupId,
    text: negative.text,
    matchType: negative.matchType,
    status: negative.status,
    deleted: negative.deleted
  })

export const adToWire = (ad: SimAd): WireObject =>
  encodeAd({
    id: ad.id,
    campaignId: ad.campaignId,
    adGroupId: ad.adGroupId,
    creativeId: ad.creativeId,
    name: ad.name,
    creativeType: ad.creativeType,
    status: ad.status,
    deleted: ad.deleted
  })

export const appToWire = (app: SimApp): WireObject =>
  encodeApp({
    adamId: app.adamId,
    appName: app.appName,
    developerName: app.developerName,
    countryOrRegionCodes: [...app.countryOrRegionCodes]
  })

export const geoToWire = (geo: GeoEntry): WireObject =>
  encodeGeo({ id: geo.id, entity: geo.entity, displayName: geo.displayName })

/**
 * A money amount from a request, checked like the platform: a plain decimal in the account's
 * currency, not negative, and no finer than the currency's smallest unit.
 */
export const microsFromRequest = (value: WireMoney, account: SimAccount, field: string): number => {
  let micros: number
  try {
    micros = microsFromDecimal(value.amount)
  } catch (error) {
    if (error instanceof MoneyFormatError) throw invalid(error.message, `${field}.amount`)
    throw error
  }
  if (value.currency !== account.currency) {
    throw invalid(`currency must be ${account.currency}, the account's currency`, `${field}.currency`)
  }
  if (micros < 0) throw invalid("amount must not be negative", `${field}.amount`)
  if (micros % account.minorUnitMicros !== 0) {
    throw invalid(`amount has more precision than ${account.currency} allows`, `${field}.amount`)
  }
  return micros
}
