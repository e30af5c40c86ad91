/**
 * Sync: upstream → warehouse for one account. Entities are read whole; daily metrics per level are read
 * for the window (90 days on the first sync, then from a few days before the last synced day, because
 * the platform restates recent days) and written once, into tables of the sync's own without indexes: the
 * daily rows beside the retained days of the current copy, the search terms, and (when the window holds
 * every day they need) the spend suffixes, computed from the rows already in memory. Their indexes are then
 * built in sorted passes. One short transaction replaces the entities and makes those tables the account's
 * partitions of `daily_metrics`, `search_terms` and `spend_suffixes`; until it commits readers see the
 * previous copy, and a failed sync drops its tables and leaves the copy untouched.
 */
import { AccountNotFound } from "@acs/domain/Errors"
import type { Metrics, ReportLevel, ReportRow, UpstreamCampaign, UpstreamClient } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Cause, Clock, Config, Duration, Effect, Fiber, Ref, Schedule } from "effect"
import type { AccountRecord } from "../accounts/Accounts.ts"
import { SyncRuns, type SyncRow } from "./SyncRuns.ts"
import { addDays, dateIn, daysBetween, MAX_DAYS } from "./Window.ts"

/** Recent days re-read on every sync because the platform restates them. */
export const RESTATED_DAYS = 3
/** Daily rows older than this many days before the last synced day are dropped. */
export const RETAINED_DAYS = 120
const REPORT_PAGE = 1000
const CAMPAIGN_CONCURRENCY = 3
const AD_GROUP_CONCURRENCY = 8
/** Daily rows per INSERT: large enough that statement overhead vanishes, small enough to bound the arrays. */
const STAGE_CHUNK = 20_000
/** Suffix rows per INSERT: each carries a 90-element array. */
const SUFFIX_CHUNK = 5_000

type Period = Metrics & { readonly date: string }

