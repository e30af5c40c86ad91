/**
 * Report pages as JSON. A page of 1,000 rows × 90 days holds ~100,000 metric entries; building them as
 * objects (a money object per amount), stringifying and encoding them cost the simulator more CPU than
 * computing the metrics, so pages are written as bytes straight from the metric vectors. The bytes are
 * exactly what JSON.stringify wrote for the objects before (same keys, order and number forms); the
 * tests decode answers with Wire.ts's schemas to keep the two in step.
 */
import { decimalFromMicros } from "../Money.ts"
import { isoFromDay, monthStartOf, weekStartOf } from "./SimulatorCalendar.ts"
import { ascii, JsonBytes } from "./SimulatorJsonBytes.ts"
import {
  average,
  IMPRESSIONS,
  INSTALLS,
  isEmpty,
  METRIC_COUNT,
  NEW_DOWNLOADS,
  ratio,
  SPEND_MICROS,
  TAPS,
  VIEW_INSTALLS
} from "./SimulatorMetrics.ts"
import type { ComputedRow, PreparedReport } from "./SimulatorReports.ts"

/** Average cost per thousand impressions, rounded to the currency's smallest unit. */
export const perMille = (micros: number, impressions: number, unitMicros: number): number =>
  impressions === 0 ? 0 : Math.round(((micros / impressions) * 1000) / unitMicros) * unitMicros

/**
 * Writes one metrics object from the vector at `values[offset..]`: everything after its leading
 * `"impressions":` key (which the caller writes, merged with what comes before) up to its closing brace.
 */
export type MetricsWriter = (out: JsonBytes, values: Float64Array, offset: number) => void

/** The amount of a money object as decimalFromMicros writes it: whole cents (every report amount) digit by digit. */
export const writeAmount = (out: JsonBytes, micros: number): void => {
  if (micros >= 0 && micros % 10_000 === 0 && micros <= 0xffffffff * 1_000_000) {
    const rest = micros % 1_000_000
    out.decimal2((micros - rest) / 1_000_000, rest / 10_000)
  } else out.text(decimalFromMicros(micros))
}

// Every ratio is Math.round(x × 10,000) / 10,000 and nearly all lie in [0, 1]: their JSON text from a table.
const RATIO_STEPS = 10_000
const ratioTable = (() => {
  const texts = Array.from({ length: RATIO_STEPS + 1 }, (_, k) => JSON.stringify(k / RATIO_STEPS))
  const starts = new Int32Array(RATIO_STEPS + 2)
  texts.forEach((text, k) => {
    starts[k + 1] = starts[k]! + text.length
  })
  return { bytes: ascii(texts.join("")), starts }
})()

/** A ratio as JSON writes it. */
export const writeRatio = (out: JsonBytes, value: number): void => {
  const k = Math.round(value * RATIO_STEPS)
  if (k >= 0 && k <= RATIO_STEPS && k / RATIO_STEPS === value) out.slice(ratioTable.bytes, ratioTable.starts[k]!, ratioTable.starts[k + 1]!)
  else out.number(value)
}

/** A money member's fixed parts: `,"<key>":{"amount":"` before the amount, `","currency":"<currency>"}` after. */
export const moneyKey = (key: string): string => `,"${key}":{"amount":"`
export const moneyEnd = (currency: string): string => `","currency":${JSON.stringify(currency)}}`

