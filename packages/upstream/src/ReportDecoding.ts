/**
 * Report answers, read without Effect Schema: a 90-day report page carries tens of thousands of daily
 * entries, and a generic decoder spends more on them than the rest of a sync. Every field acs uses is
 * still checked; a wrong shape is a failure naming the place, never a silent zero.
 */
import { UpstreamError } from "@acs/domain/Errors"
import { Effect } from "effect"
import { microsFromDecimal } from "./Money.ts"
import type { Metrics, ReportRow } from "./Upstream.ts"

type Json = Readonly<Record<string, unknown>>

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

class ReportShapeError extends Error {}

const fail = (where: string, expected: string): never => {
  throw new ReportShapeError(`${where}: expected ${expected}`)
}

const int = (o: Json, key: string, where: string): number => {
  const v = o[key]
  return typeof v === "number" && Number.isSafeInteger(v) ? v : fail(`${where}.${key}`, "an integer")
}

const money = (o: Json, key: string, where: string): number => {
  const v = o[key]
  return isObject(v) && typeof v["amount"] === "string" ? microsFromDecimal(v["amount"]) : fail(`${where}.${key}`, "a money object")
}

const metrics = (o: Json, where: string): Metrics => ({
  impressions: int(o, "impressions", where),
  taps: int(o, "taps", where),
  installs: int(o, "tapInstalls", where),
  spendMicros: money(o, "localSpend", where)
})

const optionalId = (o: Json, key: string, where: string): string | null => {
  const v = o[key]
  return v === undefined || v === null ? null : typeof v === "number" ? String(v) : fail(`${where}.${key}`, "an integer id")
}

const optionalText = (o: Json, key: string, where: string): string | null => {
  const v = o[key]
  return v === undefined || v === null ? null : typeof v === "string" ? v : fail(`${where}.${key}`, "a string")
}

const sum = (periods: ReadonlyArray<Metrics>): Metrics =>
  periods.reduce((acc, m) => ({
    impressions: acc.impressions + m.impressions,
    taps: acc.taps + m.taps,
    installs: acc.installs + m.installs,
    spendMicros: acc.spendMicros + m.spendMicros
  }), { impressions: 0, taps: 0, installs: 0, spendMicros: 0 })

export interface DecodedReportPage {
  readonly rows: ReadonlyArray<ReportRow>
  readonly totalResults: number | undefined
}

/** The rows of a v5 report answer, in acs terms; a message naming the first misshapen field otherwise. */
export const decodeReportPage = (body: unknown, campaignId: string | undefined): DecodedReportPage | string => {
  try {
    const data = isObject(body) ? body["data"] : undefined
    const response = isObject(data) ? data["reportingDataResponse"] : fail("data", "an object")
    const list = isObject(response) && Array.isArray(response["row"]) ? response["row"] : fail("data.reportingDataResponse.row", "an array")
    const rows = list.map((row: unknown, i): ReportRow => {
      const where = `row[${i}]`
      if (!isObject(row) || !isObject(row["metadata"])) return fail(`${where}.metadata`, "an object")
      const meta = row["metadata"]
      const granularity = row["granularity"] ?? []
      if (!Array.isArray(granularity)) return fail(`${where}.granularity`, "an array")
      const periods = granularity.map((entry: unknown, j) => {
        const at = `${where}.granularity[${j}]`
        if (!isObject(entry) || typeof entry["date"] !== "string") return fail(`${at}.date`, "a date")
        return { date: entry["date"], ...metrics(entry, at) }
      })
      const total = row["total"]
      return {
        campaignId: optionalId(meta, "campaignId", `${where}.metadata`) ?? campaignId ?? "",
        adGroupId: optionalId(meta, "adGroupId", `${where}.metadata`),
        keywordId: optionalId(meta, "keywordId", `${where}.metadata`),
        adId: optionalId(meta, "adId", `${where}.metadata`),
        searchTerm: optionalText(meta, "searchTermText", `${where}.metadata`),
        keyword: optionalText(meta, "keyword", `${where}.metadata`),
        matchType: optionalText(meta, "matchType", `${where}.metadata`),
        periods,
        total: isObject(total) ? metrics(total, `${where}.total`) : sum(periods)
      }
    })
    const pagination = isObject(body) ? body["pagination"] : undefined
    const totalResults = isObject(pagination) && typeof pagination["totalResults"] === "number" ? pagination["totalResults"] : undefined
    return { rows, totalResults }
  } catch (error) {
    if (error instanceof ReportShapeError || error instanceof Error) return error.message
    throw error
  }
}

/** A v5-shaped report answer as one page of the port's report; an UpstreamError naming the misshapen field. */
export const reportPageOf = (
  body: unknown,
  request: { readonly campaignId?: string | undefined; readonly offset: number; readonly limit: number }
) => {
  const page = decodeReportPage(body, request.campaignId)
  return typeof page === "string"
    ? Effect.fail(new UpstreamError({ message: `the upstream report answered in an unexpected shape: ${page}` }))
    : Effect.succeed({
      rows: page.rows,
      offset: request.offset,
      limit: request.limit,
      totalResults: page.totalResults ?? request.offset + page.rows.length
    })
}
