/**
 * Daily metrics into the sync's tables: every report of the window, paged and summed per entity and day,
 * written in a few INSERTs of column arrays, with the search terms and (when the window holds their days)
 * the spend suffixes beside them.
 */
import type { ReportLevel, ReportRow, UpstreamCampaign, UpstreamClient } from "@acs/upstream/Upstream"
import type { SqlClient } from "@effect/sql"
import { Clock, Effect, Ref } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import type { Tables } from "./GenerationTables.ts"
import {
  arrayLiteral,
  entityKeyOf,
  mergePeriods,
  type ReportEntity,
  termSourceOf,
  textElement,
  type WindowDays,
  windowDaysOf
} from "./ReportRows.ts"
import { ownerOf, type SuffixDays, suffixElement, type SuffixOwners } from "./SpendSuffixes.ts"
import { CAMPAIGN_CONCURRENCY } from "./SyncEntities.ts"
import { reportStart, type SyncPlan } from "./SyncPlan.ts"
import { daysBetween, MAX_DAYS } from "./Window.ts"

const REPORT_PAGE = 1000
/** Daily rows per INSERT: large enough that statement overhead vanishes, small enough to bound the arrays. */
const STAGE_CHUNK = 20_000
/** Suffix rows per INSERT: each carries a 90-element array. */
const SUFFIX_CHUNK = 5_000

/** How far a running sync got: what its heartbeat reports. */
export interface Progress {
  readonly step: string
  readonly done: number
  readonly total: number
  readonly rows: number
}

