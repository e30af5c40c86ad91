/**
 * The `Upstream` port: what acs needs from an ads platform, in acs's terms (string ids, integer micros).
 * The Apple Search Ads v5 adapter (AppleSearchAdsClient) and the Apple Ads Platform API v1 adapter
 * (v1/AppleAdsPlatformClient) implement it over HTTP; MakeUpstreamClient picks one per API version. Failures are already docs/contract.md 7 errors.
 */
import type { ConnectionError, NotFound, ReadOnlyAccount, UpstreamError, UpstreamUnavailable } from "@acs/domain/Errors"
import { Context, type Effect } from "effect"

export type UpstreamFailure = UpstreamUnavailable | UpstreamError | ConnectionError | ReadOnlyAccount | NotFound

/** Apple Ads Platform API v1, or Campaign Management API v5 (retired 2027-01-26). */
export type UpstreamApiVersion = "v1" | "v5"

/** How an org reaches the platform: real Apple credentials, or the built-in simulator's demo org; over which API. */
export type UpstreamCredentials =
  | {
    readonly provider: "apple"
    readonly apiVersion: UpstreamApiVersion
    readonly clientId: string
    readonly teamId: string
    readonly keyId: string
    readonly privateKeyPem: string
  }
  | { readonly provider: "simulator"; readonly apiVersion: UpstreamApiVersion }

export interface UpstreamAccount {
  readonly upstreamAccountId: string
  readonly name: string
  readonly parentOrgId: string | null
  readonly currency: string
  readonly timeZone: string
  readonly roles: ReadonlyArray<string>
  /** No role that can write: every proposal fails fast with 403 `read_only_account`. */
  readonly readOnly: boolean
}

export type EntityStatus = "ENABLED" | "PAUSED"
export type KeywordStatus = "ACTIVE" | "PAUSED"
export type MatchType = "EXACT" | "BROAD"
export type BidStrategy = "MANUAL_CPT" | "MAX_CONVERSIONS"

export interface UpstreamCampaign {
  readonly campaignId: string
  readonly name: string
  readonly adamId: string
  readonly countriesOrRegions: ReadonlyArray<string>
  readonly dailyBudgetMicros: number | null
  readonly status: EntityStatus
  readonly bidStrategy: BidStrategy
  readonly targetCpaMicros: number | null
  readonly deleted: boolean
}

export interface UpstreamAdGroup {
  readonly adGroupId: string
  readonly campaignId: string
  readonly name: string
  readonly status: EntityStatus
  readonly defaultBidMicros: number
  readonly cpaGoalMicros: number | null
  readonly searchMatch: boolean
  readonly deleted: boolean
}

export interface UpstreamKeyword {
  readonly keywordId: string
  readonly adGroupId: string
  readonly campaignId: string
  readonly text: string
  readonly matchType: MatchType
  readonly status: KeywordStatus
  /** null: the ad group's default bid applies. */
  readonly bidMicros: number | null
  readonly deleted: boolean
}

export interface UpstreamNegativeKeyword {
  readonly negativeKeywordId: string
  readonly campaignId: string
  /** null at campaign level. */
  readonly adGroupId: string | null
  readonly text: string
  readonly matchType: MatchType
  readonly status: KeywordStatus
  readonly deleted: boolean
}

export interface UpstreamAd {
  readonly adId: string
  readonly adGroupId: string
  readonly campaignId: string
  readonly name: string
  readonly creativeType: string
  readonly status: EntityStatus
  readonly deleted: boolean
}

export type ReportLevel = "campaigns" | "adGroups" | "keywords" | "searchTerms" | "ads"

export interface ReportRequest {
  readonly level: ReportLevel
  /** Required for every level but `campaigns`. */
  readonly campaignId?: string
  readonly startDate: string
  readonly endDate: string
  readonly granularity: "DAILY" | "WEEKLY" | "MONTHLY"
  readonly offset: number
  readonly limit: number
}

