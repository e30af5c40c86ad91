/**
 * The warehouse as local validation and the policy see it: one account's entities by id or name, and the
 * 30-day facts the auto-apply rules need. Queries run on the caller's connection, so inside the proposal
 * transaction they see what that transaction sees.
 */
import type {
  UpstreamAd,
  UpstreamAdGroup,
  UpstreamCampaign,
  UpstreamKeyword,
  UpstreamNegativeKeyword
} from "@acs/upstream/Upstream"
import type { Evidence, GuardrailsSettings } from "@acs/domain/Guardrails"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import type { AccountRecord } from "../../accounts/AccountRecord.ts"
import { decodeRows } from "../../db/Rows.ts"
import { decodeTargets, TargetsRow, targetsColumns } from "../../policy/Targets.ts"
import { readGuardrails } from "../../policy/Guardrails.ts"
import { type AdGroupRow, type AdRow, type CampaignRow, entityRows, type KeywordRow, type NegativeRow } from "../../warehouse/EntityRows.ts"
import { windowEndingYesterday } from "../../warehouse/Window.ts"
import type { PolicyFacts } from "./PolicyFacts.ts"

export interface WarehouseView {
  readonly account: AccountRecord
  readonly campaign: (campaignId: string) => Effect.Effect<UpstreamCampaign | undefined>
  readonly campaignNamed: (name: string) => Effect.Effect<UpstreamCampaign | undefined>
  readonly adGroup: (adGroupId: string) => Effect.Effect<UpstreamAdGroup | undefined>
  readonly adGroupNamed: (campaignId: string, name: string) => Effect.Effect<UpstreamAdGroup | undefined>
  readonly adGroupsOf: (campaignId: string) => Effect.Effect<ReadonlyArray<UpstreamAdGroup>>
  readonly keywords: (keywordIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<UpstreamKeyword>>
  readonly keywordsOf: (adGroupId: string) => Effect.Effect<ReadonlyArray<UpstreamKeyword>>
  readonly negativeKeywords: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<UpstreamNegativeKeyword>>
  /** Negatives of the campaign (adGroupId null: campaign level only) or of one ad group. */
  readonly negativesOf: (campaignId: string, adGroupId: string | null) => Effect.Effect<ReadonlyArray<UpstreamNegativeKeyword>>
  readonly ad: (adId: string) => Effect.Effect<UpstreamAd | undefined>
  /**
   * Per ad group of `negated` (pairs of an ad group and a search term's text), its delivery over the policy's 30 days
   * and the part of it the given terms carry there (their search-term rows, any matched keyword, text compared
   * case-insensitively): what EXACT negatives on those texts would remove.
   */
  readonly searchTermDelivery: (negated: ReadonlyArray<{ readonly adGroupId: string; readonly text: string }>) => Effect.Effect<SearchTermDelivery>
  /** The account's guardrails, read now. */
  readonly guardrails: Effect.Effect<GuardrailsSettings>
}

/** Spend (micros), taps and installs. */
export interface DeliveryTotals {
  readonly spendMicros: number
  readonly taps: number
  readonly installs: number
}

export interface SearchTermDelivery {
  /** The window, complete days ending yesterday in the account's time zone. */
  readonly start: string
  readonly end: string
  readonly adGroups: ReadonlyArray<{ readonly adGroupId: string; readonly total: DeliveryTotals; readonly removed: DeliveryTotals }>
}

const DeliveryRow = Schema.Struct({
  adGroupId: Schema.String,
  spend: Schema.NumberFromString,
  taps: Schema.NumberFromString,
  installs: Schema.NumberFromString,
  removedSpend: Schema.NumberFromString,
  removedTaps: Schema.NumberFromString,
  removedInstalls: Schema.NumberFromString
})
const decodeDelivery = decodeRows(DeliveryRow)


const micros = (value: string | null): number | null => (value === null ? null : Number(value))

export const toCampaign = (r: CampaignRow): UpstreamCampaign => ({
  campaignId: r.campaignId,
  name: r.name,
  adamId: r.adamId,
  countriesOrRegions: r.countriesOrRegions,
  dailyBudgetMicros: micros(r.dailyBudgetMicros),
  status: r.status,
  bidStrategy: r.bidStrategy,
  targetCpaMicros: micros(r.targetCpaMicros),
  deleted: false
})

const toAdGroup = (r: AdGroupRow): UpstreamAdGroup => ({
  adGroupId: r.adGroupId,
  campaignId: r.campaignId,
  name: r.name,
  status: r.status,
  defaultBidMicros: Number(r.defaultBidMicros),
  cpaGoalMicros: micros(r.cpaGoalMicros),
  searchMatch: r.searchMatch,
  deleted: false
})

export const toKeyword = (r: KeywordRow): UpstreamKeyword => ({
  keywordId: r.keywordId,
  adGroupId: r.adGroupId,
  campaignId: r.campaignId,
  text: r.text,
  matchType: r.matchType,
  status: r.status,
  bidMicros: micros(r.bidMicros),
  deleted: false
})

const toNegative = (r: NegativeRow): UpstreamNegativeKeyword => ({ ...r, deleted: false })
const toAd = (r: AdRow): UpstreamAd => ({ ...r, deleted: false })

/**
 * A campaign row as one JSON value with CampaignRow's names (for a statement that reads it beside other
 * things: the apply's first read); `alias` names the campaigns row, null when there is none.
 */
export const campaignJson = (sql: SqlClient.SqlClient, alias: string) => {
  const c = (column: string) => sql.unsafe(`${alias}.${column}`)
  return sql`CASE WHEN ${c("campaign_id")} IS NULL THEN NULL ELSE json_build_object('campaignId', ${c("campaign_id")}, 'name', ${c("name")},
    'adamId', ${c("adam_id")}, 'countriesOrRegions', ${c("countries_or_regions")}, 'dailyBudgetMicros', ${c("daily_budget_micros")}::text,
    'status', ${c("status")}, 'bidStrategy', ${c("bid_strategy")}, 'targetCpaMicros', ${c("target_cpa_micros")}::text) END`
}

export const warehouseView = (account: AccountRecord) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const projectId = account.projectId
    const { adGroups, ads, campaigns, keywords, negatives } = entityRows
    const campaignColumns = sql.unsafe(campaigns.columns)
    const view: WarehouseView = {
      account,
      campaign: (campaignId) =>
        sql`/* prepared */ SELECT ${campaignColumns} FROM campaigns WHERE project_id = ${projectId} AND campaign_id = ${campaignId}`
          .pipe(Effect.orDie, Effect.flatMap(campaigns.decode), Effect.map((rows) => rows[0] === undefined ? undefined : toCampaign(rows[0]))),
      campaignNamed: (name) =>
        sql`SELECT ${campaignColumns} FROM campaigns WHERE project_id = ${projectId} AND lower(name) = lower(${name})
          LIMIT 1`.pipe(Effect.orDie, Effect.flatMap(campaigns.decode), Effect.map((rows) => rows[0] === undefined ? undefined : toCampaign(rows[0]))),
      adGroup: (adGroupId) =>
        sql`SELECT ${sql.unsafe(adGroups.columns)} FROM ad_groups WHERE project_id = ${projectId} AND ad_group_id = ${adGroupId}`
          .pipe(Effect.orDie, Effect.flatMap(adGroups.decode), Effect.map((rows) => rows[0] === undefined ? undefined : toAdGroup(rows[0]))),
      adGroupNamed: (campaignId, name) =>
        sql`SELECT ${sql.unsafe(adGroups.columns)} FROM ad_groups WHERE project_id = ${projectId} AND campaign_id = ${campaignId}
          AND lower(name) = lower(${name}) LIMIT 1`
          .pipe(Effect.orDie, Effect.flatMap(adGroups.decode), Effect.map((rows) => rows[0] === undefined ? undefined : toAdGroup(rows[0]))),
      adGroupsOf: (campaignId) =>
        sql`SELECT ${sql.unsafe(adGroups.columns)} FROM ad_groups WHERE project_id = ${projectId} AND campaign_id = ${campaignId}
          ORDER BY ad_group_id`.pipe(Effect.orDie, Effect.flatMap(adGroups.decode), Effect.map((rows) => rows.map(toAdGroup))),
      keywords: (keywordIds) =>
        sql`SELECT ${sql.unsafe(keywords.columns)} FROM keywords WHERE project_id = ${projectId} AND keyword_id = ANY(${keywordIds}::text[])`
          .pipe(Effect.orDie, Effect.flatMap(keywords.decode), Effect.map((rows) => rows.map(toKeyword))),
      keywordsOf: (adGroupId) =>
        sql`SELECT ${sql.unsafe(keywords.columns)} FROM keywords WHERE project_id = ${projectId} AND ad_group_id = ${adGroupId}
          ORDER BY keyword_id`.pipe(Effect.orDie, Effect.flatMap(keywords.decode), Effect.map((rows) => rows.map(toKeyword))),
      negativeKeywords: (ids) =>
        sql`SELECT ${sql.unsafe(negatives.columns)} FROM negative_keywords WHERE project_id = ${projectId}
          AND negative_keyword_id = ANY(${ids}::text[])`.pipe(Effect.orDie, Effect.flatMap(negatives.decode), Effect.map((rows) => rows.map(toNegative))),
      negativesOf: (campaignId, adGroupId) =>
        (adGroupId === null
          ? sql`SELECT ${sql.unsafe(negatives.columns)} FROM negative_keywords WHERE project_id = ${projectId} AND campaign_id = ${campaignId}
              AND ad_group_id IS NULL ORDER BY negative_keyword_id`
          : sql`SELECT ${sql.unsafe(negatives.columns)} FROM negative_keywords WHERE project_id = ${projectId} AND ad_group_id = ${adGroupId}
              ORDER BY negative_keyword_id`).pipe(Effect.orDie, Effect.flatMap(negatives.decode), Effect.map((rows) => rows.map(toNegative))),
      ad: (adId) =>
        sql`SELECT ${sql.unsafe(ads.columns)} FROM ads WHERE project_id = ${projectId} AND ad_id = ${adId}`
          .pipe(Effect.orDie, Effect.flatMap(ads.decode), Effect.map((rows) => rows[0] === undefined ? undefined : toAd(rows[0]))),
      searchTermDelivery: (negated) =>
        Effect.gen(function*() {
          const window = policyWindow(yield* Clock.currentTimeMillis, account.timeZone)
          const rows = negated.length === 0 ? [] : yield* sql`
            WITH negated AS (
              SELECT DISTINCT n.ad_group_id, lower(n.text) AS text
              FROM unnest(${negated.map((n) => n.adGroupId)}::text[], ${negated.map((n) => n.text)}::text[]) AS n(ad_group_id, text)),
            totals AS (
              SELECT g.ad_group_id, coalesce(sum(m.spend_micros), 0) AS spend, coalesce(sum(m.taps), 0) AS taps,
                coalesce(sum(m.installs), 0) AS installs
              FROM (SELECT DISTINCT ad_group_id FROM negated) g
              LEFT JOIN daily_metrics m ON m.project_id = ${projectId} AND m.level = 'adGroups' AND m.entity_key = g.ad_group_id
                AND m.day BETWEEN ${window.start}::date AND ${window.end}::date
              GROUP BY g.ad_group_id),
            removed AS (
              SELECT s.ad_group_id, sum(m.spend_micros) AS spend, sum(m.taps) AS taps, sum(m.installs) AS installs
              FROM search_terms s
              JOIN negated n ON n.ad_group_id = s.ad_group_id AND n.text = lower(s.text)
              JOIN daily_metrics m ON m.project_id = s.project_id AND m.level = 'searchTerms' AND m.entity_key = s.entity_key
                AND m.day BETWEEN ${window.start}::date AND ${window.end}::date
              WHERE s.project_id = ${projectId} AND s.ad_group_id IN (SELECT ad_group_id FROM negated)
              GROUP BY s.ad_group_id)
            SELECT t.ad_group_id, t.spend::text AS spend, t.taps::text AS taps, t.installs::text AS installs,
              coalesce(r.spend, 0)::text AS removed_spend, coalesce(r.taps, 0)::text AS removed_taps,
              coalesce(r.installs, 0)::text AS removed_installs
            FROM totals t LEFT JOIN removed r USING (ad_group_id) ORDER BY t.ad_group_id`.pipe(Effect.orDie, Effect.flatMap(decodeDelivery))
          return {
            start: window.start,
            end: window.end,
            adGroups: rows.map((r) => ({
              adGroupId: r.adGroupId,
              total: { spendMicros: r.spend, taps: r.taps, installs: r.installs },
              removed: { spendMicros: r.removedSpend, taps: r.removedTaps, installs: r.removedInstalls }
            }))
          } satisfies SearchTermDelivery
        }),
      guardrails: readGuardrails(sql, projectId)
    }
    return view
  })