export const makeStaging = (sql: SqlClient.SqlClient) => {
  /**
   * One report's entities into the sync's tables, a few INSERTs of column arrays each: their daily rows (zero
   * days left out), for search terms the term of each with a written row, and, when `suffixDays` is given,
   * the spend suffix of each that spent, whose owners are noted in `suffixOwners` (checked against the
   * entities once they are all read). Returns the number of daily rows written.
   */
  const stage = (
    tables: Tables,
    projectId: string,
    level: ReportLevel,
    byEntity: ReadonlyMap<string, ReportEntity>,
    window: WindowDays,
    suffixDays: SuffixDays | undefined,
    suffixOwners: Map<string, string>
  ) =>
    Effect.gen(function*() {
      const keys: Array<string> = []
      const days: Array<number> = []
      const impressions: Array<number> = []
      const taps: Array<number> = []
      const installs: Array<number> = []
      const spend: Array<number> = []
      const flush = Effect.suspend(() =>
        sql`
          INSERT INTO ${sql(tables.metrics)} (project_id, level, entity_key, day, impressions, taps, installs, spend_micros)
          SELECT ${projectId}, ${level}, k, ${window.start}::date + d, i, t, n, s
          FROM unnest(${arrayLiteral(keys)}::text[], ${arrayLiteral(days)}::int4[], ${arrayLiteral(impressions)}::int8[],
            ${arrayLiteral(taps)}::int8[], ${arrayLiteral(installs)}::int8[], ${arrayLiteral(spend)}::int8[]) AS r(k, d, i, t, n, s)`
      ).pipe(Effect.zipRight(Effect.sync(() => {
        for (const column of [keys, days, impressions, taps, installs, spend]) column.length = 0
      })))
      const suffixKeys: Array<string> = []
      const suffixCampaigns: Array<string> = []
      const suffixAdGroups: Array<string | null> = []
      const suffixes: Array<string> = []
      const flushSuffixes = Effect.suspend(() =>
        sql`
          INSERT INTO ${sql(tables.suffixes)} (project_id, level, entity_key, campaign_id, ad_group_id, through_day, spend)
          SELECT ${projectId}, ${level}, k, c, g, ${suffixDays?.through ?? null}::date, s::int8[]
          FROM unnest(${suffixKeys}::text[], ${suffixCampaigns}::text[], ${suffixAdGroups}::text[], ${arrayLiteral(suffixes)}::text[])
            AS t(k, c, g, s)`
      ).pipe(Effect.zipRight(Effect.sync(() => {
        for (const column of [suffixKeys, suffixCampaigns, suffixAdGroups, suffixes]) column.length = 0
      })))
      const termKeys: Array<string> = []
      const termRows: Array<ReportRow> = []
      const byAge = new Array<number>(MAX_DAYS)
      let staged = 0
      for (const [key, { periods, row }] of byEntity) {
        const before = staged
        const element = textElement(key)
        for (const p of periods) {
          if (p.impressions === 0 && p.taps === 0 && p.installs === 0 && p.spendMicros === 0) continue
          keys.push(element)
          days.push(window.offsets.get(p.date) ?? daysBetween(window.start, p.date))
          impressions.push(p.impressions)
          taps.push(p.taps)
          installs.push(p.installs)
          spend.push(p.spendMicros)
          staged++
        }
        // A term without a written row would be retired at once: it is not kept.
        if (level === "searchTerms" && staged > before) {
          termKeys.push(key)
          termRows.push(row)
        }
        const suffix = suffixDays === undefined ? undefined : suffixElement(suffixDays, periods, byAge)
        if (suffix !== undefined) {
          const adGroupId = level === "campaigns" ? null : row.adGroupId
          suffixKeys.push(key)
          suffixCampaigns.push(row.campaignId)
          suffixAdGroups.push(adGroupId)
          suffixes.push(suffix)
          suffixOwners.set(key, ownerOf(row.campaignId, adGroupId))
          if (suffixKeys.length >= SUFFIX_CHUNK) yield* flushSuffixes
        }
        if (keys.length >= STAGE_CHUNK) yield* flush
      }
      if (keys.length > 0) yield* flush
      if (suffixKeys.length > 0) yield* flushSuffixes
      if (termKeys.length > 0) {
        const sources = termRows.map(termSourceOf)
        yield* sql`
          INSERT INTO ${sql(tables.terms)} (project_id, entity_key, campaign_id, ad_group_id, keyword_id, text, keyword_text, match_type)
          SELECT ${projectId}, * FROM unnest(${termKeys}::text[], ${termRows.map((r) => r.campaignId)}::text[],
            ${termRows.map((r) => r.adGroupId)}::text[], ${sources.map((s) => s.keywordId)}::text[],
            ${termRows.map((r) => r.searchTerm)}::text[], ${sources.map((s) => s.keywordText)}::text[],
            ${sources.map((s) => s.matchType)}::text[])`
      }
      return staged
    }).pipe(Effect.orDie)

  /** Every page of one report, summed per entity and day (the key of the sync's table), then written. */
  const stageReport = (
    client: UpstreamClient,
    tables: Tables,
    account: AccountRecord,
    plan: SyncPlan,
    days: WindowDays,
    level: ReportLevel,
    campaignId: string | undefined,
    suffixDays: SuffixDays | undefined,
    suffixOwners: Map<string, string>
  ) =>
    Effect.gen(function*() {
      const byEntity = new Map<string, ReportEntity>()
      const startDate = reportStart(plan, yield* Clock.currentTimeMillis, account.timeZone)
      for (let offset = 0;; offset += REPORT_PAGE) {
        const page = yield* client.report(account.upstreamAccountId, {
          level,
          ...(campaignId !== undefined ? { campaignId } : {}),
          startDate,
          endDate: plan.windowEnd,
          granularity: "DAILY",
          offset,
          limit: REPORT_PAGE
        })
        for (const row of page.rows) {
          const key = entityKeyOf(level, row)
          if (key === undefined) continue
          const seen = byEntity.get(key)
          byEntity.set(key, seen === undefined ? { row, periods: row.periods } : { row: seen.row, periods: mergePeriods(seen.periods, row.periods) })
        }
        if (page.rows.length < REPORT_PAGE || offset + page.rows.length >= page.totalResults) break
      }
      return yield* stage(tables, account.projectId, level, byEntity, days, suffixDays, suffixOwners)
    })

  /**
   * Every report of the window into the sync's tables; returns the number of daily rows written. Each
   * entity's rows come from one report (a search term's key holds its ad group, so its campaign's).
   */
  const stageMetrics = (
    client: UpstreamClient,
    tables: Tables,
    account: AccountRecord,
    plan: SyncPlan,
    campaigns: ReadonlyArray<UpstreamCampaign>,
    suffixDays: SuffixDays | undefined,
    suffixOwners: SuffixOwners,
    progress: Ref.Ref<Progress>
  ) =>
    Effect.gen(function*() {
      const count = (rows: number) => Ref.update(progress, (p) => ({ ...p, done: p.done + 1, rows: p.rows + rows }))
      // The window's days once for every report (a map of up to 90 dates, built per report it cost the sync ~5 %).
      const days = windowDaysOf(plan)
      yield* stageReport(client, tables, account, plan, days, "campaigns", undefined, suffixDays, suffixOwners.campaigns).pipe(
        Effect.flatMap(count)
      )
      yield* Effect.forEach(campaigns, (campaign) =>
        Effect.forEach(
          ["adGroups", "keywords", "searchTerms", "ads"] as const,
          (level) => stageReport(client, tables, account, plan, days, level, campaign.campaignId, suffixDays, suffixOwners[level])
        ).pipe(Effect.flatMap((rows) => count(rows.reduce((a, b) => a + b, 0)))), { concurrency: CAMPAIGN_CONCURRENCY, discard: true })
      return (yield* Ref.get(progress)).rows
    })

  return { stageMetrics } as const
}
