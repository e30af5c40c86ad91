/**
 * v1 report pages as JSON bytes, from the same computed rows as v5 (see SimulatorReportJson): each row's
 * metadata in v1 names, `totalMetrics` and, with a granularity, `granularMetrics`, the metrics in v1
 * names. The bytes are what stringifying the v1 objects wrote before.
 */
import { ascii, JsonBytes } from "../SimulatorJsonBytes.ts"
import { average, IMPRESSIONS, INSTALLS, ratio, SPEND_MICROS, TAPS } from "../SimulatorMetrics.ts"
import type { PreparedReport, ReportPathLevel } from "../SimulatorReports.ts"
import {
  type MetricsWriter,
  moneyEnd,
  moneyKey,
  pageCapacity,
  perMille,
  writeAmount,
  writePeriods,
  writeRatio
} from "../SimulatorReportJson.ts"

/** impressions, taps, tapInstalls, localSpend, cpt, cpm, ttr: v5's metrics renamed, the rest left out. */
const v1MetricsWriter = (unitMicros: number, currency: string): MetricsWriter => {
  const end = moneyEnd(currency)
  const taps = ascii(`,"taps":`)
  const tapInstalls = ascii(`,"tapInstalls":`)
  const localSpend = ascii(moneyKey("localSpend"))
  const cpt = ascii(`${end}${moneyKey("cpt")}`)
  const cpm = ascii(`${end}${moneyKey("cpm")}`)
  const ttr = ascii(`${end},"ttr":`)
  const close = ascii("}")
  return (out, v, o) => {
    const impressions = v[o + IMPRESSIONS]!
    const tapCount = v[o + TAPS]!
    const spend = v[o + SPEND_MICROS]!
    out.number(impressions).raw(taps).number(tapCount).raw(tapInstalls).number(v[o + INSTALLS]!).raw(localSpend)
    writeAmount(out, spend)
    out.raw(cpt)
    writeAmount(out, average(spend, tapCount, unitMicros))
    out.raw(cpm)
    writeAmount(out, perMille(spend, impressions, unitMicros))
    out.raw(ttr)
    writeRatio(out, ratio(tapCount, impressions))
    out.raw(close)
  }
}

/**
 * Report metadata as Apple's v1 examples show it: the row's own entity as `id` with its `name` (a
 * keyword's `text`), its parents by id, and the ad account; search-term rows keep their term fields.
 */
const metadataToV1 = (level: ReportPathLevel, meta: Readonly<Record<string, unknown>>, adAccountId: number) => {
  const parents = { adAccountId, campaignId: meta["campaignId"] }
  switch (level) {
    case "campaigns":
      return { id: meta["campaignId"], name: meta["campaignName"], adAccountId }
    case "adgroups":
      return { id: meta["adGroupId"], name: meta["adGroupName"], ...parents }
    case "keywords":
      return { id: meta["keywordId"], text: meta["keyword"], matchType: meta["matchType"], ...parents, adGroupId: meta["adGroupId"] }
    case "ads":
      return { id: meta["adId"], name: meta["adName"], ...parents, adGroupId: meta["adGroupId"] }
    case "searchterms": {
      // Apple's ReportingSearchTerm: the matched keyword as a nested object (none for Search Match, whose row
      // keeps its own matchType), the ad group as a summary beside its id.
      const { keywordId, keyword, matchType, adGroupName, ...term } = meta
      return {
        ...term,
        adAccountId,
        adGroup: { id: meta["adGroupId"], name: adGroupName },
        keyword: keywordId === null || keywordId === undefined ? null : { id: keywordId, text: keyword, matchType },
        ...(keywordId === null || keywordId === undefined ? { matchType } : {})
      }
    }
  }
}

const PAGE = {
  start: ascii(`{"result":{"rows":[`),
  comma: ascii(","),
  metadata: ascii(`{"metadata":`),
  totalMetrics: ascii(`,"totalMetrics":{"impressions":`),
  granularMetrics: ascii(`,"granularMetrics":[`),
  periodsEnd: ascii("]"),
  rowEnd: ascii("}"),
  offset: ascii(`]},"pagination":{"offset":`),
  pageSize: ascii(`,"pageSize":`),
  totalCount: ascii(`,"totalCount":`),
  end: ascii("}}")
}

/** `{"result":{"rows":[…]},"pagination":{offset, pageSize, totalCount}}` for rows [offset, offset + pageSize). */
export const v1ReportBytes = (report: PreparedReport, level: ReportPathLevel, offset: number, pageSize: number): Buffer => {
  const { account, granularity, rows } = report
  const metrics = v1MetricsWriter(account.minorUnitMicros, account.currency)
  const pageRows = rows.slice(offset, offset + pageSize)
  const out = new JsonBytes(pageCapacity(report, pageRows, 220))
  out.raw(PAGE.start)
  pageRows.forEach((row, index) => {
    if (index > 0) out.raw(PAGE.comma)
    const metadata = metadataToV1(level, row.source.metadata as Readonly<Record<string, unknown>>, account.orgId)
    out.raw(PAGE.metadata).text(JSON.stringify(metadata)).raw(PAGE.totalMetrics)
    metrics(out, row.total, 0)
    if (granularity !== undefined) {
      out.raw(PAGE.granularMetrics)
      writePeriods(out, row, report, metrics)
      out.raw(PAGE.periodsEnd)
    }
    out.raw(PAGE.rowEnd)
  })
  out.raw(PAGE.offset).number(offset).raw(PAGE.pageSize).number(pageSize).raw(PAGE.totalCount).number(rows.length).raw(PAGE.end)
  return out.done()
}