export interface Metrics {
  readonly impressions: number
  readonly taps: number
  readonly installs: number
  readonly spendMicros: number
}

export interface ReportRow {
  readonly campaignId: string
  readonly adGroupId: string | null
  readonly keywordId: string | null
  readonly adId: string | null
  /** Search-term rows: the term, null for the Search Match bucket without a visible term. */
  readonly searchTerm: string | null
  /** Search-term (and keyword) rows: the matched keyword's text; null for Search Match. */
  readonly keyword: string | null
  readonly matchType: string | null
  /** Per period of the granularity (a date: YYYY-MM-DD, or the first day of the week or month). */
  readonly periods: ReadonlyArray<Metrics & { readonly date: string }>
  readonly total: Metrics
}

export interface ReportPage {
  readonly rows: ReadonlyArray<ReportRow>
  readonly offset: number
  readonly limit: number
  readonly totalResults: number
}

/**
 * Days of an hourly read, in the account's calendar (YYYY-MM-DD, both included). The platform answers
 * hours only for a start within the last 30 days and a start and end at most 7 days apart; anything else
 * is its 400, an UpstreamError.
 */
export interface HourlyRange {
  readonly startDate: string
  readonly endDate: string
}

/** One campaign's metrics in one hour. */
export interface HourlyCampaignMetrics extends Metrics {
  readonly campaignId: string
  /**
   * "YYYY-MM-DDTHH": the hour's start in the account's time zone (UpstreamAccount.timeZone), the calendar
   * daily reports' dates are in; the hours of a day add up to its daily row.
   */
  readonly hour: string
}

/** A bulk call's outcome: HTTP 200 with the rows that worked and, per failing row, its index and reason. */
export interface BulkResult<A> {
  readonly succeeded: ReadonlyArray<{ readonly index: number; readonly value: A }>
  readonly failed: ReadonlyArray<{ readonly index: number; readonly message: string }>
}

export interface CampaignChange {
  readonly name?: string
  readonly status?: EntityStatus
  readonly dailyBudgetMicros?: number
  readonly bidStrategy?: BidStrategy
  readonly targetCpaMicros?: number | null
}

export interface NewCampaign {
  readonly name: string
  readonly adamId: string
  readonly countriesOrRegions: ReadonlyArray<string>
  readonly dailyBudgetMicros: number
  readonly bidStrategy: BidStrategy
  readonly targetCpaMicros: number | null
  readonly status: EntityStatus
}

export interface AdGroupChange {
  readonly name?: string
  readonly status?: EntityStatus
  readonly defaultBidMicros?: number
  readonly cpaGoalMicros?: number | null
  readonly searchMatch?: boolean
}

export interface NewAdGroup {
  readonly name: string
  readonly defaultBidMicros: number
  readonly cpaGoalMicros: number | null
  readonly searchMatch: boolean
  readonly status: EntityStatus
}

export interface NewKeyword {
  readonly text: string
  readonly matchType: MatchType
  readonly bidMicros: number | null
  readonly status?: KeywordStatus
}

export interface KeywordChange {
  readonly keywordId: string
  readonly status?: KeywordStatus
  readonly bidMicros?: number | null
}

export interface NewNegativeKeyword {
  readonly text: string
  readonly matchType: MatchType
}

/** A new keyword with its place: a row of a bulk create that spans ad groups. */
export interface PlacedNewKeyword extends NewKeyword {
  readonly campaignId: string
  readonly adGroupId: string
}

/** A new negative with its place (`adGroupId` null: the campaign's). */
export interface PlacedNewNegativeKeyword extends NewNegativeKeyword {
  readonly campaignId: string
  readonly adGroupId: string | null
}

export interface AppSearchResult {
  readonly adamId: string
  readonly appName: string
  readonly developerName: string
  readonly countryOrRegionCodes: ReadonlyArray<string>
}

export interface GeoSearchResult {
  readonly id: string
  readonly entity: string
  readonly displayName: string
}

