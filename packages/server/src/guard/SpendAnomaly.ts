/**
 * The spend-anomaly breaker (docs/contract.md 3.3, 3.4): after each sync, the account's spend in its latest complete
 * hour (the platform's hourly report, in the account's time zone) against its usual spend for that hour (the median
 * of the same hour on the 6 days before). Past the guardrails' `circuitBreaker.spendPerHourMultiple` (default 3) the
 * account's auto-apply pauses, as the write-failure breaker pauses it, until an admin resumes it. An hour with no
 * usual spend says nothing. An upstream without hourly reports (v5) is not checked.
 */
import type { UpstreamClient } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { money } from "../actions/kinds/KindSupport.ts"
import { pauseAutoApply, readGuardrails } from "../policy/Guardrails.ts"
import { addDays } from "../warehouse/Window.ts"

/** Days before the latest hour whose same hour makes its usual spend. */
export const USUAL_DAYS = 6

export interface HourSpend {
  /** "YYYY-MM-DDTHH" in the account's time zone. */
  readonly hour: string
  readonly spendMicros: number
}

export interface Anomaly {
  readonly hour: string
  readonly spendMicros: number
  readonly usualMicros: number
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** The hour `latest` when its spend (summed over the rows of that hour) is past `multiple` × its usual; else undefined. */
export const spendAnomaly = (rows: ReadonlyArray<HourSpend>, latest: string, multiple: number): Anomaly | undefined => {
  const byHour = new Map<string, number>()
  for (const row of rows) byHour.set(row.hour, (byHour.get(row.hour) ?? 0) + row.spendMicros)
  const [day, hh] = latest.split("T") as [string, string]
  const usualMicros = median(Array.from({ length: USUAL_DAYS }, (_, i) => byHour.get(`${addDays(day, -(i + 1))}T${hh}`) ?? 0))
  const spendMicros = byHour.get(latest) ?? 0
  return usualMicros > 0 && spendMicros > multiple * usualMicros ? { hour: latest, spendMicros, usualMicros } : undefined
}

// One formatter per time zone, kept for the life of the process (zones are few).
const formatters = new Map<string, Intl.DateTimeFormat>()

/** The hour before the one `instant` falls in, as "YYYY-MM-DDTHH" in `timeZone`: the latest complete hour. */
export const latestCompleteHour = (instant: number, timeZone: string): string => {
  let formatter = formatters.get(timeZone)
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", hourCycle: "h23" })
    formatters.set(timeZone, formatter)
  }
  const parts = formatter.formatToParts(new Date(instant - 3_600_000))
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? "00"
  return `${get("year")}-${get("month")}-${get("day")}T${get("hour")}`
}

export class SpendAnomaly extends Effect.Service<SpendAnomaly>()("acs/SpendAnomaly", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Reads the hours and pauses the account's auto-apply on an anomaly; answers the anomaly, if any. */
    const check = (client: UpstreamClient, account: AccountRecord) =>
      Effect.gen(function*() {
        if (client.hourlyCampaignMetrics === undefined) return undefined
        const latest = latestCompleteHour(yield* Clock.currentTimeMillis, account.timeZone)
        const day = latest.slice(0, 10)
        const rows = yield* client.hourlyCampaignMetrics(account.upstreamAccountId, { startDate: addDays(day, -USUAL_DAYS), endDate: day })
        const { circuitBreaker } = yield* readGuardrails(sql, account.projectId)
        const anomaly = spendAnomaly(rows, latest, circuitBreaker.spendPerHourMultiple)
        if (anomaly === undefined) return undefined
        const reason = `spend anomaly: ${money(anomaly.spendMicros, account.currency)} spent in the hour ${latest.replace("T", " ")}:00, ` +
          `${(anomaly.spendMicros / anomaly.usualMicros).toFixed(1)}× its usual ${money(anomaly.usualMicros, account.currency)} ` +
          `(past ${circuitBreaker.spendPerHourMultiple}×)`
        yield* pauseAutoApply(sql, account.orgId, account.projectId, reason, "spend-anomaly breaker")
        return anomaly
      }).pipe(Effect.withSpan("SpendAnomaly.check"))

    return { check } as const
  })
}) {}