const POLICY_DAYS = 30

/** Sums over the window (numeric as text; null when no day matched) and the days with a row. */
const Totals = Schema.Struct({
  spend: Schema.NullOr(Schema.String),
  taps: Schema.NullOr(Schema.String),
  installs: Schema.NullOr(Schema.String),
  days: Schema.Number
})
const decodeTotals = decodeRows(Totals)

/**
 * The policy's window, kept per time zone for the quarter hour: every proposal needs it, and a day starts on
 * a quarter hour in every time zone, so the window cannot change within one.
 */
const windows = new Map<string, { readonly quarter: number; readonly window: ReturnType<typeof windowEndingYesterday> }>()
const QUARTER_HOUR_MS = 15 * 60_000

const policyWindow = (now: number, timeZone: string) => {
  const quarter = Math.floor(now / QUARTER_HOUR_MS)
  const kept = windows.get(timeZone)
  if (kept !== undefined && kept.quarter === quarter) return kept.window
  const window = windowEndingYesterday(now, timeZone, POLICY_DAYS)
  windows.set(timeZone, { quarter, window })
  return window
}

/** An account's target band as the `targets` table holds it (policy/Targets.ts): null when the operator set none. */
export type TargetBand = typeof TargetsRow.Type

/** The account's target band, read on the caller's connection. */
export const readTargetBand = (projectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`/* prepared */ SELECT ${sql.unsafe(targetsColumns)} FROM targets WHERE project_id = ${projectId}`.pipe(
      Effect.orDie,
      Effect.flatMap(decodeTargets),
      Effect.map((rows): TargetBand | null => rows[0] ?? null)
    ))

