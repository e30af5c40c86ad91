/**
 * Reports: rows per level (campaigns, ad groups, keywords, search terms, ads), the platform's request
 * rules, sorting and paging; SimulatorReportJson renders a page (v5) and v1/SimulatorV1ReportJson (v1).
 * Also the in-process totals tests compare a warehouse with.
 *
 * Levels relate exactly: campaign = Σ its ad groups; ad group = Σ its keywords + its Search Match;
 * search terms = every keyword's terms plus Search Match terms (keywordId null); ads = Σ ad group. A
 * source's terms may include one without text (searchTermText null): the platform's low-volume bucket,
 * which still carries its share of the source's metrics (Search Match and some broad keywords have one).
 * Keyword reports carry no Search Match row (as on the platform), so Σ keyword rows of an ad group is
 * its total minus the search-term rows with a null keywordId.
 *
 * Choices where the platform is not documented (unverified, kept here to correct in one place):
 * - ORTZ and UTC give the same days (the account's calendar days); search-term reports refuse UTC, as
 *   Apple's reference says. A request that names no time zone gets ORTZ.
 * - WEEKLY periods start on Monday and MONTHLY on the 1st; `date` is that first day, even when it is
 *   before startTime (only days inside the range are counted).
 * - Periods without metrics are left out of `granularity` unless returnRecordsWithNoMetrics.
 * - `total` is present when returnRowTotals is true or no granularity was asked for.
 * - Deleted entities keep their rows: their history still adds up to the parents' totals.
 * - HOURLY (v1 only; v5 as described here has none): the platform's rule, start within the last 30 days
 *   and start and end at most 7 days apart; campaigns, ad groups and keywords only (Apple's ad reports
 *   refuse it and its hourly reports have no search terms). An hour's `date` is "YYYY-MM-DD HH:00" in
 *   the account's calendar; the hours of a day add up to its daily row exactly.
 */
import type { Metrics, ReportLevel } from "../Upstream.ts"
import type { WireReportMetadata, WireReportRequest } from "../Wire.ts"
import { dayFromIso } from "./SimulatorCalendar.ts"
import { invalid, type PageRequest } from "./SimulatorHttp.ts"
import {
  type AccountMetrics,
  type DayRange,
  dayCount,
  HOURS_PER_DAY,
  IMPRESSIONS,
  INSTALLS,
  isEmpty,
  METRIC_COUNT,
  newDailyBuffer,
  NEW_DOWNLOADS,
  ratio,
  SPEND_MICROS,
  TAPS,
  VIEW_INSTALLS
} from "./SimulatorMetrics.ts"
import type { SimAccount, SimCampaign } from "./SimulatorModel.ts"
import { checkConditions, compareBy, matchesConditions, selectorPage } from "./SimulatorSelector.ts"
import type { SimulatorState } from "./SimulatorState.ts"

/** The path segment of each report: /reports/campaigns, /reports/campaigns/{c}/<level>. */
export type ReportPathLevel = "campaigns" | "adgroups" | "keywords" | "searchterms" | "ads"

type Metadata = typeof WireReportMetadata.Type

export interface RowSource {
  readonly metadata: Metadata
  /**
   * Adds the row's daily vectors over the range into `out`, or with `hourly` its hourly ones (24 a day;
   * only at HOURLY_LEVELS). One closure per row: a keyword report has 100,000 rows.
   */
  readonly fill: (range: DayRange, out: Float64Array, hourly: boolean) => void
}

/** What a report may be asked by (v5's request, plus v1's HOURLY). */
export type ReportRequest = Omit<WireReportRequest, "granularity"> & {
  readonly granularity?: "HOURLY" | "DAILY" | "WEEKLY" | "MONTHLY" | undefined
}

/** Levels with hourly reports. */
const HOURLY_LEVELS: ReadonlySet<ReportPathLevel> = new Set(["campaigns", "adgroups", "keywords"])

