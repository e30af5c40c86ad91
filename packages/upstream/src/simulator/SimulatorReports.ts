/**
 * Reports: rows per level (campaigns, ad groups, keywords, search terms, ads), the platform's request
 * rules, sorting, paging and the v5 answer. Also the in-process totals tests compare a warehouse with.
 *
 * Levels relate exactly: campaign = Σ its ad groups; ad group = Σ its keywords + its Search Match;
 * search terms = every keyword's terms plus Search Match terms (keywordId null); ads = Σ ad group.
 * Keyword reports carry no Search Match row (as on the platform), so Σ keyword rows of an ad group is
 * its total minus the search-term rows with a null keywordId.
 *
 * Choices where the platform is not documented (unverified, kept here to correct in one place):
 * - ORTZ and UTC give the same days (the account's calendar days).
 * - WEEKLY periods start on Monday and MONTHLY on the 1st; `date` is that first day, even when it is
 *   before startTime (only days inside the range are counted).
 * - Periods without metrics are left out of `granularity` unless returnRecordsWithNoMetrics.
 * - `total` is present when returnRowTotals is true or no granularity was asked for.
 * - Deleted entities keep their rows: their history still adds up to the parents' totals.
 */
import type { Metrics, ReportLevel } from "../Upstream.ts"
import type { WireMetrics, WireReport, WireReportMetadata, WireReportRequest, WireReportRow } from "../Wire.ts"
import { dayFromIso, isoFromDay, monthStartOf, weekStartOf } from "./SimulatorCalendar.ts"
import { invalid } from "./SimulatorHttp.ts"
import {
  type AccountMetrics,
  type DayRange,
  IMPRESSIONS,
  INSTALLS,
  isEmpty,
  METRIC_COUNT,
  newDailyBuffer,
  NEW_DOWNLOADS,
  SPEND_MICROS,
  TAPS,
  totalOf,
  VIEW_INSTALLS
} from "./SimulatorMetrics.ts"
import type { SimAccount, SimCampaign } from "./SimulatorModel.ts"
import { checkConditions, compareBy, matchesConditions, selectorPage } from "./SimulatorSelector.ts"
import type { SimulatorState } from "./SimulatorState.ts"
import { money } from "./SimulatorWire.ts"

/** The path segment of each report: /reports/campaigns, /reports/campaigns/{c}/<level>. */
export type ReportPathLevel = "campaigns" | "adgroups" | "keywords" | "searchterms" | "ads"

type Metadata = typeof WireReportMetadata.Type
type MetricsEncoded = typeof WireMetrics.Encoded

interface RowSource {
  readonly metadata: Metadata
  /** Adds the row's daily vectors over the range into `out`. */
  readonly fill: (range: DayRange, out: Float64Array) => void
}

