/**
 * The new copy's tables made ready for the swap, outside its transaction: the retained days carried over,
 * the suffixes' owners settled against the entities, indexes and statistics built.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import {
  firstKeptMonth,
  makeGenerationTables,
  monthOf,
  monthsFrom,
  nextMonth,
  stagedMonth,
  type Tables
} from "./GenerationTables.ts"
import { ownerOf, type SuffixOwners } from "./SpendSuffixes.ts"
import type { Entities } from "./SyncEntities.ts"
import type { SyncPlan } from "./SyncPlan.ts"
import { timed } from "./TimedStep.ts"

export const makePrepareCopy = (sql: SqlClient.SqlClient) => {
  const { createIndex, withMaintenanceMemory } = makeGenerationTables(sql)

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

  /**
   * The days of the months the window touches that lie outside it come over from the account's current
   * partitions of those months (one sync per account runs, so nothing else changes them meanwhile). The other
   * months' partitions stay as they are.
   */
  const retain = (tables: Tables, projectId: string, plan: SyncPlan) =>
    timed("retained days", sql`
      INSERT INTO ${sql(tables.metrics)} SELECT * FROM daily_metrics WHERE project_id = ${projectId}
        AND day >= ${monthOf(plan.windowStart)}::date AND day < ${nextMonth(monthOf(plan.windowEnd))}::date
        AND (day < ${plan.windowStart}::date OR day > ${plan.windowEnd}::date)`)

  /**
   * The new copy's tables made ready for the swap, outside it, on two connections (and cores): the daily rows'
   * index and statistics on one; on the other the search terms still active in the retained days carried over
   * from the previous copy, the suffixes' owners settled, and the smaller tables' indexes and statistics. The
   * swap starts only when both are done: with the embedded database's single connection, a transaction
   * waiting for work that needs another connection would never end.
   */
  const prepare = (
    tables: Tables,
    projectId: string,
    plan: SyncPlan,
    entities: Entities,
    suffixOwners: SuffixOwners,
    hasPrevious: boolean
  ) =>
    Effect.all([
      // ANALYZE after the index: the two lock each other out. A small sample: the reads' plans (an index lookup
      // per entity) need the table's size more than its distributions.
      // A unique index names the account last: one account's partition holds no other, but Citus attaches a
      // partition to a distributed parent only when its unique keys name the distribution column. Per leaf,
      // named for it: each becomes a partition of its own.
      withMaintenanceMemory(Effect.gen(function*() {
        yield* sql`SET LOCAL default_statistics_target = 10`
        for (const month of monthsFrom(plan.windowStart, plan.windowEnd)) {
          const leaf = stagedMonth(tables, month)
          yield* timed("index", createIndex(leaf, "key", "level, entity_key, day, project_id", true))
          yield* timed("analyze", sql`ANALYZE ${sql(leaf)}`)
        }
      })),
      withMaintenanceMemory(Effect.gen(function*() {
        if (hasPrevious) {
          // The previous copy's terms still active in the new copy's days that come from the current partitions
          // (the kept months', and the touched months' outside the window), each read in a CTE of its own: Citus
          // joins a distributed table's rows with the sync's own (plain) tables only once they are materialized
          // on the coordinator. The terms with a row in the window are staged already.
          yield* timed("carried terms", sql`
            WITH previous AS MATERIALIZED (
              SELECT project_id, entity_key, campaign_id, ad_group_id, keyword_id, text, keyword_text, match_type
              FROM search_terms WHERE project_id = ${projectId}),
            kept AS MATERIALIZED (
              SELECT DISTINCT entity_key FROM daily_metrics
              WHERE project_id = ${projectId} AND level = 'searchTerms' AND day >= ${firstKeptMonth(plan.windowEnd)}::date
                AND (day < ${plan.windowStart}::date OR day > ${plan.windowEnd}::date))
            INSERT INTO ${sql(tables.terms)} (project_id, entity_key, campaign_id, ad_group_id, keyword_id, text, keyword_text, match_type)
            SELECT o.project_id, o.entity_key, o.campaign_id, o.ad_group_id, o.keyword_id, o.text, o.keyword_text, o.match_type
            FROM previous o JOIN kept k ON k.entity_key = o.entity_key
            WHERE NOT EXISTS (SELECT 1 FROM ${sql(tables.terms)} n WHERE n.entity_key = o.entity_key)`)
        }
        yield* timed("terms", createIndex(tables.terms, "key", "entity_key, project_id", true).pipe(Effect.zipRight(sql`ANALYZE ${sql(tables.terms)}`)))
        yield* timed("suffix owners", settleSuffixOwners(tables, entities, suffixOwners))
        yield* timed("suffixes", Effect.all([
          createIndex(tables.suffixes, "key", "level, entity_key, project_id", true),
          createIndex(tables.suffixes, "campaign", "level, campaign_id", false),
          createIndex(tables.suffixes, "ad_group", "level, ad_group_id", false),
          sql`ANALYZE ${sql(tables.suffixes)}`
        ], { discard: true }))
      }))
    ], { concurrency: 2, discard: true }).pipe(Effect.orDie)

  return { retain, prepare } as const
}