/** The rows of a level, in entity order. `campaign` is required for every level but campaigns. */
const rowSources = (metrics: AccountMetrics, account: SimAccount, level: ReportPathLevel, campaign: SimCampaign | null): Array<RowSource> => {
  if (level === "campaigns") {
    return account.campaigns.map((c) => ({
      metadata: { campaignId: c.id, campaignName: c.name },
      fill: (range, out, hourly) => hourly ? metrics.addCampaignHours(c, range, out) : metrics.addCampaign(c, range, out)
    }))
  }
  if (campaign === null) throw new Error(`the ${level} report needs a campaign`)
  const rows: Array<RowSource> = []
  // Metadata as plain literals (no spread of a shared part): a search-term report has ~10,000 rows.
  const campaignId = campaign.id
  for (const adGroup of campaign.adGroups) {
    const adGroupId = adGroup.id
    const adGroupName = adGroup.name
    switch (level) {
      case "adgroups":
        rows.push({
          metadata: { campaignId, adGroupId, adGroupName, campaignName: campaign.name },
          fill: (range, out, hourly) => hourly ? metrics.addAdGroupHours(campaign, adGroup, range, out) : metrics.addAdGroup(campaign, adGroup, range, out)
        })
        break
      case "keywords":
        for (const keyword of adGroup.keywords) {
          rows.push({
            metadata: { campaignId, adGroupId, adGroupName, keywordId: keyword.id, keyword: keyword.text, matchType: keyword.matchType },
            fill: (range, out, hourly) =>
              hourly ? metrics.addKeywordHours(campaign, adGroup, keyword, range, out) : metrics.addKeyword(campaign, adGroup, keyword, range, out)
          })
        }
        break
      case "searchterms":
        for (const keyword of adGroup.keywords) {
          for (const term of metrics.searchTerms(adGroup, keyword)) {
            rows.push({
              metadata: {
                campaignId,
                adGroupId,
                adGroupName,
                keywordId: keyword.id,
                keyword: keyword.text,
                matchType: keyword.matchType,
                searchTermText: term.text,
                searchTermSource: "TARGETED"
              },
              fill: (range, out) => metrics.addSearchTerm(campaign, adGroup, keyword, term, range, out)
            })
          }
        }
        for (const term of metrics.searchTerms(adGroup, null)) {
          rows.push({
            metadata: {
              campaignId,
              adGroupId,
              adGroupName,
              keywordId: null,
              keyword: null,
              matchType: "AUTO",
              searchTermText: term.text,
              searchTermSource: "AUTO"
            },
            fill: (range, out) => metrics.addSearchTerm(campaign, adGroup, null, term, range, out)
          })
        }
        break
      case "ads":
        for (const ad of adGroup.ads) {
          rows.push({
            metadata: { campaignId, adGroupId, adGroupName, adId: ad.id, adName: ad.name },
            fill: (range, out) => metrics.addAd(campaign, adGroup, ad, range, out)
          })
        }
        break
    }
  }
  return rows
}

/** Sort keys of a row: metadata fields and v5 metric names (ratios and averages from the totals). */
const sortValue = (row: ComputedRow, field: string): unknown => {
  const total = row.total
  switch (field) {
    case "impressions":
      return total[IMPRESSIONS]
    case "taps":
      return total[TAPS]
    case "tapInstalls":
      return total[INSTALLS]
    case "tapNewDownloads":
      return total[NEW_DOWNLOADS]
    case "tapRedownloads":
      return total[INSTALLS]! - total[NEW_DOWNLOADS]!
    case "totalInstalls":
      return total[INSTALLS]! + total[VIEW_INSTALLS]!
    case "localSpend":
      return total[SPEND_MICROS]
    case "ttr":
      return ratio(total[TAPS]!, total[IMPRESSIONS]!)
    case "tapInstallRate":
      return ratio(total[INSTALLS]!, total[TAPS]!)
    case "avgCPT":
      return total[TAPS] === 0 ? 0 : total[SPEND_MICROS]! / total[TAPS]!
    case "avgCPM":
      return total[IMPRESSIONS] === 0 ? 0 : total[SPEND_MICROS]! / total[IMPRESSIONS]!
    case "tapInstallCPI":
      return total[INSTALLS] === 0 ? 0 : total[SPEND_MICROS]! / total[INSTALLS]!
    default:
      return (row.source.metadata as Readonly<Record<string, unknown>>)[field]
  }
}

