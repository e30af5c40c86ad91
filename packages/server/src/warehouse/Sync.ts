/**
 * Sync: upstream → warehouse for one account. Entities are read whole; daily metrics per level are read
 * for the window (90 days on the first sync, then from a few days before the last synced day, because
 * the platform restates recent days) and written once, into a table of the sync's own without indexes,
 * beside the retained days of the current copy; its index is then built in one sorted pass. One short
 * transaction replaces the entities, rebuilds the spend suffixes and makes that table the account's
 * partition of `daily_metrics`; until it commits readers see the previous copy, and a failed sync drops
 * its table and leaves the copy untouched.
 */
import { AccountNotFound } from "@acs/domain/Errors"
import type { Metrics, ReportLevel, ReportRow, UpstreamCampaign, UpstreamClient } from "@acs/upstream/Upstream"
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
const AD_GROUP_CONCURRENCY = 8
/** Daily rows per INSERT: large enough that statement overhead vanishes, small enough to bound the arrays. */
const STAGE_CHUNK = 20_000

type Period = Metrics & { readonly date: string }

/** What a search term's entity row holds; known only from the reports. */
interface SearchTermOwner {
  readonly campaignId: string
  readonly adGroupId: string
  readonly keywordId: string | null
  readonly text: string | null
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

/** Two rows of one entity (hidden search terms of an ad group and keyword share a key): summed per day. */
const mergePeriods = (a: ReadonlyArray<Period>, b: ReadonlyArray<Period>): Array<Period> => {
  const byDay = new Map(a.map((p) => [p.date, p]))
  for (const p of b) {
    const q = byDay.get(p.date)
    byDay.set(p.date, q === undefined ? p : {
      date: p.date,
      impressions: p.impressions + q.impressions,
      taps: p.taps + q.taps,
      installs: p.installs + q.installs,
      spendMicros: p.spendMicros + q.spendMicros
    })
  }
  return [...byDay.values()]
}

/** The sync's own metrics table: a name built from the sync id alone (ids are [a-z0-9_]). */
const metricsTable = (syncId: string) => `daily_metrics_${syncId}`
const METRICS_TABLE_PATTERN = "daily\\_metrics\\_syn\\_%"

/** A project id as an SQL literal, for DDL, which takes no parameters. */
const projectLiteral = (projectId: string) =>
  /^[a-z0-9_]+$/.test(projectId) ? Effect.succeed(`'${projectId}'`) : Effect.dieMessage(`unexpected project id ${projectId}`)

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

  /** One report's daily rows (zero days left out) into the sync's table, a few INSERTs of column arrays. */
  const stage = (table: string, projectId: string, level: ReportLevel, byEntity: ReadonlyMap<string, ReadonlyArray<Period>>) =>
    Effect.gen(function*() {
      const keys: Array<string> = []
      const days: Array<string> = []
      const impressions: Array<number> = []
      const taps: Array<number> = []
      const installs: Array<number> = []
      const spend: Array<number> = []
      const flush = Effect.suspend(() =>
        sql`
          INSERT INTO ${sql(table)} (project_id, level, entity_key, day, impressions, taps, installs, spend_micros)
          SELECT ${projectId}, ${level}, * FROM unnest(${keys}::text[], ${days}::date[], ${impressions}::int8[], ${taps}::int8[],
            ${installs}::int8[], ${spend}::int8[])`
      ).pipe(Effect.zipRight(Effect.sync(() => {
        for (const column of [keys, days, impressions, taps, installs, spend]) column.length = 0
      })))
      let staged = 0
      for (const [key, periods] of byEntity) {
        for (const p of periods) {
          if (p.impressions === 0 && p.taps === 0 && p.installs === 0 && p.spendMicros === 0) continue
          keys.push(key)
          days.push(p.date)
          impressions.push(p.impressions)
          taps.push(p.taps)
          installs.push(p.installs)
          spend.push(p.spendMicros)
          staged++
        }
        if (keys.length >= STAGE_CHUNK) yield* flush
      }
      if (keys.length > 0) yield* flush
      return staged
    }).pipe(Effect.orDie)