/** Metrics in v5 names: ratios and averages from the vector's counts and spend. */
export const v5MetricsWriter = (unitMicros: number, currency: string): MetricsWriter => {
  const end = moneyEnd(currency)
  const taps = ascii(`,"taps":`)
  const ttr = ascii(`,"ttr":`)
  const localSpend = ascii(moneyKey("localSpend"))
  const avgCPT = ascii(`${end}${moneyKey("avgCPT")}`)
  const avgCPM = ascii(`${end}${moneyKey("avgCPM")}`)
  const tapInstalls = ascii(`${end},"tapInstalls":`)
  const tapNewDownloads = ascii(`,"tapNewDownloads":`)
  const tapRedownloads = ascii(`,"tapRedownloads":`)
  const tapInstallCPI = ascii(moneyKey("tapInstallCPI"))
  const tapInstallRate = ascii(`${end},"tapInstallRate":`)
  const totalInstalls = ascii(`,"totalInstalls":`)
  const close = ascii("}")
  return (out, v, o) => {
    const impressions = v[o + IMPRESSIONS]!
    const tapCount = v[o + TAPS]!
    const installs = v[o + INSTALLS]!
    const newDownloads = v[o + NEW_DOWNLOADS]!
    const spend = v[o + SPEND_MICROS]!
    out.number(impressions).raw(taps).number(tapCount).raw(ttr)
    writeRatio(out, ratio(tapCount, impressions))
    out.raw(localSpend)
    writeAmount(out, spend)
    out.raw(avgCPT)
    writeAmount(out, average(spend, tapCount, unitMicros))
    out.raw(avgCPM)
    writeAmount(out, perMille(spend, impressions, unitMicros))
    out.raw(tapInstalls).number(installs).raw(tapNewDownloads).number(newDownloads)
    out.raw(tapRedownloads).number(installs - newDownloads).raw(tapInstallCPI)
    writeAmount(out, average(spend, installs, unitMicros))
    out.raw(tapInstallRate)
    writeRatio(out, ratio(installs, tapCount))
    out.raw(totalInstalls).number(installs + v[o + VIEW_INSTALLS]!).raw(close)
  }
}

const periodStart = (granularity: "HOURLY" | "DAILY" | "WEEKLY" | "MONTHLY", day: number): number =>
  granularity === "DAILY" ? day : granularity === "WEEKLY" ? weekStartOf(day) : monthStartOf(day)

const COMMA = ascii(",")
const EMPTY = new Float64Array(METRIC_COUNT)

// `{"date":"2026-11-22","impressions":` per day: every entry starts with one.
const datePrefixes = new Map<number, Uint8Array>()

const datePrefix = (day: number): Uint8Array => {
  let prefix = datePrefixes.get(day)
  if (prefix === undefined) {
    prefix = ascii(`{"date":"${isoFromDay(day)}","impressions":`)
    if (datePrefixes.size < 100_000) datePrefixes.set(day, prefix)
  }
  return prefix
}

// `{"date":"2026-11-22 13:00","impressions":` per hour of an hourly report.
const hourPrefix = (day: number, hour: number): Uint8Array =>
  ascii(`{"date":"${isoFromDay(day)} ${String(hour).padStart(2, "0")}:00","impressions":`)

/**
 * Writes a row's periods as comma-separated `{"date":"…",<metrics>}` entries: each period is the sum of
 * its days inside the range, dated by its first day; periods without metrics only with `keepEmpty`.
 */
export const writePeriods = (out: JsonBytes, row: ComputedRow, report: PreparedReport, metrics: MetricsWriter): void => {
  const { count, first, store } = row
  const { days, values } = store
  const { keepEmpty, range } = report
  const granularity = report.granularity ?? "DAILY"
  let separate = false
  if (granularity === "HOURLY") {
    // Slots are hours from the range's first day; only the kept ones have metrics.
    let next = first
    const slots = (range.to - range.from + 1) * 24
    for (let slot = 0; slot < slots; slot++) {
      const kept = next < first + count && days[next] === slot
      if (!kept && !keepEmpty) continue
      if (separate) out.raw(COMMA)
      separate = true
      out.raw(hourPrefix(range.from + Math.floor(slot / 24), slot % 24))
      if (kept) {
        metrics(out, values, next * METRIC_COUNT)
        next++
      } else metrics(out, EMPTY, 0)
    }
    return
  }
  const entry = (vector: Float64Array, offset: number, date: number) => {
    if (separate) out.raw(COMMA)
    separate = true
    out.raw(datePrefix(date))
    metrics(out, vector, offset)
  }
  if (granularity === "DAILY" && !keepEmpty) {
    // One period per day, and only the kept days can have metrics.
    for (let k = first; k < first + count; k++) {
      const offset = k * METRIC_COUNT
      if (!isEmpty(values, offset)) entry(values, offset, range.from + days[k]!)
    }
    return
  }
  const period = new Float64Array(METRIC_COUNT)
  let current = periodStart(granularity, range.from)
  const flush = () => {
    if (keepEmpty || !isEmpty(period)) entry(period, 0, current)
    period.fill(0)
  }
  let next = first
  for (let day = range.from; day <= range.to; day++) {
    const start = periodStart(granularity, day)
    if (start !== current) {
      flush()
      current = start
    }
    if (next < first + count && days[next] === day - range.from) {
      const offset = next * METRIC_COUNT
      for (let m = 0; m < METRIC_COUNT; m++) period[m]! += values[offset + m]!
      next++
    }
  }
  flush()
}

