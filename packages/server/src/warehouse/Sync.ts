/**
 * Sync: upstream → warehouse for one account. Entities are read whole; daily metrics per level are read
 * for the window (90 days on the first sync, then from a few days before the last synced day, because
 * the platform restates recent days) and staged under the sync's id. One short transaction then swaps
 * the staged copy in and rebuilds the spend suffixes; until it commits readers see the previous copy, and
 * a failed sync leaves it untouched.
 */
import { AccountNotFound } from "@acs/domain/Errors"
import type { ReportLevel, ReportRow, UpstreamClient } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Cause, Clock, Config, Duration, Effect, Fiber, Ref, Schedule } from "effect"
import type { AccountRecord } from "../accounts/Accounts.ts"
import { SyncRuns, type SyncRow } from "./SyncRuns.ts"
import { addDays, dateIn, MAX_DAYS } from "./Window.ts"

/** Recent days re-read on every sync because the platform restates them. */
export const RESTATED_DAYS = 3
/** Daily rows older than this many days before the last synced day are dropped. */
export const RETAINED_DAYS = 120
const REPORT_PAGE = 1000
const CAMPAIGN_CONCURRENCY = 3

interface StagedRow {
  readonly level: ReportLevel
  readonly entityKey: string
  readonly campaignId: string
  readonly adGroupId: string | null
  readonly keywordId: string | null
  readonly searchTerm: string | null
  readonly day: string
  readonly impressions: number
  readonly taps: number
  readonly installs: number
  readonly spendMicros: number
}

/** Unambiguous for any text, and for the low-volume terms the platform reports without one (null). */
export const searchTermKey = (adGroupId: string, keywordId: string | null, term: string | null) =>
  JSON.stringify([adGroupId, keywordId, term])

const entityKeyOf = (level: ReportLevel, row: ReportRow): string | undefined => {
  switch (level) {
    case "campaigns":
      return row.campaignId
    case "adGroups":
      return row.adGroupId ?? undefined
    case "keywords":
      return row.keywordId ?? undefined
    case "ads":
      return row.adId ?? undefined
    case "searchTerms":
      return row.adGroupId === null ? undefined : searchTermKey(row.adGroupId, row.keywordId, row.searchTerm)
  }
}

const stagedRows = (level: ReportLevel, rows: ReadonlyArray<ReportRow>): Array<StagedRow> => {
  const out: Array<StagedRow> = []
  for (const row of rows) {
    const entityKey = entityKeyOf(level, row)
    if (entityKey === undefined) continue
    for (const period of row.periods) {
      if (period.impressions === 0 && period.taps === 0 && period.installs === 0 && period.spendMicros === 0) continue
      out.push({
        level,
        entityKey,
        campaignId: row.campaignId,
        adGroupId: row.adGroupId,
        keywordId: row.keywordId,
        searchTerm: row.searchTerm,
        day: period.date,
        impressions: period.impressions,
        taps: period.taps,
        installs: period.installs,
        spendMicros: period.spendMicros
      })
    }
  }
  return out
}

export interface SyncPlan {
  readonly windowStart: string
  readonly windowEnd: string
}

/**
 * The window to (re)read: `initialDays` (at most 90) on the first sync, then from a few days before the
 * last synced day, never reaching back further than 90 days.
 */
export const planWindow = (account: AccountRecord, now: number, initialDays = MAX_DAYS): SyncPlan => {
  const windowEnd = addDays(dateIn(now, account.timeZone), -1)
  const earliest = addDays(windowEnd, -(MAX_DAYS - 1))
  const resume = account.lastSyncedDay === null
    ? addDays(windowEnd, -(Math.min(MAX_DAYS, Math.max(1, initialDays)) - 1))
    : addDays(account.lastSyncedDay, -(RESTATED_DAYS - 1))
  return { windowStart: resume > earliest ? resume : earliest, windowEnd }
}

/** How many days the first sync of an account reads (1–90); later syncs keep the history growing. */
export const InitialDays = Config.integer("SYNC_INITIAL_DAYS").pipe(Config.withDefault(MAX_DAYS))

