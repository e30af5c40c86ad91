/**
 * Spend-ranked account reads (docs/contract.md 2.2). The top rows of a window come from the
 * spend suffixes (one array read per entity that spent), the rest of the slice from the entity table by id,
 * and the metrics of just the returned rows from the daily rows. Order: spend descending, ties by id.
 */
import type { DataFreshness } from "@acs/domain/Accounts"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { dataFreshness } from "../accounts/Freshness.ts"
import type { Granted } from "../accounts/Granted.ts"
import { columnsOf, countOf, decodeRows } from "../db/Rows.ts"
import { entityRows, NegativeRow } from "./EntityRows.ts"
import { coveredDays, daysBetween, type MetricWindow, windowEndingYesterday } from "./Window.ts"

export type RankedLevel = "campaigns" | "adGroups" | "keywords" | "searchTerms" | "ads"

export interface ReadQuery {
  readonly days: number
  readonly limit: number
  readonly campaignId?: string | undefined
  readonly adGroupId?: string | undefined
}

export interface RowMetrics {
  readonly impressions: number
  readonly taps: number
  readonly installs: number
  readonly spendMicros: number
  readonly avgCptMicros: number | null
  readonly cpaMicros: number | null
  readonly ttr: number | null
  readonly conversionRate: number | null
}

/** Ratios rounded to 4 places; money ratios to whole micros; null when the denominator is zero. */
export const metricsOf = (m: { impressions: number; taps: number; installs: number; spendMicros: number }): RowMetrics => ({
  impressions: m.impressions,
  taps: m.taps,
  installs: m.installs,
  spendMicros: m.spendMicros,
  avgCptMicros: m.taps > 0 ? Math.round(m.spendMicros / m.taps) : null,
  cpaMicros: m.installs > 0 ? Math.round(m.spendMicros / m.installs) : null,
  ttr: m.impressions > 0 ? Math.round((m.taps / m.impressions) * 10_000) / 10_000 : null,
  conversionRate: m.taps > 0 ? Math.round((m.installs / m.taps) * 10_000) / 10_000 : null
})

const num = (value: string | number | null | undefined): number => (value === null || value === undefined ? 0 : Number(value))
const numOrNull = (value: string | number | null | undefined): number | null => (value === null || value === undefined ? null : Number(value))

/** A ranked entity, and its spend over the window's days (int8 as text) for one that spent. */
const RankedKey = Schema.Struct({ entityKey: Schema.String })
const decodeRankedKeys = decodeRows(RankedKey)
const Spender = Schema.Struct({ ...RankedKey.fields, spend: Schema.String })
const decodeSpenders = decodeRows(Spender)

/** An entity's sums over the window (numeric as text). */
const WindowSums = Schema.Struct({
  entityKey: Schema.String,
  impressions: Schema.String,
  taps: Schema.String,
  installs: Schema.String,
  spendMicros: Schema.String
})
const decodeWindowSums = decodeRows(WindowSums)

/** A negative as the API lists it: its row without the status. */
const ListedNegative = NegativeRow.omit("status")
const listedNegativeColumns = columnsOf(ListedNegative)
const decodeListedNegatives = decodeRows(ListedNegative)

interface EntityTable {
  readonly table: string
  readonly id: string
  readonly adGroupColumn: boolean
}

const entityTables: Record<RankedLevel, EntityTable> = {
  campaigns: { table: "campaigns", id: "campaign_id", adGroupColumn: false },
  adGroups: { table: "ad_groups", id: "ad_group_id", adGroupColumn: true },
  keywords: { table: "keywords", id: "keyword_id", adGroupColumn: true },
  searchTerms: { table: "search_terms", id: "entity_key", adGroupColumn: true },
  ads: { table: "ads", id: "ad_id", adGroupColumn: true }
}

export const freshnessFor = (account: AccountRecord, window: MetricWindow, now: number): DataFreshness =>
  dataFreshness(account.lastSyncedAt, coveredDays(window, account.firstSyncedDay, account.lastSyncedDay), window.days, now)