const METRIC_FIELDS = new Set([
  "impressions", "taps", "ttr", "localSpend", "avgCPT", "avgCPM", "tapInstalls", "tapNewDownloads",
  "tapRedownloads", "tapInstallCPI", "tapInstallRate", "totalInstalls"
])
const METADATA_FIELDS: Record<ReportPathLevel, ReadonlySet<string>> = {
  campaigns: new Set(["campaignId", "campaignName"]),
  adgroups: new Set(["campaignId", "campaignName", "adGroupId", "adGroupName"]),
  keywords: new Set(["campaignId", "adGroupId", "adGroupName", "keywordId", "keyword", "matchType"]),
  searchterms: new Set(["campaignId", "adGroupId", "adGroupName", "keywordId", "keyword", "matchType", "searchTermText", "searchTermSource"]),
  ads: new Set(["campaignId", "adGroupId", "adGroupName", "adId", "adName"])
}

/**
 * The days with metrics of a report's rows, one run per row: day offsets from the range's first day
 * (ascending) and their vectors, METRIC_COUNT each. Most keywords and search terms have metrics on a
 * few days only, so every row's days are kept between the totals pass and the pages, and a page is
 * written without computing its rows again.
 */
export class DayStore {
  days = new Int32Array(1024)
  values = new Float64Array(1024 * METRIC_COUNT)
  size = 0

  /** Appends the vector at `daily[offset..]` as day `day`. */
  add(day: number, daily: Float64Array, offset: number): void {
    if (this.size === this.days.length) {
      const days = new Int32Array(this.size * 2)
      days.set(this.days)
      const values = new Float64Array(this.size * 2 * METRIC_COUNT)
      values.set(this.values)
      this.days = days
      this.values = values
    }
    this.days[this.size] = day
    const at = this.size * METRIC_COUNT
    for (let m = 0; m < METRIC_COUNT; m++) this.values[at + m] = daily[offset + m]!
    this.size++
  }
}

export interface ComputedRow {
  readonly source: RowSource
  readonly position: number
  readonly total: Float64Array
  /** The row's days (hours, in an hourly report) with metrics: `store` entries [first, first + count). */
  readonly store: DayStore
  readonly first: number
  readonly count: number
}

/** Rows by day or, `hourly`, by hour (a slot is then (day - range.from) × 24 + hour). */
const computeRows = (sources: ReadonlyArray<RowSource>, range: DayRange, keepEmpty: boolean, hourly = false): Array<ComputedRow> => {
  const daily = hourly ? new Float64Array(dayCount(range) * HOURS_PER_DAY * METRIC_COUNT) : newDailyBuffer(range)
  const store = new DayStore()
  const rows: Array<ComputedRow> = []
  sources.forEach((source, position) => {
    daily.fill(0)
    source.fill(range, daily, hourly)
    const total = new Float64Array(METRIC_COUNT)
    const first = store.size
    for (let offset = 0, day = 0; offset < daily.length; offset += METRIC_COUNT, day++) {
      let any = false
      for (let m = 0; m < METRIC_COUNT; m++) {
        const value = daily[offset + m]!
        if (value === 0) continue
        total[m]! += value
        any = true
      }
      if (any) store.add(day, daily, offset)
    }
    if (!keepEmpty && isEmpty(total)) {
      store.size = first
      return
    }
    rows.push({ source, position, total, store, first, count: store.size - first })
  })
  return rows
}

/**
 * The platform's rules on dates: a real range, not in the future, DAILY ≤ 90 days and ≤ 90 days back,
 * HOURLY ≤ 7 days apart and starting ≤ 30 days back.
 */