export const makeSync = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const runs = yield* SyncRuns
  const initialDays = yield* InitialDays

  const stage = (syncId: string, rows: ReadonlyArray<StagedRow>) =>
    rows.length === 0 ? Effect.void : sql`
      INSERT INTO staged_metrics (sync_id, level, entity_key, campaign_id, ad_group_id, keyword_id, search_term, day,
        impressions, taps, installs, spend_micros)
      SELECT ${syncId}, * FROM unnest(
        ${rows.map((r) => r.level)}::text[], ${rows.map((r) => r.entityKey)}::text[], ${rows.map((r) => r.campaignId)}::text[],
        ${rows.map((r) => r.adGroupId)}::text[], ${rows.map((r) => r.keywordId)}::text[], ${rows.map((r) => r.searchTerm)}::text[],
        ${rows.map((r) => r.day)}::date[], ${rows.map((r) => r.impressions)}::int8[], ${rows.map((r) => r.taps)}::int8[],
        ${rows.map((r) => r.installs)}::int8[], ${rows.map((r) => r.spendMicros)}::int8[])`.pipe(Effect.asVoid, Effect.orDie)

  /** Every page of one report, staged as it arrives. Returns the number of daily rows staged. */
  const stageReport = (
    client: UpstreamClient,
    syncId: string,
    account: AccountRecord,
    plan: SyncPlan,
    level: ReportLevel,
    campaignId: string | undefined
  ) =>
    Effect.gen(function*() {
      let staged = 0
      for (let offset = 0;; offset += REPORT_PAGE) {
        const page = yield* client.report(account.upstreamAccountId, {
          level,
          ...(campaignId !== undefined ? { campaignId } : {}),
          startDate: plan.windowStart,
          endDate: plan.windowEnd,
          granularity: "DAILY",
          offset,
          limit: REPORT_PAGE
        })
        const rows = stagedRows(level, page.rows)
        yield* stage(syncId, rows)
        staged += rows.length
        if (page.rows.length < REPORT_PAGE || offset + page.rows.length >= page.totalResults) return staged
      }
    })

  const readEntities = (client: UpstreamClient, accountId: string) =>
    Effect.gen(function*() {
      const campaigns = yield* client.campaigns(accountId)
      const perCampaign = yield* Effect.forEach(campaigns, (campaign) =>
        Effect.gen(function*() {
          const adGroups = yield* client.adGroups(accountId, campaign.campaignId)
          const negatives = yield* client.negativeKeywords(accountId, campaign.campaignId)
          const children = yield* Effect.forEach(adGroups, (adGroup) =>
            Effect.all({
              keywords: client.keywords(accountId, campaign.campaignId, adGroup.adGroupId),
              ads: client.ads(accountId, campaign.campaignId, adGroup.adGroupId)
            }), { concurrency: 4 })
          return {
            adGroups,
            negatives,
            keywords: children.flatMap((c) => c.keywords),
            ads: children.flatMap((c) => c.ads)
          }
        }), { concurrency: CAMPAIGN_CONCURRENCY })
      return {
        campaigns,
        adGroups: perCampaign.flatMap((c) => c.adGroups),
        negatives: perCampaign.flatMap((c) => c.negatives),
        keywords: perCampaign.flatMap((c) => c.keywords),
        ads: perCampaign.flatMap((c) => c.ads)
      }
    })

  type Entities = Effect.Effect.Success<ReturnType<typeof readEntities>> & { readonly readOnly: boolean }

  const replaceEntities = (projectId: string, e: Entities) =>
    Effect.gen(function*() {
      yield* sql`DELETE FROM campaigns WHERE project_id = ${projectId}`
      yield* sql`
        INSERT INTO campaigns (project_id, campaign_id, name, adam_id, countries_or_regions, daily_budget_micros, status,
          bid_strategy, target_cpa_micros)
        SELECT ${projectId}, id, name, adam, countries::jsonb, budget, status, strategy, target FROM unnest(
          ${e.campaigns.map((c) => c.campaignId)}::text[], ${e.campaigns.map((c) => c.name)}::text[],
          ${e.campaigns.map((c) => c.adamId)}::text[], ${e.campaigns.map((c) => JSON.stringify(c.countriesOrRegions))}::text[],
          ${e.campaigns.map((c) => c.dailyBudgetMicros)}::int8[], ${e.campaigns.map((c) => c.status)}::text[],
          ${e.campaigns.map((c) => c.bidStrategy)}::text[], ${e.campaigns.map((c) => c.targetCpaMicros)}::int8[]
        ) AS t(id, name, adam, countries, budget, status, strategy, target)`
      yield* sql`DELETE FROM ad_groups WHERE project_id = ${projectId}`
      yield* sql`
        INSERT INTO ad_groups (project_id, ad_group_id, campaign_id, name, status, default_bid_micros, cpa_goal_micros, search_match)
        SELECT ${projectId}, * FROM unnest(
          ${e.adGroups.map((a) => a.adGroupId)}::text[], ${e.adGroups.map((a) => a.campaignId)}::text[],
          ${e.adGroups.map((a) => a.name)}::text[], ${e.adGroups.map((a) => a.status)}::text[],
          ${e.adGroups.map((a) => a.defaultBidMicros)}::int8[], ${e.adGroups.map((a) => a.cpaGoalMicros)}::int8[],
          ${e.adGroups.map((a) => a.searchMatch)}::boolean[])`
      yield* sql`DELETE FROM keywords WHERE project_id = ${projectId}`
      yield* sql`
        INSERT INTO keywords (project_id, keyword_id, ad_group_id, campaign_id, text, match_type, status, bid_micros)
        SELECT ${projectId}, * FROM unnest(
          ${e.keywords.map((k) => k.keywordId)}::text[], ${e.keywords.map((k) => k.adGroupId)}::text[],
          ${e.keywords.map((k) => k.campaignId)}::text[], ${e.keywords.map((k) => k.text)}::text[],
          ${e.keywords.map((k) => k.matchType)}::text[], ${e.keywords.map((k) => k.status)}::text[],
          ${e.keywords.map((k) => k.bidMicros)}::int8[])`
      yield* sql`DELETE FROM negative_keywords WHERE project_id = ${projectId}`
      yield* sql`
        INSERT INTO negative_keywords (project_id, negative_keyword_id, campaign_id, ad_group_id, text, match_type, status)
        SELECT ${projectId}, * FROM unnest(
          ${e.negatives.map((n) => n.negativeKeywordId)}::text[], ${e.negatives.map((n) => n.campaignId)}::text[],
          ${e.negatives.map((n) => n.adGroupId)}::text[], ${e.negatives.map((n) => n.text)}::text[],
          ${e.negatives.map((n) => n.matchType)}::text[], ${e.negatives.map((n) => n.status)}::text[])`
      yield* sql`DELETE FROM ads WHERE project_id = ${projectId}`
      yield* sql`
        INSERT INTO ads (project_id, ad_id, ad_group_id, campaign_id, name, creative_type, status)
        SELECT ${projectId}, * FROM unnest(
          ${e.ads.map((a) => a.adId)}::text[], ${e.ads.map((a) => a.adGroupId)}::text[], ${e.ads.map((a) => a.campaignId)}::text[],
          ${e.ads.map((a) => a.name)}::text[], ${e.ads.map((a) => a.creativeType)}::text[], ${e.ads.map((a) => a.status)}::text[])`
    })

  /** Per level, which campaign and ad group each entity belongs to: what narrowing filters on. */
  const owners = (level: ReportLevel, projectId: string) => {
    switch (level) {
      case "campaigns":
        return sql`SELECT campaign_id AS entity_key, campaign_id, NULL::text AS ad_group_id FROM campaigns WHERE project_id = ${projectId}`
      case "adGroups":
        return sql`SELECT ad_group_id AS entity_key, campaign_id, ad_group_id FROM ad_groups WHERE project_id = ${projectId}`
      case "keywords":
        return sql`SELECT keyword_id AS entity_key, campaign_id, ad_group_id FROM keywords WHERE project_id = ${projectId}`
      case "ads":
        return sql`SELECT ad_id AS entity_key, campaign_id, ad_group_id FROM ads WHERE project_id = ${projectId}`
      case "searchTerms":
        return sql`SELECT entity_key, campaign_id, ad_group_id FROM search_terms WHERE project_id = ${projectId}`
    }
  }

  /**
   * Each entity's spend suffix array from its spending days alone: the running total at each spending day,
   * repeated until the next one, written out as one array literal. No per-day expansion of every entity.
   */
  const rebuildSuffixes = (projectId: string, through: string) =>
    Effect.forEach(["campaigns", "adGroups", "keywords", "searchTerms", "ads"] as const, (level) =>
      sql`
        INSERT INTO spend_suffixes (project_id, level, entity_key, campaign_id, ad_group_id, through_day, spend)
        WITH active AS (
          SELECT entity_key, age, sum(spend) OVER w AS total, lead(age, 1, ${MAX_DAYS + 1}::int) OVER w AS next_age
          FROM (
            SELECT entity_key, (${through}::date - day) + 1 AS age, spend_micros AS spend
            FROM daily_metrics
            WHERE project_id = ${projectId} AND level = ${level} AND spend_micros > 0
              AND day > ${through}::date - ${MAX_DAYS}::int AND day <= ${through}::date
          ) days
          WINDOW w AS (PARTITION BY entity_key ORDER BY age)
        ),
        suffixes AS (
          SELECT entity_key, ('{' || rtrim(repeat('0,', min(age) - 1) ||
            string_agg(repeat(total::text || ',', next_age - age), '' ORDER BY age), ',') || '}')::int8[] AS spend
          FROM active GROUP BY entity_key
        )
        SELECT ${projectId}, ${level}, s.entity_key, o.campaign_id, o.ad_group_id, ${through}::date, s.spend
        FROM suffixes s JOIN (${owners(level, projectId)}) o ON o.entity_key = s.entity_key`, { discard: true })

  /** Runs one step of the swap, logging how long it took (debug): where a slow sync spends its time. */
  const timed = <A, E, R>(step: string, effect: Effect.Effect<A, E, R>) =>
    Effect.timed(effect).pipe(
      Effect.tap(([duration]) => Effect.logDebug("sync step").pipe(Effect.annotateLogs({ step, ms: Math.round(Duration.toMillis(duration)) }))),
      Effect.map(([, a]) => a)
    )

  /** The one transaction that makes the new copy visible. */
  const swap = (syncId: string, account: AccountRecord, plan: SyncPlan, entities: Entities) =>
    sql.withTransaction(Effect.gen(function*() {
      const projectId = account.projectId
      // Room to aggregate and sort a large window in memory, for this transaction only.
      yield* sql`SET LOCAL work_mem = '256MB'`
      yield* sql`SELECT 1 FROM accounts WHERE project_id = ${projectId} FOR UPDATE`
      yield* timed("entities", replaceEntities(projectId, entities))
      yield* timed(
        "delete window",
        sql`DELETE FROM daily_metrics WHERE project_id = ${projectId}
            AND (day BETWEEN ${plan.windowStart} AND ${plan.windowEnd} OR day <= ${plan.windowEnd}::date - ${RETAINED_DAYS}::int)`
      )
      // Fresh statistics on the staged rows, or the planner guesses from an empty table.
      yield* timed("analyze", sql`ANALYZE staged_metrics`)
      const written = yield* timed("insert days", sql<{ n: number }>`
        WITH moved AS (
          INSERT INTO daily_metrics (project_id, level, entity_key, day, impressions, taps, installs, spend_micros)
          SELECT ${projectId}, level, entity_key, day, sum(impressions), sum(taps), sum(installs), sum(spend_micros)
          FROM staged_metrics WHERE sync_id = ${syncId}
          GROUP BY level, entity_key, day
          -- In primary-key order: the index takes sorted keys far faster than random ones.
          ORDER BY level, entity_key, day
          RETURNING 1
        ) SELECT count(*)::int AS n FROM moved`)
      yield* timed("search terms", sql`
        INSERT INTO search_terms (project_id, entity_key, campaign_id, ad_group_id, keyword_id, text)
        SELECT DISTINCT ON (entity_key) ${projectId}, entity_key, campaign_id, ad_group_id, keyword_id, search_term
        FROM staged_metrics WHERE sync_id = ${syncId} AND level = 'searchTerms'
        ON CONFLICT (project_id, entity_key) DO NOTHING`)
      yield* timed("retire search terms", sql`
        DELETE FROM search_terms t WHERE t.project_id = ${projectId} AND t.entity_key NOT IN (
          SELECT DISTINCT entity_key FROM daily_metrics WHERE project_id = ${projectId} AND level = 'searchTerms')`)
      yield* timed("suffixes", sql`DELETE FROM spend_suffixes WHERE project_id = ${projectId}`.pipe(
        Effect.zipRight(rebuildSuffixes(projectId, plan.windowEnd))
      ))
      yield* sql`
        UPDATE accounts SET
          last_synced_at = now(),
          last_synced_day = ${plan.windowEnd},
          first_synced_day = greatest(
            least(coalesce(first_synced_day, ${plan.windowStart}::date), ${plan.windowStart}::date),
            ${plan.windowEnd}::date - ${RETAINED_DAYS - 1}::int),
          status = ${entities.campaigns.some((c) => c.status === "ENABLED") ? "active" : "paused"},
          read_only = ${entities.readOnly}
        WHERE project_id = ${projectId}`
      const rowsWritten = (written[0]?.n ?? 0) + entities.campaigns.length + entities.adGroups.length +
        entities.keywords.length + entities.negatives.length + entities.ads.length
      yield* sql`
        UPDATE syncs SET status = 'succeeded', finished_at = clock_timestamp(), heartbeat_at = now(), rows_written = ${rowsWritten},
          progress = ${JSON.stringify({ step: "done" })}::jsonb
        WHERE sync_id = ${syncId}`
      return rowsWritten
    })).pipe(Effect.orDie)

  /** Runs a started sync to its end; any failure marks it failed and leaves the previous copy in place. */
  const run = (
    client: UpstreamClient,
    sync: SyncRow,
    account: AccountRecord
  ) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const plan = planWindow(account, now, initialDays)
      yield* runs.setWindow(sync.syncId, plan.windowStart, plan.windowEnd)
      const progress = yield* Ref.make<{ step: string; done: number; total: number; rows: number }>({
        step: "entities",
        done: 0,
        total: 0,
        rows: 0
      })
      const heartbeat = yield* Ref.get(progress).pipe(
        Effect.flatMap((p) => runs.beat(sync.syncId, { step: p.step, done: p.done, total: p.total }, p.rows)),
        Effect.repeat(Schedule.spaced(Duration.seconds(5))),
        Effect.fork
      )
      const upstreamAccount = (yield* client.accounts).find((a) => a.upstreamAccountId === account.upstreamAccountId)
      if (upstreamAccount === undefined) {
        // The credentials no longer reach the account: say so on the account, keep its last copy readable.
        yield* sql`UPDATE accounts SET status = 'disconnected' WHERE project_id = ${account.projectId}`.pipe(Effect.orDie)
        return yield* new AccountNotFound({ message: `upstream account ${account.upstreamAccountId} is no longer reachable` })
      }
      const entities = { ...yield* readEntities(client, account.upstreamAccountId), readOnly: upstreamAccount.readOnly }
      yield* Ref.update(progress, (p) => ({ ...p, step: "metrics", total: entities.campaigns.length + 1 }))
      const campaignRows = yield* stageReport(client, sync.syncId, account, plan, "campaigns", undefined)
      yield* Ref.update(progress, (p) => ({ ...p, done: 1, rows: p.rows + campaignRows }))
      yield* Effect.forEach(entities.campaigns, (campaign) =>
        Effect.gen(function*() {
          let rows = 0
          for (const level of ["adGroups", "keywords", "searchTerms", "ads"] as const) {
            rows += yield* stageReport(client, sync.syncId, account, plan, level, campaign.campaignId)
          }
          yield* Ref.update(progress, (p) => ({ ...p, done: p.done + 1, rows: p.rows + rows }))
        }), { concurrency: CAMPAIGN_CONCURRENCY, discard: true })
      // The heartbeat goes on through the swap (a long one must not look abandoned); beats only touch a
      // running sync, so none can overwrite the outcome the swap writes.
      yield* Ref.update(progress, (p) => ({ ...p, step: "swap" }))
      const written = yield* swap(sync.syncId, account, plan, entities)
      yield* Fiber.interrupt(heartbeat)
      yield* Effect.logInfo("sync succeeded").pipe(Effect.annotateLogs({ syncId: sync.syncId, rowsWritten: written }))
      return written
    }).pipe(
      Effect.onExit((exit) =>
        Effect.all([
          exit._tag === "Failure" ? runs.fail(sync.syncId, describeFailure(exit.cause)) : Effect.void,
          sql`DELETE FROM staged_metrics WHERE sync_id = ${sync.syncId}`.pipe(Effect.ignore)
        ], { discard: true })
      ),
      Effect.annotateLogs({ projectId: account.projectId, syncId: sync.syncId }),
      Effect.withSpan("Sync.run")
    )

  return { run } as const
})

const describeFailure = (cause: Cause.Cause<unknown>): string => {
  if (Cause.isInterruptedOnly(cause)) return "interrupted: the instance stopped during the sync"
  const failure = Cause.squash(cause)
  return typeof failure === "object" && failure !== null && "message" in failure && typeof failure.message === "string"
    ? failure.message
    : String(failure)
}