/** A `POST .../find` condition, on the platform's field names (e.g. `{field: "id", operator: "IN", values}`). */
export interface FindCondition {
  readonly field: string
  readonly operator: "EQUALS" | "NOT_EQUALS" | "IN" | "CONTAINS" | "STARTSWITH" | "ENDSWITH" | "LESS_THAN" | "GREATER_THAN"
  readonly values: ReadonlyArray<string>
}

/** Who changed an account, as the platform's change history says (v1 only). */
export type UpstreamUserType = "CUSTOMER" | "CUSTOMER_API" | "APPLE_SUPPORT"

/** One entity changed in one transaction: a change-history summary row broken down per entity. */
export interface UpstreamChange {
  readonly detailId: string
  readonly transactionId: string
  readonly eventTime: string
  /** CUSTOMER: a person in the web UI; CUSTOMER_API: an API client (`modifiedBy` is its id). */
  readonly userType: UpstreamUserType
  readonly modifiedBy: string
  readonly eventType: string
  /** Apple's audit names: Campaign, AdGroup, Keyword, NegativeKeyword, Ad. */
  readonly entityType: string
  readonly entityId: string
}

export interface UpstreamChangeDetail extends UpstreamChange {
  readonly campaignId: string | null
  readonly adGroupId: string | null
  /** The entity's name (a keyword's text) as the detail's metadata gives it. */
  readonly entityName: string | null
  /** v1 field names; values as the platform lists them (arrays). */
  readonly fields: ReadonlyArray<{
    readonly field: string
    readonly oldValues: ReadonlyArray<unknown>
    readonly newValues: ReadonlyArray<unknown>
  }>
}

type Call<A> = Effect.Effect<A, UpstreamFailure>

/**
 * One connected upstream org tree. Reads page through everything and are retried on 429/5xx/timeouts;
 * writes are never retried blindly (only a 429, which the platform did not process, is retried).
 */
export interface UpstreamClient {
  /** The OAuth client id the credentials sign in as: how the change history names acs's own writes. */
  readonly clientId: string
  readonly accounts: Call<ReadonlyArray<UpstreamAccount>>

  readonly campaigns: (accountId: string) => Call<ReadonlyArray<UpstreamCampaign>>
  readonly campaign: (accountId: string, campaignId: string) => Call<UpstreamCampaign>
  /** Campaigns matching every condition, through the platform's `find` selector (all pages). */
  readonly findCampaigns: (accountId: string, conditions: ReadonlyArray<FindCondition>) => Call<ReadonlyArray<UpstreamCampaign>>
  readonly adGroups: (accountId: string, campaignId: string) => Call<ReadonlyArray<UpstreamAdGroup>>
  readonly adGroup: (accountId: string, campaignId: string, adGroupId: string) => Call<UpstreamAdGroup>
  readonly findAdGroups: (
    accountId: string,
    campaignId: string,
    conditions: ReadonlyArray<FindCondition>
  ) => Call<ReadonlyArray<UpstreamAdGroup>>
  readonly keywords: (accountId: string, campaignId: string, adGroupId: string) => Call<ReadonlyArray<UpstreamKeyword>>
  /** Every targeting keyword of every ad group of the campaign, through the campaign-wide `find` (all pages). */
  readonly campaignKeywords: (accountId: string, campaignId: string) => Call<ReadonlyArray<UpstreamKeyword>>
  /** Campaign-level negatives and those of every ad group of the campaign. */
  readonly negativeKeywords: (accountId: string, campaignId: string) => Call<ReadonlyArray<UpstreamNegativeKeyword>>
  readonly ads: (accountId: string, campaignId: string, adGroupId: string) => Call<ReadonlyArray<UpstreamAd>>
  readonly report: (accountId: string, request: ReportRequest) => Call<ReportPage>