/** The rows of a level, in entity order. `campaign` is required for every level but campaigns. */
const rowSources = (metrics: AccountMetrics, account: SimAccount, level: ReportPathLevel, campaign: SimCampaign | null): Array<RowSource> => {
  if (level === "campaigns") {
    return account.campaigns.map((c) => ({
      metadata: { campaignId: c.id, campaignName: c.name },
      fill: (range, out) => metrics.addCampaign(c, range, out)
    }))
  }
  if (campaign === null) throw new Error(`the ${level} report needs a campaign`)
  const rows: Array<RowSource> = []
  for (const adGroup of campaign.adGroups) {
    const group = { campaignId: campaign.id, adGroupId: adGroup.id, adGroupName: adGroup.name }
    switch (level) {
      case "adgroups":
        rows.push({ metadata: { ...group, campaignName: campaign.name }, fill: (range, out) => metrics.addAdGroup(campaign, adGroup, range, out) })
        break
      case "keywords":
        for (const keyword of adGroup.keywords) {
          rows.push({
            metadata: { ...group, keywordId: keyword.id, keyword: keyword.text, matchType: keyword.matchType },
            fill: (range, out) => metrics.addKeyword(campaign, adGroup, keyword, range, out)
          })
        }
        break
      case "searchterms":
        for (const keyword of adGroup.keywords) {
          for (const term of metrics.searchTerms(adGroup, keyword)) {
            rows.push({
              metadata: {
                ...group,
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
            metadata: { ...group, keywordId: null, keyword: null, matchType: "AUTO", searchTermText: term.text, searchTermSource: "AUTO" },
            fill: (range, out) => metrics.addSearchTerm(campaign, adGroup, null, term, range, out)
          })
        }
        break
      case "ads":
        for (const ad of adGroup.ads) {
          rows.push({
            metadata: { ...group, adId: ad.id, adName: ad.name },
            fill: (range, out) => metrics.addAd(campaign, adGroup, ad, range, out)
          })
        }
        break
    }
  }
  return rows
}

const ratio = (numerator: number, denominator: number): number =>
  denominator === 0 ? 0 : Math.round((numerator / denominator) * 10_000) / 10_000

/** An average money amount, rounded to the currency's smallest unit. */
const average = (micros: number, count: number, unitMicros: number): number =>
  count === 0 ? 0 : Math.round(micros / count / unitMicros) * unitMicros

/** A metrics vector in v5 names; money rendered exactly from integer micros. */
export const metricsToWire = (vector: Float64Array, offset: number, account: SimAccount): MetricsEncoded => {
  const impressions = vector[offset + IMPRESSIONS]!
  const taps = vector[offset + TAPS]!
  const installs = vector[offset + INSTALLS]!
  const newDownloads = vector[offset + NEW_DOWNLOADS]!
  const spend = vector[offset + SPEND_MICROS]!
  const unit = account.minorUnitMicros
  const currency = account.currency
  return {
    impressions,
    taps,
    ttr: ratio(taps, impressions),
    localSpend: money(spend, currency),
    avgCPT: money(average(spend, taps, unit), currency),
    avgCPM: money(impressions === 0 ? 0 : Math.round(((spend / impressions) * 1000) / unit) * unit, currency),
    tapInstalls: installs,
    tapNewDownloads: newDownloads,
    tapRedownloads: installs - newDownloads,
    tapInstallCPI: money(average(spend, installs, unit), currency),
    tapInstallRate: ratio(installs, taps),
    totalInstalls: installs + vector[offset + VIEW_INSTALLS]!
  }
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

interface ComputedRow {
  readonly source: RowSource
  readonly position: number
  readonly total: Float64Array
  /** Kept from the totals pass when cheap enough; recomputed for the page otherwise. */
  daily: Float64Array | null
}

// Above this many rows the daily vectors are not kept between the totals pass and the page.
const KEEP_DAILY_ROWS = 2_000

const computeRows = (sources: ReadonlyArray<RowSource>, range: DayRange, keepEmpty: boolean): Array<ComputedRow> => {
  const keep = sources.length <= KEEP_DAILY_ROWS
  const scratch = newDailyBuffer(range)
  const rows: Array<ComputedRow> = []
  sources.forEach((source, position) => {
    const daily = keep ? newDailyBuffer(range) : scratch
    if (!keep) scratch.fill(0)
    source.fill(range, daily)
    const total = totalOf(daily)
    if (keepEmpty || !isEmpty(total)) rows.push({ source, position, total, daily: keep ? daily : null })
  })
  return rows
}

/** The platform's rules on dates: a real range, not in the future, DAILY ≤ 90 days and ≤ 90 days back. */
const reportRange = (request: WireReportRequest, today: number): DayRange => {
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
  return { from, to: Math.min(to, today) }
}

const periodStart = (granularity: "DAILY" | "WEEKLY" | "MONTHLY", day: number): number =>
  granularity === "DAILY" ? day : granularity === "WEEKLY" ? weekStartOf(day) : monthStartOf(day)

const granularityOf = (
  daily: Float64Array,
  range: DayRange,
  granularity: "DAILY" | "WEEKLY" | "MONTHLY",
  keepEmpty: boolean,
  account: SimAccount
): NonNullable<typeof WireReportRow.Encoded["granularity"]> => {
  const entries: Array<MetricsEncoded & { readonly date: string }> = []
  const period = new Float64Array(METRIC_COUNT)
  let current = periodStart(granularity, range.from)
  const flush = () => {
    if (keepEmpty || !isEmpty(period)) entries.push({ date: isoFromDay(current), ...metricsToWire(period, 0, account) })
    period.fill(0)
  }
  for (let day = range.from; day <= range.to; day++) {
    const start = periodStart(granularity, day)
    if (start !== current) {
      flush()
      current = start
    }
    const offset = (day - range.from) * METRIC_COUNT
    for (let m = 0; m < METRIC_COUNT; m++) period[m]! += daily[offset + m]!
  }
  flush()
  return entries
}

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

export interface ReportAnswer {
  readonly data: typeof WireReport.Encoded
  readonly pagination: { readonly totalResults: number; readonly startIndex: number; readonly itemsPerPage: number }
}

/**
 * Answers one report request. Built as the encoded type of Wire.ts's WireReport directly rather than
 * through Schema.encode: a 1,000-row page of 90 days is ~90,000 entries and must stay well under a
 * second; the tests decode answers with WireReport to keep the two in step.
 */
export const runReport = (
  state: SimulatorState,
  account: SimAccount,
  level: ReportPathLevel,
  campaign: SimCampaign | null,
  request: WireReportRequest
): ReportAnswer => {
  const metrics = state.metrics(account)
  const range = reportRange(request, metrics.context.today)
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
  // A client pages through one report with the same request: compute its rows once, serve pages as slices.
  const key = JSON.stringify([
    state.version,
    metrics.context.restatement,
    metrics.context.today,
    metrics.context.todayHour,
    account.orgId,
    level,
    campaign?.id ?? null,
    range,
    keepEmpty,
    conditions,
    orderBy
  ])
  const cache = reportRowsCacheOf(state)
  const rows = cache.get(key) ?? (() => {
    const sources = rowSources(metrics, account, level, campaign)
      .filter((source) => matchesConditions(source.metadata as Readonly<Record<string, unknown>>, conditions))
    const computed = computeRows(sources, range, keepEmpty)
    if (orderBy.length > 0) computed.sort(compareBy(orderBy, sortValue, (a, b) => a.position - b.position))
    cache.set(key, computed)
    return computed
  })()
  const pageRows = rows.slice(page.offset, page.offset + page.limit)
  const granularity = request.granularity
  const withTotals = request.returnRowTotals === true || granularity === undefined
  const wireRows = pageRows.map((row): typeof WireReportRow.Encoded => {
    let daily = row.daily
    if (granularity !== undefined && daily === null) {
      daily = newDailyBuffer(range)
      row.source.fill(range, daily)
    }
    return {
      metadata: row.source.metadata,
      ...(withTotals ? { total: metricsToWire(row.total, 0, account) } : {}),
      ...(granularity !== undefined && daily !== null ? { granularity: granularityOf(daily, range, granularity, keepEmpty, account) } : {})
    }
  })
  let grandTotals: { readonly total: MetricsEncoded } | null = null
  if (request.returnGrandTotals === true) {
    const sum = new Float64Array(METRIC_COUNT)
    for (const row of rows) for (let m = 0; m < METRIC_COUNT; m++) sum[m]! += row.total[m]!
    grandTotals = { total: metricsToWire(sum, 0, account) }
  }
  return {
    data: { reportingDataResponse: { row: wireRows, grandTotals } },
    pagination: { totalResults: rows.length, startIndex: page.offset, itemsPerPage: wireRows.length }
  }
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