/** The policy's 30-day facts: complete days ending yesterday in the account's time zone. */
export const policyFacts = (account: AccountRecord) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.flatMap(readTargetBand(account.projectId), (band) => policyFactsWith(account, band, minimumEvidenceOf(sql, account.projectId))))

/** The account's evidence gate, read from its guardrails when a rule asks for it. */
export const minimumEvidenceOf = (sql: SqlClient.SqlClient, projectId: string) =>
  Effect.map(readGuardrails(sql, projectId), (guardrails) => guardrails.evidence)

/**
 * The policy's facts with the account's target band already read and its evidence gate to read (the proposal
 * path reads both from a cache).
 */
export const policyFactsWith = (account: AccountRecord, band: TargetBand | null, minimumEvidence: Effect.Effect<Evidence>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const window = policyWindow(yield* Clock.currentTimeMillis, account.timeZone)
    const totals = (campaignId: string | null) =>
      sql`/* prepared */
        SELECT sum(spend_micros) AS spend, sum(taps) AS taps, sum(installs) AS installs, count(DISTINCT day)::int AS days FROM daily_metrics
        WHERE project_id = ${account.projectId} AND level = 'campaigns'
          AND day BETWEEN ${window.start}::date AND ${window.end}::date
          ${campaignId === null ? sql`` : sql`AND entity_key = ${campaignId}`}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeTotals),
        Effect.map((rows) => rows[0] ?? { spend: null, taps: null, installs: null, days: 0 })
      )
    // A rule may ask for a campaign's CPA and its evidence: one read of its totals answers both.
    const campaignTotals = new Map<string, Effect.Effect<Effect.Effect.Success<ReturnType<typeof totals>>>>()
    const totalsOf = (campaignId: string) =>
      Effect.suspend(() => {
        const known = campaignTotals.get(campaignId)
        if (known !== undefined) return known
        return Effect.flatMap(Effect.cached(totals(campaignId)), (cached) => {
          campaignTotals.set(campaignId, cached)
          return cached
        })
      })
    const ratio = (numerator: string | null, denominator: string | null) =>
      numerator === null || denominator === null || Number(denominator) === 0
        ? null
        : Math.round(Number(numerator) / Number(denominator))
    const facts: PolicyFacts = {
      campaignCpa30d: (campaignId) => totalsOf(campaignId).pipe(Effect.map((t) => ratio(t.spend, t.installs))),
      campaignEvidence30d: (campaignId) => totalsOf(campaignId).pipe(Effect.map((t) => ({ days: t.days, installs: Number(t.installs ?? 0) }))),
      accountAvgCpt30d: totals(null).pipe(Effect.map((t) => ratio(t.spend, t.taps))),
      cpaBand: (campaignId) => Effect.succeed(band?.campaigns[campaignId] ?? band?.cpaBand ?? null),
      minimumEvidence
    }
    return facts
  })