/** One entity of a report: its first row (the owners) and its days, summed when it had several rows. */
interface ReportEntity {
  readonly row: ReportRow
  readonly periods: ReadonlyArray<Period>
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

/** A generation's tables: names built from the sync id (or, for migrated copies, the project id) alone. */
const tablesOf = (generation: string) => ({
  metrics: `daily_metrics_${generation}`,
  terms: `search_terms_${generation}`,
  suffixes: `spend_suffixes_${generation}`
})
type Tables = ReturnType<typeof tablesOf>
const PARENTS = ["daily_metrics", "search_terms", "spend_suffixes"] as const

/** A project id as an SQL literal, for DDL, which takes no parameters. */
const projectLiteral = (projectId: string) =>
  /^[a-z0-9_]+$/.test(projectId) ? Effect.succeed(`'${projectId}'`) : Effect.dieMessage(`unexpected project id ${projectId}`)

/**
 * What computing the spend suffixes while staging needs: the last synced day and the age (1 = that day) of
 * every day of the 90 the suffixes cover. Only usable when the sync reads all of those days itself.
 */
interface SuffixDays {
  readonly through: string
  readonly ages: ReadonlyMap<string, number>
}

const suffixDaysOf = (through: string): SuffixDays => ({
  through,
  ages: new Map(Array.from({ length: MAX_DAYS }, (_, i) => [addDays(through, -i), i + 1]))
})

/**
 * The suffix array of one entity as an element of a text[] literal (itself an int8[] literal), or undefined
 * when it spent nothing in the 90 days.
 */
const suffixElement = (days: SuffixDays, periods: ReadonlyArray<Period>, byAge: Array<number>): string | undefined => {
  byAge.fill(0)
  let spent = false
  for (const p of periods) {
    if (p.spendMicros <= 0) continue
    const age = days.ages.get(p.date)
    if (age === undefined) continue
    byAge[age - 1]! += p.spendMicros
    spent = true
  }
  if (!spent) return undefined
  for (let i = 1; i < MAX_DAYS; i++) byAge[i]! += byAge[i - 1]!
  return `"{${byAge.join(",")}}"`
}

/**
 * Array parameters written out here rather than by the driver, which converts and escapes element by element:
 * numbers joined natively, text quoted once per entity however many rows repeat it.
 */
const arrayLiteral = (elements: ReadonlyArray<number | string>) => `{${elements.join(",")}}`
const textElement = (text: string) => `"${text.replace(/[\\"]/g, "\\$&")}"`

/** Each day of the window as its offset from the first, so days travel as small integers. */
interface WindowDays {
  readonly start: string
  readonly offsets: ReadonlyMap<string, number>
}

const windowDaysOf = (plan: SyncPlan): WindowDays => {
  const length = daysBetween(plan.windowStart, plan.windowEnd) + 1
  return {
    start: plan.windowStart,
    offsets: new Map(Array.from({ length }, (_, i) => [addDays(plan.windowStart, i), i]))
  }
}

/** Per level, the owners written beside each entity's suffix while staging. */
type SuffixOwners = Record<ReportLevel, Map<string, string>>

/** Campaign and ad group of an entity as written beside its suffix: what narrowing filters on. */
const ownerOf = (campaignId: string, adGroupId: string | null) => `${campaignId}\u0000${adGroupId ?? ""}`

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
        yield* sql`
          INSERT INTO ${sql(tables.terms)} (project_id, entity_key, campaign_id, ad_group_id, keyword_id, text)
          SELECT ${projectId}, * FROM unnest(${termKeys}::text[], ${termRows.map((r) => r.campaignId)}::text[],
            ${termRows.map((r) => r.adGroupId)}::text[], ${termRows.map((r) => r.keywordId)}::text[],
            ${termRows.map((r) => r.searchTerm)}::text[])`
      }
      return staged
    }).pipe(Effect.orDie)

  /** Every page of one report, summed per entity and day (the key of the sync's table), then written. */
  const stageReport = (
    client: UpstreamClient,
    tables: Tables,
    account: AccountRecord,
    plan: SyncPlan,
    level: ReportLevel,
    campaignId: string | undefined,
    suffixDays: SuffixDays | undefined,
    suffixOwners: Map<string, string>
  ) =>
    Effect.gen(function*() {
      const byEntity = new Map<string, ReportEntity>()
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
          byEntity.set(key, seen === undefined ? { row, periods: row.periods } : { row: seen.row, periods: mergePeriods(seen.periods, row.periods) })
        }
        if (page.rows.length < REPORT_PAGE || offset + page.rows.length >= page.totalResults) break
      }
      return yield* stage(tables, account.projectId, level, byEntity, windowDaysOf(plan), suffixDays, suffixOwners)
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
      yield* stageReport(client, tables, account, plan, "campaigns", undefined, suffixDays, suffixOwners.campaigns).pipe(Effect.flatMap(count))
      yield* Effect.forEach(campaigns, (campaign) =>
        Effect.forEach(
          ["adGroups", "keywords", "searchTerms", "ads"] as const,
          (level) => stageReport(client, tables, account, plan, level, campaign.campaignId, suffixDays, suffixOwners[level])
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

  /**
   * Suffixes written while staging carry the owners their report rows named; the entities decide: a suffix
   * whose entity is not listed (deleted upstream) goes, one whose owners differ takes the entity's.
   */
  const settleSuffixOwners = (tables: Tables, e: Entities, suffixOwners: SuffixOwners) =>
    Effect.forEach([
      ["campaigns", e.campaigns.map((c) => [c.campaignId, c.campaignId, null] as const)],
      ["adGroups", e.adGroups.map((a) => [a.adGroupId, a.campaignId, a.adGroupId] as const)],
      ["keywords", e.keywords.map((k) => [k.keywordId, k.campaignId, k.adGroupId] as const)],
      ["ads", e.ads.map((a) => [a.adId, a.campaignId, a.adGroupId] as const)]
    ] as const, ([level, listed]) =>
      Effect.gen(function*() {
        const written = suffixOwners[level]
        if (written.size === 0) return
        const gone = new Set(written.keys())
        const moved: Array<readonly [string, string, string | null]> = []
        for (const entity of listed) {
          const [key, campaignId, adGroupId] = entity
          const owner = written.get(key)
          if (owner === undefined) continue
          gone.delete(key)
          if (owner !== ownerOf(campaignId, adGroupId)) moved.push(entity)
        }
        if (gone.size > 0) {
          yield* sql`DELETE FROM ${sql(tables.suffixes)} WHERE level = ${level} AND entity_key = ANY(${[...gone]}::text[])`
        }
        if (moved.length > 0) {
          yield* sql`
            UPDATE ${sql(tables.suffixes)} s SET campaign_id = t.c, ad_group_id = t.g
            FROM unnest(${moved.map((m) => m[0])}::text[], ${moved.map((m) => m[1])}::text[], ${moved.map((m) => m[2])}::text[]) AS t(k, c, g)
            WHERE s.level = ${level} AND s.entity_key = t.k`
        }
        yield* Effect.logDebug("suffix owners settled").pipe(Effect.annotateLogs({ level, gone: gone.size, moved: moved.length }))
      }), { discard: true })

  /** Per level, which campaign and ad group each entity of the new copy belongs to: what narrowing filters on. */
  const owners = (level: ReportLevel, projectId: string, tables: Tables) => {
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
        return sql`SELECT entity_key, campaign_id, ad_group_id FROM ${sql(tables.terms)}`
    }
  }

  /**
   * The spend suffixes in SQL, for a sync whose window does not hold every day they cover (the retained days
   * come from the previous copy): each entity's array from its spending days alone, the running total at each
   * spending day repeated until the next one, written out as one array literal. No per-day expansion of every
   * entity. Runs in the swap, after the entities it joins are replaced. One statement per level keeps each
   * sort in memory.
   */
  const rebuildSuffixes = (tables: Tables, projectId: string, through: string) =>
    Effect.forEach(["campaigns", "adGroups", "keywords", "searchTerms", "ads"] as const, (level) =>
      sql`
        INSERT INTO ${sql(tables.suffixes)} (project_id, level, entity_key, campaign_id, ad_group_id, through_day, spend)
        WITH active AS (
          SELECT entity_key, age, sum(spend) OVER w AS total, lead(age, 1, ${MAX_DAYS + 1}::int) OVER w AS next_age
          FROM (
            SELECT entity_key, (${through}::date - day) + 1 AS age, spend_micros AS spend
            FROM ${sql(tables.metrics)}
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
        FROM suffixes s JOIN (${owners(level, projectId, tables)}) o ON o.entity_key = s.entity_key`, { discard: true })

  /** Runs one step of the sync, logging how long it took (debug): where a slow sync spends its time. */
  const timed = <A, E, R>(step: string, effect: Effect.Effect<A, E, R>) =>
    Effect.timed(effect).pipe(
      Effect.tap(([duration]) => Effect.logDebug("sync step").pipe(Effect.annotateLogs({ step, ms: Math.round(Duration.toMillis(duration)) }))),
      Effect.map(([, a]) => a)
    )

  /**
   * Drops the tables that syncs no longer running left behind (their instance died before cleaning up).
   * Attached partitions and the tables of running syncs are not touched.
   */
  const dropAbandonedTables = sql<{ relname: string }>`
    SELECT c.relname FROM pg_class c
    WHERE c.relkind = 'r' AND NOT c.relispartition AND c.relnamespace = current_schema()::regnamespace
      AND (${sql.or(PARENTS.map((parent) => sql`c.relname LIKE ${`${parent.replaceAll("_", "\\_")}\\_syn\\_%`}`))})
      AND NOT EXISTS (
        SELECT 1 FROM syncs s WHERE s.status = 'running'
          AND c.relname IN (${sql.csv(PARENTS.map((parent) => sql`${`${parent}_`} || s.sync_id`))}))`.pipe(
    Effect.flatMap((tables) =>
      Effect.forEach(tables, ({ relname }) => sql`DROP TABLE IF EXISTS ${sql(relname)}`.pipe(Effect.ignore), { discard: true })
    ),
    Effect.ignore
  )

  /** A failed sync's tables go; once the swap has made them the account's partitions they stay. */
  const discardTables = (syncId: string) =>
    sql`SELECT 1 FROM metric_generations WHERE generation = ${syncId}`.pipe(
      Effect.flatMap((current) =>
        current.length > 0 ? Effect.void : Effect.forEach(Object.values(tablesOf(syncId)), (table) =>
          sql`DROP TABLE IF EXISTS ${sql(table)}`, { discard: true })
      ),
      Effect.ignore
    )

  /**
   * The retained days outside the window come over from the current copy (one sync per account runs, so
   * nothing else changes it meanwhile).
   */
  const retain = (tables: Tables, projectId: string, plan: SyncPlan) =>
    timed("retained days", sql`
      INSERT INTO ${sql(tables.metrics)} SELECT * FROM daily_metrics WHERE project_id = ${projectId}
        AND (day < ${plan.windowStart}::date OR day > ${plan.windowEnd}::date) AND day > ${plan.windowEnd}::date - ${RETAINED_DAYS}::int`)

  /** An index in one sorted pass after the rows, far faster than maintained row by row. */
  const createIndex = (table: string, name: string, columns: string, unique: boolean) =>
    sql`CREATE ${sql.unsafe(unique ? "UNIQUE INDEX" : "INDEX")} ${sql(`${table}_${name}`)} ON ${sql(table)} (${sql.unsafe(columns)})`

  const withMaintenanceMemory = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    sql.withTransaction(sql`SET LOCAL maintenance_work_mem = '256MB'`.pipe(Effect.zipRight(effect)))

  /**
   * The new copy's tables made ready for the swap, outside it, on two connections (and cores): the daily rows'
   * index and statistics on one; on the other the search terms still active in the retained days carried over
   * from the previous copy, the suffixes' owners settled, and the smaller tables' indexes and statistics. The
   * swap starts only when both are done: with the embedded database's single connection, a transaction
   * waiting for work that needs another connection would never end.
   */
  const prepare = (tables: Tables, projectId: string, entities: Entities, suffixOwners: SuffixOwners, hasPrevious: boolean) =>
    Effect.all([
      // ANALYZE after the index: the two lock each other out. A small sample: the reads' plans (an index lookup
      // per entity) need the table's size more than its distributions.
      withMaintenanceMemory(Effect.gen(function*() {
        yield* timed("index", createIndex(tables.metrics, "key", "level, entity_key, day", true))
        yield* sql`SET LOCAL default_statistics_target = 10`
        yield* timed("analyze", sql`ANALYZE ${sql(tables.metrics)}`)
      })),
      withMaintenanceMemory(Effect.gen(function*() {
        if (hasPrevious) {
          yield* timed("carried terms", sql`
            INSERT INTO ${sql(tables.terms)} (project_id, entity_key, campaign_id, ad_group_id, keyword_id, text)
            SELECT o.project_id, o.entity_key, o.campaign_id, o.ad_group_id, o.keyword_id, o.text FROM search_terms o
            WHERE o.project_id = ${projectId}
              AND NOT EXISTS (SELECT 1 FROM ${sql(tables.terms)} n WHERE n.entity_key = o.entity_key)
              AND EXISTS (SELECT 1 FROM ${sql(tables.metrics)} m WHERE m.level = 'searchTerms' AND m.entity_key = o.entity_key)`)
        }
        yield* timed("terms", createIndex(tables.terms, "key", "entity_key", true).pipe(Effect.zipRight(sql`ANALYZE ${sql(tables.terms)}`)))
        yield* timed("suffix owners", settleSuffixOwners(tables, entities, suffixOwners))
        yield* timed("suffixes", Effect.all([
          createIndex(tables.suffixes, "key", "level, entity_key", true),
          createIndex(tables.suffixes, "campaign", "level, campaign_id", false),
          createIndex(tables.suffixes, "ad_group", "level, ad_group_id", false),
          sql`ANALYZE ${sql(tables.suffixes)}`
        ], { discard: true }))
      }))
    ], { concurrency: 2, discard: true }).pipe(Effect.orDie)

  /**
   * The one transaction that makes the new copy visible. The partition exchange comes last: dropping the old
   * partitions locks their parents against every reader until the commit, a moment later.
   */
  const swap = (
    syncId: string,
    tables: Tables,
    account: AccountRecord,
    plan: SyncPlan,
    entities: Entities,
    suffixesStaged: boolean,
    metricRows: number
  ) =>
    sql.withTransaction(Effect.gen(function*() {
      const projectId = account.projectId
      const partitionValue = yield* projectLiteral(projectId)
      yield* sql`SELECT 1 FROM accounts WHERE project_id = ${projectId} FOR UPDATE`
      yield* timed("entities", replaceEntities(projectId, entities))
      if (!suffixesStaged) {
        // Room to aggregate and sort a large window in memory, for this transaction only; its statements run
        // once each, so compiling them (JIT) costs more than it saves.
        yield* sql`SET LOCAL work_mem = '256MB'`
        yield* sql`SET LOCAL jit = off`
        yield* timed("suffixes", rebuildSuffixes(tables, projectId, plan.windowEnd))
        yield* sql`ANALYZE ${sql(tables.suffixes)}`
      }
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
      yield* timed("partition", Effect.gen(function*() {
        // All three parents at once, in the order a read statement touching two of them locks them (an entity
        // table before the suffixes), so no reader can hold one while waiting for another held here.
        yield* sql`LOCK TABLE search_terms, spend_suffixes, daily_metrics IN ACCESS EXCLUSIVE MODE`
        const previous = yield* sql<{ generation: string }>`SELECT generation FROM metric_generations WHERE project_id = ${projectId}`
        for (const { generation } of previous) {
          for (const table of Object.values(tablesOf(generation))) yield* sql`DROP TABLE IF EXISTS ${sql(table)}`
        }
        for (const parent of PARENTS) {
          const table = `${parent}_${syncId}`
          yield* sql`ALTER TABLE ${sql(parent)} ATTACH PARTITION ${sql(table)} FOR VALUES IN (${sql.literal(partitionValue)})`
        }
        yield* sql`
          INSERT INTO metric_generations (project_id, generation, sync_id) VALUES (${projectId}, ${syncId}, ${syncId})
          ON CONFLICT (project_id) DO UPDATE SET generation = excluded.generation, sync_id = excluded.sync_id`
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
      const tables = tablesOf(sync.syncId)
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
      // The partition's bound as a constraint from the start, so attaching a table needs no scan to check it.
      yield* Effect.forEach(PARENTS, (parent) =>
        sql`
          CREATE TABLE ${sql(`${parent}_${sync.syncId}`)}
            (LIKE ${sql(parent)} INCLUDING CONSTRAINTS, CHECK (project_id = ${sql.literal(partitionValue)}))`, { discard: true })
        .pipe(Effect.orDie)
      const hasPrevious = (yield* sql`SELECT 1 FROM metric_generations WHERE project_id = ${account.projectId}`.pipe(Effect.orDie)).length > 0
      // The suffixes can be computed from the rows in memory when the window holds every day they cover: on a
      // first sync (no retained days), or when the window spans all 90 days. Otherwise the swap builds them.
      const suffixDays = !hasPrevious || plan.windowStart <= addDays(plan.windowEnd, -(MAX_DAYS - 1))
        ? suffixDaysOf(plan.windowEnd)
        : undefined
      const suffixOwners: SuffixOwners = {
        campaigns: new Map(),
        adGroups: new Map(),
        keywords: new Map(),
        searchTerms: new Map(),
        ads: new Map()
      }
      const campaigns = yield* client.campaigns(account.upstreamAccountId)
      yield* Ref.update(progress, (p) => ({ ...p, step: "metrics", total: campaigns.length + 1 }))
      // Entities and reports are read side by side: both mostly wait on the platform.
      const [children, metricRows] = yield* Effect.all([
        readEntities(client, account.upstreamAccountId, campaigns),
        stageMetrics(client, tables, account, plan, campaigns, suffixDays, suffixOwners, progress)
      ], { concurrency: 2 })
      const entities = { ...children, readOnly: upstreamAccount.readOnly }
      yield* retain(tables, account.projectId, plan).pipe(Effect.orDie)
      yield* prepare(tables, account.projectId, entities, suffixOwners, hasPrevious)
      // The heartbeat goes on through the swap (a long one must not look abandoned); beats only touch a
      // running sync, so none can overwrite the outcome the swap writes.
      yield* Ref.update(progress, (p) => ({ ...p, step: "swap" }))
      const written = yield* swap(sync.syncId, tables, account, plan, entities, suffixDays !== undefined, metricRows)
      yield* Fiber.interrupt(heartbeat)
      yield* Effect.logInfo("sync succeeded").pipe(Effect.annotateLogs({ syncId: sync.syncId, rowsWritten: written }))
      return written
    }).pipe(
      Effect.onExit((exit) =>
        Effect.all([
          exit._tag === "Failure" ? runs.fail(sync.syncId, describeFailure(exit.cause)) : Effect.void,
          discardTables(sync.syncId)
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