const reportRange = (request: ReportRequest, today: number): DayRange => {
  const from = dayFromIso(request.startTime)
  const to = dayFromIso(request.endTime)
  if (from === null) throw invalid("startTime must be a date YYYY-MM-DD", "startTime")
  if (to === null) throw invalid("endTime must be a date YYYY-MM-DD", "endTime")
  if (from > to) throw invalid("startTime must not be after endTime", "startTime")
  if (from > today) throw invalid("startTime must not be in the future", "startTime")
  if (request.granularity !== undefined && request.returnGrandTotals === true) {
    throw invalid("returnGrandTotals is not allowed with a granularity", "returnGrandTotals")
  }
  if (request.granularity === "DAILY") {
    if (to - from > 90) throw invalid("DAILY reports span at most 90 days", "endTime")
    if (from < today - 90) throw invalid("DAILY reports start within the last 90 days", "startTime")
  }
  if (request.granularity === "HOURLY") {
    if (to - from > HOURLY_MAX_SPAN_DAYS) throw invalid(`HOURLY reports span at most ${HOURLY_MAX_SPAN_DAYS} days`, "endTime")
    if (from < today - HOURLY_MAX_AGE_DAYS) throw invalid(`HOURLY reports start within the last ${HOURLY_MAX_AGE_DAYS} days`, "startTime")
  }
  return { from, to: Math.min(to, today) }
}

/** HOURLY: start and end at most this many days apart, and the start at most this many days back. */
export const HOURLY_MAX_SPAN_DAYS = 7
export const HOURLY_MAX_AGE_DAYS = 30

/** The last few reports' computed rows, by request (page excluded); oldest dropped first. */
const REPORT_CACHE_ENTRIES = 8

class ReportRowsCache {
  private readonly entries = new Map<string, Array<ComputedRow>>()

  get(key: string): Array<ComputedRow> | undefined {
    return this.entries.get(key)
  }

  set(key: string, rows: Array<ComputedRow>): void {
    this.entries.set(key, rows)
    if (this.entries.size > REPORT_CACHE_ENTRIES) this.entries.delete(this.entries.keys().next().value!)
  }
}

/** One cache per simulator: two simulators of one seed must not share rows. */
const reportRowsCaches = new WeakMap<SimulatorState, ReportRowsCache>()

const reportRowsCacheOf = (state: SimulatorState): ReportRowsCache => {
  const existing = reportRowsCaches.get(state)
  if (existing !== undefined) return existing
  const created = new ReportRowsCache()
  reportRowsCaches.set(state, created)
  return created
}

/** A report request checked and its rows computed: what both API versions render a page from. */
export interface PreparedReport {
  readonly account: SimAccount
  readonly range: DayRange
  readonly granularity: "HOURLY" | "DAILY" | "WEEKLY" | "MONTHLY" | undefined
  readonly keepEmpty: boolean
  /** Every row of the report, in answer order; a page is a slice of them. */
  readonly rows: ReadonlyArray<ComputedRow>
  /** The selector's page, checked. */
  readonly page: PageRequest
}

/**
 * Checks a report request (in the platform's order: dates, page, conditions, orderBy) and computes or
 * reuses its rows. A client pages through one report with the same request, so the rows are computed
 * once and each page is a slice.
 */
