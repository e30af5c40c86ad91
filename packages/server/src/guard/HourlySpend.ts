/**
 * The platform's hourly report as the guard reads it after a sync (docs/contract.md 3.4): the account's campaigns'
 * spend per hour over the latest complete hour's day and the 6 days before, in the account's time zone. One read per
 * pass, shared by the spend-anomaly breaker and the watches' hourly lane. Undefined where the upstream has no hourly
 * report (v5).
 */
import type { UpstreamClient } from "@acs/upstream/Upstream"
import { Clock, Effect } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { addDays, hourIn } from "../warehouse/Window.ts"
import { changePct } from "./Verdict.ts"

/** Days before the latest hour whose same hour makes its usual spend. */
export const USUAL_DAYS = 6

export interface HourSpend {
  readonly campaignId: string
  /** "YYYY-MM-DDTHH" in the account's time zone. */
  readonly hour: string
  readonly spendMicros: number
}

export interface HourlySpend {
  /** The latest complete hour, "YYYY-MM-DDTHH". */
  readonly latest: string
  readonly rows: ReadonlyArray<HourSpend>
}

/** The hour before the one `instant` falls in, as "YYYY-MM-DDTHH" in `timeZone`: the latest complete hour. */
export const latestCompleteHour = (instant: number, timeZone: string): string => hourIn(instant - 3_600_000, timeZone)

/** The hour label `hours` after `label` (calendar arithmetic on the label: a change of clock time is ignored). */
export const hourAfter = (label: string, hours: number): string =>
  new Date(Date.parse(`${label}:00:00Z`) + hours * 3_600_000).toISOString().slice(0, 13)

/** Spend per hour label, summed over the rows (of the given campaigns, when named). */
export const spendByHour = (rows: ReadonlyArray<HourSpend>, campaignIds?: ReadonlySet<string>): ReadonlyMap<string, number> => {
  const byHour = new Map<string, number>()
  for (const row of rows) {
    if (campaignIds === undefined || campaignIds.has(row.campaignId)) byHour.set(row.hour, (byHour.get(row.hour) ?? 0) + row.spendMicros)
  }
  return byHour
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** An hour's usual spend: the median of the same hour on the `USUAL_DAYS` days before it (an hour with none counts 0). */
export const usualSpend = (byHour: ReadonlyMap<string, number>, hour: string): number => {
  const [day, hh] = hour.split("T") as [string, string]
  return median(Array.from({ length: USUAL_DAYS }, (_, i) => byHour.get(`${addDays(day, -(i + 1))}T${hh}`) ?? 0))
}

/** Reads the account's hourly campaign spend through the latest complete hour. */
export const readHourlySpend = (client: UpstreamClient, account: AccountRecord) =>
  Effect.gen(function*() {
    if (client.hourlyCampaignMetrics === undefined) return undefined
    const latest = latestCompleteHour(yield* Clock.currentTimeMillis, account.timeZone)
    const day = latest.slice(0, 10)
    const rows = yield* client.hourlyCampaignMetrics(account.upstreamAccountId, { startDate: addDays(day, -USUAL_DAYS), endDate: day })
    return { latest, rows: rows.map((row) => ({ campaignId: row.campaignId, hour: row.hour, spendMicros: row.spendMicros })) } satisfies HourlySpend
  }).pipe(Effect.withSpan("HourlySpend.read"))

export interface HourlyLane {
  readonly hours: number
  readonly spendMicros: number
  readonly usualMicros: number
  readonly changePct: number | null
}

/**
 * A watch's hourly lane, while it lasts (the first 24 hours after the applied hour): its campaigns' spend in the
 * complete hours after the applied hour against their usual spend for those hours. Undefined before the first
 * complete hour after the apply and once the 24 hours are past.
 */
export const hourlyLane = (hourly: HourlySpend, campaignIds: ReadonlyArray<string>, appliedHour: string): HourlyLane | undefined => {
  if (hourAfter(appliedHour, 24) < hourly.latest) return undefined
  const byHour = spendByHour(hourly.rows, new Set(campaignIds))
  const hours: Array<string> = []
  for (let hour = hourAfter(appliedHour, 1); hour <= hourly.latest; hour = hourAfter(hour, 1)) hours.push(hour)
  if (hours.length === 0) return undefined
  const spendMicros = hours.reduce((sum, hour) => sum + (byHour.get(hour) ?? 0), 0)
  const usualMicros = hours.reduce((sum, hour) => sum + usualSpend(byHour, hour), 0)
  return { hours: hours.length, spendMicros, usualMicros, changePct: changePct(usualMicros, spendMicros) }
}