  /**
   * Every page of one report, summed per entity and day (the key of the sync's table), then written; search
   * terms' owners are noted in `terms`. Returns the number of daily rows written.
   */
  const stageReport = (
    client: UpstreamClient,
    table: string,
    account: AccountRecord,
    plan: SyncPlan,
    level: ReportLevel,
    campaignId: string | undefined,
    terms: Map<string, SearchTermOwner>
  ) =>
    Effect.gen(function*() {
      const byEntity = new Map<string, ReadonlyArray<Period>>()
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
        for (const row of page.rows) {
          const key = entityKeyOf(level, row)
          if (key === undefined) continue
          const seen = byEntity.get(key)
          byEntity.set(key, seen === undefined ? row.periods : mergePeriods(seen, row.periods))
          if (level === "searchTerms" && row.adGroupId !== null && !terms.has(key)) {
            terms.set(key, { campaignId: row.campaignId, adGroupId: row.adGroupId, keywordId: row.keywordId, text: row.searchTerm })
          }
        }
        if (page.rows.length < REPORT_PAGE || offset + page.rows.length >= page.totalResults) break
      }
      return yield* stage(table, account.projectId, level, byEntity)
    })

  /** Every report of the window into the sync's table; returns the number of daily rows written. */
  const stageMetrics = (
    client: UpstreamClient,
    table: string,
    account: AccountRecord,
    plan: SyncPlan,
    campaigns: ReadonlyArray<UpstreamCampaign>,
    terms: Map<string, SearchTermOwner>,
    progress: Ref.Ref<Progress>
  ) =>
    Effect.gen(function*() {
      const count = (rows: number) => Ref.update(progress, (p) => ({ ...p, done: p.done + 1, rows: p.rows + rows }))
      yield* stageReport(client, table, account, plan, "campaigns", undefined, terms).pipe(Effect.flatMap(count))
      yield* Effect.forEach(campaigns, (campaign) =>
        Effect.forEach(
          ["adGroups", "keywords", "searchTerms", "ads"] as const,
          (level) => stageReport(client, table, account, plan, level, campaign.campaignId, terms)
        ).pipe(Effect.flatMap((rows) => count(rows.reduce((a, b) => a + b, 0)))), { concurrency: CAMPAIGN_CONCURRENCY, discard: true })
      return (yield* Ref.get(progress)).rows
    })

  /** Ad groups, keywords (one paged campaign-wide find per campaign), negatives and ads of every campaign. */
  const readEntities = (client: UpstreamClient, accountId: string, campaigns: ReadonlyArray<UpstreamCampaign>) =>
    Effect.forEach(campaigns, (campaign) =>
      Effect.gen(function*() {
        const { adGroups, keywords, negatives } = yield* Effect.all({
          adGroups: client.adGroups(accountId, campaign.campaignId),
          keywords: client.campaignKeywords(accountId, campaign.campaignId),
          negatives: client.negativeKeywords(accountId, campaign.campaignId)
        }, { concurrency: "unbounded" })
        const ads = yield* Effect.forEach(adGroups, (adGroup) => client.ads(accountId, campaign.campaignId, adGroup.adGroupId), {
          concurrency: AD_GROUP_CONCURRENCY
        })
        return { adGroups, keywords, negatives, ads: ads.flat() }
      }), { concurrency: CAMPAIGN_CONCURRENCY }).pipe(Effect.map((perCampaign) => ({
        campaigns,
        adGroups: perCampaign.flatMap((c) => c.adGroups),
        negatives: perCampaign.flatMap((c) => c.negatives),
        keywords: perCampaign.flatMap((c) => c.keywords),
        ads: perCampaign.flatMap((c) => c.ads)
      })))

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
   * Read from the sync's table: it holds the new copy. One statement per level keeps each sort in memory.
   */
  const rebuildSuffixes = (table: string, projectId: string, through: string) =>
    Effect.forEach(["campaigns", "adGroups", "keywords", "searchTerms", "ads"] as const, (level) =>
      sql`
        INSERT INTO spend_suffixes (project_id, level, entity_key, campaign_id, ad_group_id, through_day, spend)
        WITH active AS (
          SELECT entity_key, age, sum(spend) OVER w AS total, lead(age, 1, ${MAX_DAYS + 1}::int) OVER w AS next_age
          FROM (
            SELECT entity_key, (${through}::date - day) + 1 AS age, spend_micros AS spend
            FROM ${sql(table)}
            WHERE level = ${level} AND spend_micros > 0 AND day > ${through}::date - ${MAX_DAYS}::int AND day <= ${through}::date
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

  /** Runs one step of the sync, logging how long it took (debug): where a slow sync spends its time. */
  const timed = <A, E, R>(step: string, effect: Effect.Effect<A, E, R>) =>
    Effect.timed(effect).pipe(
      Effect.tap(([duration]) => Effect.logDebug("sync step").pipe(Effect.annotateLogs({ step, ms: Math.round(Duration.toMillis(duration)) }))),
      Effect.map(([, a]) => a)
    )

  /**
   * Drops the metrics tables that syncs no longer running left behind (their instance died before cleaning
   * up). Attached partitions and the tables of running syncs are not touched.
   */
  const dropAbandonedTables = sql<{ relname: string }>`
    SELECT c.relname FROM pg_class c
    WHERE c.relkind = 'r' AND NOT c.relispartition AND c.relname LIKE ${METRICS_TABLE_PATTERN}
      AND c.relnamespace = current_schema()::regnamespace
      AND NOT EXISTS (SELECT 1 FROM syncs s WHERE s.status = 'running' AND ${metricsTable("")} || s.sync_id = c.relname)`.pipe(
    Effect.flatMap((tables) =>
      Effect.forEach(tables, ({ relname }) => sql`DROP TABLE IF EXISTS ${sql(relname)}`.pipe(Effect.ignore), { discard: true })
    ),
    Effect.ignore
  )

  /** A failed sync's table goes; once the swap has made it the account's partition it stays. */
  const discardTable = (table: string) =>
    sql`SELECT 1 FROM metric_generations WHERE table_name = ${table}`.pipe(
      Effect.flatMap((current) => current.length > 0 ? Effect.void : sql`DROP TABLE IF EXISTS ${sql(table)}`),
      Effect.ignore
    )

  /**
   * The retained days outside the window come over from the current copy (one sync per account runs, so
   * nothing else changes it meanwhile), and the table gets statistics.
   */
  const retain = (table: string, projectId: string, plan: SyncPlan) =>
    Effect.gen(function*() {
      yield* timed("retained days", sql`
        INSERT INTO ${sql(table)} SELECT * FROM daily_metrics WHERE project_id = ${projectId}
          AND (day < ${plan.windowStart}::date OR day > ${plan.windowEnd}::date) AND day > ${plan.windowEnd}::date - ${RETAINED_DAYS}::int`)
      yield* timed("analyze", sql`ANALYZE ${sql(table)}`)
    }).pipe(Effect.orDie)

  /** The index in one sorted pass after the rows, far faster than maintained row by row. */
  const buildIndex = (table: string) =>
    sql.withTransaction(Effect.gen(function*() {
      yield* sql`SET LOCAL maintenance_work_mem = '256MB'`
      yield* timed("index", sql`CREATE UNIQUE INDEX ${sql(`${table}_key`)} ON ${sql(table)} (level, entity_key, day)`)
    })).pipe(Effect.orDie)

  /**
   * The one transaction that makes the new copy visible. The partition exchange comes last: dropping the old
   * partition locks `daily_metrics` against every reader until the commit, a moment later.
   */
  const swap = (
    syncId: string,
    table: string,
    account: AccountRecord,
    plan: SyncPlan,
    entities: Entities,
    terms: ReadonlyMap<string, SearchTermOwner>,
    metricRows: number,
    indexed: Effect.Effect<void>
  ) =>
    sql.withTransaction(Effect.gen(function*() {
      const projectId = account.projectId
      const partitionValue = yield* projectLiteral(projectId)
      // Room to aggregate and sort a large window in memory, for this transaction only; its statements run
      // once each, so compiling them (JIT) costs more than it saves.
      yield* sql`SET LOCAL work_mem = '256MB'`
      yield* sql`SET LOCAL jit = off`
      yield* sql`SELECT 1 FROM accounts WHERE project_id = ${projectId} FOR UPDATE`
      yield* timed("entities", replaceEntities(projectId, entities))
      const owned = [...terms]
      yield* timed("search terms", sql`
        INSERT INTO search_terms (project_id, entity_key, campaign_id, ad_group_id, keyword_id, text)
        SELECT ${projectId}, * FROM unnest(${owned.map(([key]) => key)}::text[], ${owned.map(([, t]) => t.campaignId)}::text[],
          ${owned.map(([, t]) => t.adGroupId)}::text[], ${owned.map(([, t]) => t.keywordId)}::text[], ${owned.map(([, t]) => t.text)}::text[])
        -- In key order: the primary key takes sorted keys far faster than random ones.
        ORDER BY 2
        ON CONFLICT (project_id, entity_key) DO NOTHING`)
      yield* timed("retire search terms", sql`
        DELETE FROM search_terms t WHERE t.project_id = ${projectId} AND NOT EXISTS (
          SELECT 1 FROM ${sql(table)} m WHERE m.level = 'searchTerms' AND m.entity_key = t.entity_key)`)
      yield* timed("suffixes", sql`DELETE FROM spend_suffixes WHERE project_id = ${projectId}`.pipe(
        Effect.zipRight(rebuildSuffixes(table, projectId, plan.windowEnd))
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
      const rowsWritten = metricRows + entities.campaigns.length + entities.adGroups.length +
        entities.keywords.length + entities.negatives.length + entities.ads.length
      const finished = yield* sql`
        UPDATE syncs SET status = 'succeeded', finished_at = clock_timestamp(), heartbeat_at = now(), rows_written = ${rowsWritten},
          progress = ${JSON.stringify({ step: "done" })}::jsonb
        WHERE sync_id = ${syncId} AND status = 'running' RETURNING 1`
      // Marked abandoned meanwhile (it stopped beating for minutes): another sync may own the account now.
      if (finished.length === 0) return yield* Effect.dieMessage("the sync was marked abandoned before its swap")
      yield* timed("index wait", indexed)
      yield* timed("partition", Effect.gen(function*() {
        const previous = yield* sql<{ tableName: string }>`SELECT table_name FROM metric_generations WHERE project_id = ${projectId}`
        for (const { tableName } of previous) yield* sql`DROP TABLE ${sql(tableName)}`
        yield* sql`ALTER TABLE daily_metrics ATTACH PARTITION ${sql(table)} FOR VALUES IN (${sql.literal(partitionValue)})`
        yield* sql`
          INSERT INTO metric_generations (project_id, table_name, sync_id) VALUES (${projectId}, ${table}, ${syncId})
          ON CONFLICT (project_id) DO UPDATE SET table_name = excluded.table_name, sync_id = excluded.sync_id`
      }))
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
      const table = metricsTable(sync.syncId)
      yield* runs.setWindow(sync.syncId, plan.windowStart, plan.windowEnd)
      const progress = yield* Ref.make<Progress>({ step: "entities", done: 0, total: 0, rows: 0 })
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
      yield* dropAbandonedTables
      const partitionValue = yield* projectLiteral(account.projectId)
      // The partition's bound as a constraint from the start, so attaching the table needs no scan to check it.
      yield* sql`CREATE TABLE ${sql(table)} (LIKE daily_metrics INCLUDING CONSTRAINTS, CHECK (project_id = ${sql.literal(partitionValue)}))`
        .pipe(Effect.orDie)
      const campaigns = yield* client.campaigns(account.upstreamAccountId)
      yield* Ref.update(progress, (p) => ({ ...p, step: "metrics", total: campaigns.length + 1 }))
      // Entities and reports are read side by side: both mostly wait on the platform.
      const terms = new Map<string, SearchTermOwner>()
      const [children, metricRows] = yield* Effect.all([
        readEntities(client, account.upstreamAccountId, campaigns),
        stageMetrics(client, table, account, plan, campaigns, terms, progress)
      ], { concurrency: 2 })
      yield* retain(table, account.projectId, plan)
      // The index is built beside the swap's first steps, which do not need it, on another connection (and
      // core); the swap waits for it before the table becomes the account's partition.
      const indexing = yield* Effect.fork(buildIndex(table))
      // The heartbeat goes on through the swap (a long one must not look abandoned); beats only touch a
      // running sync, so none can overwrite the outcome the swap writes.
      yield* Ref.update(progress, (p) => ({ ...p, step: "swap" }))
      const entities = { ...children, readOnly: upstreamAccount.readOnly }
      const written = yield* swap(sync.syncId, table, account, plan, entities, terms, metricRows, Fiber.join(indexing))
      yield* Fiber.interrupt(heartbeat)
      yield* Effect.logInfo("sync succeeded").pipe(Effect.annotateLogs({ syncId: sync.syncId, rowsWritten: written }))
      return written
    }).pipe(
      Effect.onExit((exit) =>
        Effect.all([
          exit._tag === "Failure" ? runs.fail(sync.syncId, describeFailure(exit.cause)) : Effect.void,
          discardTable(metricsTable(sync.syncId))
        ], { discard: true })
      ),
      Effect.annotateLogs({ projectId: account.projectId, syncId: sync.syncId }),
      Effect.withSpan("Sync.run")
    )

  return { run } as const
})

interface Progress {
  readonly step: string
  readonly done: number
  readonly total: number
  readonly rows: number
}

const describeFailure = (cause: Cause.Cause<unknown>): string => {
  if (Cause.isInterruptedOnly(cause)) return "interrupted: the instance stopped during the sync"
  const failure = Cause.squash(cause)
  return typeof failure === "object" && failure !== null && "message" in failure && typeof failure.message === "string"
    ? failure.message
    : String(failure)
}