  readonly createCampaign: (accountId: string, campaign: NewCampaign) => Call<UpstreamCampaign>
  readonly updateCampaign: (accountId: string, campaignId: string, change: CampaignChange) => Call<UpstreamCampaign>
  readonly deleteCampaign: (accountId: string, campaignId: string) => Call<void>
  readonly createAdGroup: (accountId: string, campaignId: string, adGroup: NewAdGroup) => Call<UpstreamAdGroup>
  readonly updateAdGroup: (
    accountId: string,
    campaignId: string,
    adGroupId: string,
    change: AdGroupChange
  ) => Call<UpstreamAdGroup>
  readonly deleteAdGroup: (accountId: string, campaignId: string, adGroupId: string) => Call<void>
  readonly createKeywords: (
    accountId: string,
    campaignId: string,
    adGroupId: string,
    keywords: ReadonlyArray<NewKeyword>
  ) => Call<BulkResult<UpstreamKeyword>>
  readonly updateKeywords: (
    accountId: string,
    campaignId: string,
    adGroupId: string,
    changes: ReadonlyArray<KeywordChange>
  ) => Call<BulkResult<UpstreamKeyword>>
  readonly deleteKeywords: (
    accountId: string,
    campaignId: string,
    adGroupId: string,
    keywordIds: ReadonlyArray<string>
  ) => Call<BulkResult<string>>
  /** `adGroupId` null: campaign-level negatives. */
  readonly createNegativeKeywords: (
    accountId: string,
    campaignId: string,
    adGroupId: string | null,
    keywords: ReadonlyArray<NewNegativeKeyword>
  ) => Call<BulkResult<UpstreamNegativeKeyword>>
  readonly deleteNegativeKeywords: (
    accountId: string,
    campaignId: string,
    adGroupId: string | null,
    negativeKeywordIds: ReadonlyArray<string>
  ) => Call<BulkResult<string>>
  /**
   * One bulk create whose rows may span ad groups and campaigns (each row names its place). Only v1's bulk create
   * takes the place per row: the v5 client leaves these out, and a caller then creates per ad group.
   */
  readonly createKeywordsAcross?: (accountId: string, keywords: ReadonlyArray<PlacedNewKeyword>) => Call<BulkResult<UpstreamKeyword>>
  readonly createNegativeKeywordsAcross?: (
    accountId: string,
    keywords: ReadonlyArray<PlacedNewNegativeKeyword>
  ) => Call<BulkResult<UpstreamNegativeKeyword>>
  readonly updateAd: (
    accountId: string,
    campaignId: string,
    adGroupId: string,
    adId: string,
    change: { readonly status?: EntityStatus; readonly name?: string }
  ) => Call<UpstreamAd>

  /**
   * The account's changes strictly after `sinceIso`, oldest first, one per entity. Only v1 has a
   * change history: the v5 client leaves these out.
   */
  readonly changeHistory?: (accountId: string, sinceIso: string) => Call<ReadonlyArray<UpstreamChange>>
  readonly changeDetail?: (accountId: string, detailId: string) => Call<UpstreamChangeDetail>
  /**
   * Every campaign's (deleted ones too) impressions, taps, installs and spend per hour over the range,
   * ordered by campaign then hour; hours without metrics are left out, and today has only its elapsed
   * hours. Only the v1 client reads hours: the v5 client leaves it out.
   */
  readonly hourlyCampaignMetrics?: (accountId: string, range: HourlyRange) => Call<ReadonlyArray<HourlyCampaignMetrics>>

  readonly searchApps: (query: string, limit: number) => Call<ReadonlyArray<AppSearchResult>>
  readonly searchGeo: (query: string, countryCode: string | null) => Call<ReadonlyArray<GeoSearchResult>>
}

/** Opens a client for an org's credentials; the credentials are tested (token + ACLs) before it returns. */
export class Upstream extends Context.Tag("acs/Upstream")<Upstream, {
  readonly connect: (credentials: UpstreamCredentials) => Effect.Effect<UpstreamClient, UpstreamFailure>
}>() {}