/** The sum of every row's totals (the report's grand totals). */
const grandTotalOf = (rows: ReadonlyArray<ComputedRow>): Float64Array => {
  const sum = new Float64Array(METRIC_COUNT)
  for (const row of rows) for (let m = 0; m < METRIC_COUNT; m++) sum[m]! += row.total[m]!
  return sum
}

const V5_PAGE = {
  start: ascii(`{"data":{"reportingDataResponse":{"row":[`),
  metadata: ascii(`{"metadata":`),
  total: ascii(`,"total":{"impressions":`),
  granularity: ascii(`,"granularity":[`),
  periodsEnd: ascii(`]`),
  rowEnd: ascii(`}`),
  grandTotals: ascii(`],"grandTotals":`),
  grandTotal: ascii(`{"total":{"impressions":`),
  grandTotalEnd: ascii(`}`),
  none: ascii(`null`),
  totalResults: ascii(`}},"pagination":{"totalResults":`),
  startIndex: ascii(`,"startIndex":`),
  itemsPerPage: ascii(`,"itemsPerPage":`),
  end: ascii(`},"error":null}`)
}

/** Room for a page's rows: a DAILY page is mostly entries, one per kept day, of up to `bytesPerEntry`. */
export const pageCapacity = (report: PreparedReport, rows: ReadonlyArray<ComputedRow>, bytesPerEntry: number): number => {
  const daily = (report.granularity === "DAILY" || report.granularity === "HOURLY") && !report.keepEmpty
  let entries = 0
  for (const row of rows) entries += (daily ? row.count : 0) + 2
  return 4096 + entries * bytesPerEntry
}

/**
 * The v5 answer to a report request: `{data:{reportingDataResponse:{row, grandTotals}}, pagination,
 * error:null}`. `total` is present when returnRowTotals is true or no granularity was asked for.
 */
export const v5ReportBytes = (report: PreparedReport, returnRowTotals: boolean, returnGrandTotals: boolean): Buffer => {
  const { account, granularity, page, rows } = report
  const metrics = v5MetricsWriter(account.minorUnitMicros, account.currency)
  const withTotals = returnRowTotals || granularity === undefined
  const pageRows = rows.slice(page.offset, page.offset + page.limit)
  const out = new JsonBytes(pageCapacity(report, pageRows, 450))
  out.raw(V5_PAGE.start)
  pageRows.forEach((row, index) => {
    if (index > 0) out.raw(COMMA)
    out.raw(V5_PAGE.metadata).text(JSON.stringify(row.source.metadata))
    if (withTotals) {
      out.raw(V5_PAGE.total)
      metrics(out, row.total, 0)
    }
    if (granularity !== undefined) {
      out.raw(V5_PAGE.granularity)
      writePeriods(out, row, report, metrics)
      out.raw(V5_PAGE.periodsEnd)
    }
    out.raw(V5_PAGE.rowEnd)
  })
  out.raw(V5_PAGE.grandTotals)
  if (returnGrandTotals) {
    out.raw(V5_PAGE.grandTotal)
    metrics(out, grandTotalOf(rows), 0)
    out.raw(V5_PAGE.grandTotalEnd)
  } else out.raw(V5_PAGE.none)
  out.raw(V5_PAGE.totalResults).number(rows.length).raw(V5_PAGE.startIndex).number(page.offset)
  out.raw(V5_PAGE.itemsPerPage).number(pageRows.length).raw(V5_PAGE.end)
  return out.done()
}
