/**
 * The 30-day facts the plan and the audit share: the window (complete days ending yesterday, as the policy's),
 * per-campaign totals, and which campaigns are limited by their budget. One definition, so an audit's
 * "budget-capped" finding and the plan's budget raise always name the same campaigns.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { decodeRows } from "../db/Rows.ts"
import { coveredDays, type MetricWindow, windowEndingYesterday } from "../warehouse/Window.ts"

/** The policy's window (docs/contract.md 3.1 "30-day CPA"), so the plan reasons over the numbers the policy will check. */
export const FACT_DAYS = 30

/** A campaign is budget-limited when it spends on average at least this share of its daily budget. */
export const BUDGET_LIMITED_SHARE = 0.9

export const factWindow = (account: AccountRecord, now: number): MetricWindow =>
  windowEndingYesterday(now, account.timeZone, FACT_DAYS)

export interface CampaignTotals {
  readonly campaignId: string
  readonly name: string
  readonly status: string
  readonly bidStrategy: string
  readonly dailyBudgetMicros: number | null
  readonly spendMicros: number
  readonly taps: number
  readonly installs: number
}

export interface BudgetLimited extends CampaignTotals {
  readonly dailyBudgetMicros: number
  readonly avgDailySpendMicros: number
}

const num = (value: string | number | null): number => (value === null ? 0 : Number(value))

/** A campaign beside its sums over the window (int8 and numeric as text; null when it did not spend). */
const CampaignSums = Schema.Struct({
  campaignId: Schema.String,
  name: Schema.String,
  status: Schema.String,
  bidStrategy: Schema.String,
  dailyBudgetMicros: Schema.NullOr(Schema.String),
  spend: Schema.NullOr(Schema.String),
  taps: Schema.NullOr(Schema.String),
  installs: Schema.NullOr(Schema.String)
})
const decodeCampaignSums = decodeRows(CampaignSums)

/** Every campaign of the account with its totals over the window (zero when it did not spend). */
export const campaignTotals = (account: AccountRecord, window: MetricWindow) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`
      SELECT c.campaign_id, c.name, c.status, c.bid_strategy, c.daily_budget_micros,
        m.spend, m.taps, m.installs
      FROM campaigns c
      LEFT JOIN (
        SELECT entity_key, sum(spend_micros) AS spend, sum(taps) AS taps, sum(installs) AS installs
        FROM daily_metrics
        WHERE project_id = ${account.projectId} AND level = 'campaigns'
          AND day BETWEEN ${window.start}::date AND ${window.end}::date
        GROUP BY entity_key
      ) m ON m.entity_key = c.campaign_id
      WHERE c.project_id = ${account.projectId}
      ORDER BY c.campaign_id`.pipe(Effect.flatMap(decodeCampaignSums))
    return rows.map((r): CampaignTotals => ({
      campaignId: r.campaignId,
      name: r.name,
      status: r.status,
      bidStrategy: r.bidStrategy,
      dailyBudgetMicros: r.dailyBudgetMicros === null ? null : Number(r.dailyBudgetMicros),
      spendMicros: num(r.spend),
      taps: num(r.taps),
      installs: num(r.installs)
    }))
  }).pipe(Effect.orDie)

/**
 * Enabled campaigns whose average daily spend over the days the warehouse covers reaches 90% of the daily
 * budget: they stop serving before the day ends.
 */
export const budgetLimited = (account: AccountRecord, window: MetricWindow, campaigns: ReadonlyArray<CampaignTotals>) => {
  const days = coveredDays(window, account.firstSyncedDay, account.lastSyncedDay)
  if (days === 0) return []
  return campaigns.flatMap((c): Array<BudgetLimited> => {
    if (c.status !== "ENABLED" || c.dailyBudgetMicros === null || c.dailyBudgetMicros <= 0) return []
    const avgDailySpendMicros = Math.round(c.spendMicros / days)
    return avgDailySpendMicros >= BUDGET_LIMITED_SHARE * c.dailyBudgetMicros
      ? [{ ...c, dailyBudgetMicros: c.dailyBudgetMicros, avgDailySpendMicros }]
      : []
  })
}