export const prepareReport = (
  state: SimulatorState,
  account: SimAccount,
  level: ReportPathLevel,
  campaign: SimCampaign | null,
  request: ReportRequest
): PreparedReport => {
  const metrics = state.metrics(account)
  const range = reportRange(request, metrics.context.today)
  if (level === "searchterms" && request.timeZone === "UTC") {
    throw invalid("search term reports support only the ORTZ time zone", "timeZone")
  }
  const hourly = request.granularity === "HOURLY"
  if (hourly && !HOURLY_LEVELS.has(level)) throw invalid(`${level} reports do not support HOURLY granularity`, "granularity")
  const selector = request.selector
  const page = selectorPage(selector)
  const conditions = selector.conditions ?? []
  const knownFields = METADATA_FIELDS[level]
  checkConditions(conditions, knownFields)
  const orderBy = selector.orderBy ?? []
  orderBy.forEach((ordering, index) => {
    if (!knownFields.has(ordering.field) && !METRIC_FIELDS.has(ordering.field)) {
      throw invalid(`unknown field ${ordering.field}`, `selector.orderBy[${index}].field`)
    }
  })
  const keepEmpty = request.returnRecordsWithNoMetrics === true
  const key = JSON.stringify([
    state.version,
    metrics.context.restatement,
    metrics.context.today,
    metrics.context.todayHour,
    account.orgId,
    level,
    campaign?.id ?? null,
    range,
    hourly,
    keepEmpty,
    conditions,
    orderBy
  ])
  const cache = reportRowsCacheOf(state)
  const rows = cache.get(key) ?? (() => {
    const sources = rowSources(metrics, account, level, campaign)
      .filter((source) => matchesConditions(source.metadata as Readonly<Record<string, unknown>>, conditions))
    const computed = computeRows(sources, range, keepEmpty, hourly)
    if (orderBy.length > 0) computed.sort(compareBy(orderBy, sortValue, (a, b) => a.position - b.position))
    cache.set(key, computed)
    return computed
  })()
  return { account, range, granularity: request.granularity, keepEmpty, rows, page }
}

/** One row of `SimulatorTotals`, in acs's terms (string ids, integer micros). */
export interface SimulatorTotalsRow {
  readonly campaignId: string
  readonly adGroupId: string | null
  readonly keywordId: string | null
  readonly adId: string | null
  readonly searchTerm: string | null
  readonly total: Metrics
}

export interface SimulatorTotals {
  readonly total: Metrics
  /** Rows with any metrics, in entity order. */
  readonly rows: ReadonlyArray<SimulatorTotalsRow>
}

const PATH_LEVEL: Record<ReportLevel, ReportPathLevel> = {
  campaigns: "campaigns",
  adGroups: "adgroups",
  keywords: "keywords",
  searchTerms: "searchterms",
  ads: "ads"
}

const acsMetrics = (vector: Float64Array): Metrics => ({
  impressions: vector[IMPRESSIONS]!,
  taps: vector[TAPS]!,
  installs: vector[INSTALLS]!,
  spendMicros: vector[SPEND_MICROS]!
})

/**
 * The simulator's own totals for an account at a level over [startDate, endDate] (YYYY-MM-DD,
 * account days), across all campaigns or one. No request rules apply; days outside the data window
 * simply have none.
 */
export const computeTotals = (
  state: SimulatorState,
  account: SimAccount,
  level: ReportLevel,
  startDate: string,
  endDate: string,
  campaignId?: number
): SimulatorTotals => {
  const from = dayFromIso(startDate)
  const to = dayFromIso(endDate)
  if (from === null || to === null || from > to) throw new Error(`not a date range: ${startDate}..${endDate}`)
  const metrics = state.metrics(account)
  const range = { from, to }
  const campaigns = account.campaigns.filter((campaign) => campaignId === undefined || campaign.id === campaignId)
  const pathLevel = PATH_LEVEL[level]
  const sources = pathLevel === "campaigns"
    ? rowSources(metrics, account, "campaigns", null).filter((source) => campaigns.some((c) => c.id === source.metadata.campaignId))
    : campaigns.flatMap((campaign) => rowSources(metrics, account, pathLevel, campaign))
  const sum = new Float64Array(METRIC_COUNT)
  const rows = computeRows(sources, range, false).map((row): SimulatorTotalsRow => {
    for (let m = 0; m < METRIC_COUNT; m++) sum[m]! += row.total[m]!
    const metadata = row.source.metadata
    const id = (value: number | null | undefined) => (value === null || value === undefined ? null : String(value))
    return {
      campaignId: String(metadata.campaignId),
      adGroupId: id(metadata.adGroupId),
      keywordId: id(metadata.keywordId),
      adId: id(metadata.adId),
      searchTerm: metadata.searchTermText ?? null,
      total: acsMetrics(row.total)
    }
  })
  return { total: acsMetrics(sum), rows }
}