export class Reads extends Effect.Service<Reads>()("acs/Reads", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const narrowing = (level: RankedLevel, q: ReadQuery, alias = "") => {
      const t = entityTables[level]
      const prefix = alias === "" ? "" : `${alias}.`
      const parts = [
        ...(q.campaignId !== undefined ? [sql`${sql.unsafe(`${prefix}campaign_id`)} = ${q.campaignId}`] : []),
        ...(q.adGroupId !== undefined && t.adGroupColumn ? [sql`${sql.unsafe(`${prefix}ad_group_id`)} = ${q.adGroupId}`] : [])
      ]
      return parts.length === 0 ? sql`TRUE` : sql.and(parts)
    }

    /** The ranked entity keys of the slice, and the total count of matching entities. */
    const rank = (account: AccountRecord, level: RankedLevel, q: ReadQuery, window: MetricWindow) =>
      Effect.gen(function*() {
        const t = entityTables[level]
        const table = sql.unsafe(t.table)
        const id = sql.unsafe(t.id)
        const projectId = account.projectId
        // Spend over the window = spend over the last `d` synced days, when the last synced day is before the end.
        const lag = account.lastSyncedDay === null ? window.days : daysBetween(account.lastSyncedDay, window.end)
        const d = Math.min(90, window.days - Math.max(0, lag))
        const [total, spenders] = yield* Effect.all([
          sql`SELECT count(*)::int AS n FROM ${table} WHERE project_id = ${projectId} AND ${narrowing(level, q)}`.pipe(
            Effect.flatMap(countOf)
          ),
          d <= 0 ? Effect.succeed([]) : sql`
            SELECT entity_key, spend[${d}] AS spend FROM spend_suffixes
            WHERE project_id = ${projectId} AND level = ${level} AND spend[${d}] > 0 AND ${narrowing(level, q)}
            ORDER BY spend[${d}] DESC, entity_key LIMIT ${q.limit}`.pipe(Effect.flatMap(decodeSpenders))
        ], { concurrency: 1 })
        const ranked = spenders.map((row) => row.entityKey)
        if (ranked.length < q.limit) {
          const fill = yield* sql`
            SELECT ${id} AS entity_key FROM ${table} e
            WHERE e.project_id = ${projectId} AND ${narrowing(level, q, "e")}
              AND NOT EXISTS (
                SELECT 1 FROM spend_suffixes s
                WHERE s.project_id = e.project_id AND s.level = ${level} AND s.entity_key = e.${id} AND ${d > 0 ? sql`s.spend[${d}] > 0` : sql`FALSE`})
            ORDER BY ${id} LIMIT ${q.limit - ranked.length}`.pipe(Effect.flatMap(decodeRankedKeys))
          ranked.push(...fill.map((row) => row.entityKey))
        }
        return { ranked, total }
      })

    const windowMetrics = (account: AccountRecord, level: RankedLevel, keys: ReadonlyArray<string>, window: MetricWindow) =>
      keys.length === 0
        ? Effect.succeed(new Map<string, RowMetrics>())
        : sql`
          SELECT entity_key, sum(impressions) AS impressions, sum(taps) AS taps, sum(installs) AS installs,
            sum(spend_micros) AS spend_micros
          FROM daily_metrics
          WHERE project_id = ${account.projectId} AND level = ${level} AND entity_key = ANY(${keys}::text[])
            AND day BETWEEN ${window.start} AND ${window.end}
          GROUP BY entity_key`.pipe(Effect.flatMap(decodeWindowSums), Effect.map((rows) =>
          new Map(rows.map((row) => [row.entityKey, metricsOf({
            impressions: num(row.impressions),
            taps: num(row.taps),
            installs: num(row.installs),
            spendMicros: num(row.spendMicros)
          })]))
        ))

    const zero = metricsOf({ impressions: 0, taps: 0, installs: 0, spendMicros: 0 })

    /** One ranked read: the slice in order, each row's entity fields and window metrics. */
    const ranked = <Row>(
      account: AccountRecord,
      level: RankedLevel,
      q: ReadQuery,
      load: (keys: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<{ readonly key: string; readonly row: Row }>, unknown>
    ) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const window = windowEndingYesterday(now, account.timeZone, q.days)
        const { ranked: keys, total } = yield* rank(account, level, q, window)
        const [entities, metrics] = yield* Effect.all([load(keys), windowMetrics(account, level, keys, window)])
        const byKey = new Map(entities.map((e) => [e.key, e.row]))
        const rows = keys.flatMap((key) => {
          const row = byKey.get(key)
          return row === undefined ? [] : [{ ...row, ...(metrics.get(key) ?? zero) }]
        })
        return { rows, total, truncated: rows.length < total, dataFreshness: freshnessFor(account, window, now) }
      }).pipe(Effect.orDie, Effect.withSpan(`Reads.${level}`))

    const campaigns = ({ account }: Granted<"listCampaigns">, q: ReadQuery) =>
      ranked(account, "campaigns", q, (keys) =>
        sql`SELECT ${sql.unsafe(entityRows.campaigns.columns)} FROM campaigns WHERE project_id = ${account.projectId} AND campaign_id = ANY(${keys}::text[])`.pipe(
          Effect.flatMap(entityRows.campaigns.decode),
          Effect.map((rows) =>
            rows.map((r) => ({
              key: r.campaignId,
              row: {
                campaignId: r.campaignId,
                name: r.name,
                status: r.status,
                adamId: r.adamId,
                countriesOrRegions: r.countriesOrRegions,
                dailyBudgetMicros: numOrNull(r.dailyBudgetMicros),
                bidStrategy: r.bidStrategy,
                targetCpaMicros: numOrNull(r.targetCpaMicros)
              }
            }))
          )
        ))

    const adGroups = ({ account }: Granted<"listAdGroups">, q: ReadQuery) =>
      ranked(account, "adGroups", q, (keys) =>
        sql`SELECT ${sql.unsafe(entityRows.adGroups.columns)} FROM ad_groups WHERE project_id = ${account.projectId} AND ad_group_id = ANY(${keys}::text[])`.pipe(
          Effect.flatMap(entityRows.adGroups.decode),
          Effect.map((rows) =>
            rows.map((r) => ({
              key: r.adGroupId,
              row: {
                adGroupId: r.adGroupId,
                campaignId: r.campaignId,
                name: r.name,
                status: r.status,
                defaultBidMicros: num(r.defaultBidMicros),
                cpaGoalMicros: numOrNull(r.cpaGoalMicros),
                searchMatch: r.searchMatch
              }
            }))
          )
        ))

    const keywords = ({ account }: Granted<"listKeywords">, q: ReadQuery) =>
      ranked(account, "keywords", q, (keys) =>
        sql`SELECT ${sql.unsafe(entityRows.keywords.columns)} FROM keywords WHERE project_id = ${account.projectId} AND keyword_id = ANY(${keys}::text[])`.pipe(
          Effect.flatMap(entityRows.keywords.decode),
          Effect.map((rows) =>
            rows.map((r) => ({
              key: r.keywordId,
              row: {
                keywordId: r.keywordId,
                adGroupId: r.adGroupId,
                campaignId: r.campaignId,
                text: r.text,
                matchType: r.matchType,
                status: r.status,
                bidMicros: numOrNull(r.bidMicros)
              }
            }))
          )
        ))

    /**
     * Each term with its source: the keyword as the report named it (the account's keyword row fills what a
     * report did not), Search Match, or none for the ad group's low-volume bucket.
     */
    const searchTerms = ({ account }: Granted<"listSearchTerms">, q: ReadQuery) =>
      ranked(account, "searchTerms", q, (keys) =>
        sql`
          SELECT st.entity_key, st.campaign_id, st.ad_group_id, st.keyword_id, st.text,
            coalesce(st.keyword_text, k.text) AS keyword_text, coalesce(st.match_type, k.match_type) AS match_type
          FROM search_terms st
          LEFT JOIN keywords k ON k.project_id = st.project_id AND k.keyword_id = st.keyword_id
          WHERE st.project_id = ${account.projectId} AND st.entity_key = ANY(${keys}::text[])`.pipe(
          Effect.flatMap(entityRows.searchTerms.decode),
          Effect.map((rows) =>
            rows.map((r) => ({
              key: r.entityKey,
              row: {
                text: r.text,
                lowVolume: r.text === null,
                source: r.text === null
                  ? null
                  : r.keywordId === null
                  ? { type: "searchMatch" as const }
                  : { type: "keyword" as const, keywordId: r.keywordId, text: r.keywordText, matchType: r.matchType },
                campaignId: r.campaignId,
                adGroupId: r.adGroupId,
                keywordId: r.text === null ? null : r.keywordId
              }
            }))
          )
        ))

    const ads = ({ account }: Granted<"listAds">, q: ReadQuery) =>
      ranked(account, "ads", q, (keys) =>
        sql`SELECT ${sql.unsafe(entityRows.ads.columns)} FROM ads WHERE project_id = ${account.projectId} AND ad_id = ANY(${keys}::text[])`.pipe(
          Effect.flatMap(entityRows.ads.decode),
          Effect.map((rows) =>
            rows.map((r) => ({
              key: r.adId,
              row: {
                adId: r.adId,
                adGroupId: r.adGroupId,
                campaignId: r.campaignId,
                name: r.name,
                creativeType: r.creativeType,
                status: r.status
              }
            }))
          )
        ))

    /** Negatives carry no metrics: ranked by text, then id. */
    const negativeKeywords = ({ account }: Granted<"listNegativeKeywords">, q: ReadQuery) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const window = windowEndingYesterday(now, account.timeZone, q.days)
        const where = sql.and([
          sql`project_id = ${account.projectId}`,
          ...(q.campaignId !== undefined ? [sql`campaign_id = ${q.campaignId}`] : []),
          ...(q.adGroupId !== undefined ? [sql`ad_group_id = ${q.adGroupId}`] : [])
        ])
        const [rows, total] = yield* Effect.all([
          sql`
            SELECT ${sql.unsafe(listedNegativeColumns)} FROM negative_keywords
            WHERE ${where} ORDER BY text, negative_keyword_id LIMIT ${q.limit}`.pipe(Effect.flatMap(decodeListedNegatives)),
          sql`SELECT count(*)::int AS n FROM negative_keywords WHERE ${where}`.pipe(Effect.flatMap(countOf))
        ])
        return { rows, total, truncated: rows.length < total, dataFreshness: freshnessFor(account, window, now) }
      }).pipe(Effect.orDie, Effect.withSpan("Reads.negativeKeywords"))

    return { campaigns, adGroups, keywords, searchTerms, ads, negativeKeywords } as const
  })
}) {}
