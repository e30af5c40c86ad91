/**
 * The one transaction that makes a sync's copy the account's: entities replaced, spend suffixes rebuilt in
 * SQL when the window did not hold their days, the account and the sync row updated, partitions exchanged
 * (the daily rows' of the months the sync touched, and those past retention dropped).
 */
import type { SqlClient } from "@effect/sql"
import type { ReportLevel } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { accountWrites } from "../accounts/Accounts.ts"
import { decodeRows } from "../db/Rows.ts"
import {
  ACCOUNT_PARENTS,
  firstKeptMonth,
  monthOf,
  monthOfPartition,
  monthPartition,
  monthsFrom,
  nextMonth,
  projectLiteral,
  stagedMonth,
  type Tables
} from "./GenerationTables.ts"
import { type Entities, makeEntityWrites } from "./SyncEntities.ts"
import { syncWrites, writeSyncEvent } from "./SyncRuns.ts"
import { RETAINED_DAYS, type SyncPlan } from "./SyncPlan.ts"
import { timed } from "./TimedStep.ts"
import { MAX_DAYS } from "./Window.ts"

/** The generation a `metric_generations` row names: the suffix of the account's partitions. */
const decodeGenerations = decodeRows(Schema.Struct({ generation: Schema.String }))
const decodeRelations = decodeRows(Schema.Struct({ relname: Schema.String }))

export const makeSwapCopy = (sql: SqlClient.SqlClient) => {
  const { replaceEntities } = makeEntityWrites(sql)

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
   * entity. The new copy's days are the sync's months and, before them, the account's partitions it keeps (read
   * first in a CTE of their own: Citus joins a distributed table's rows with the sync's plain tables only once
   * they are materialized on the coordinator). Runs in the swap, after the entities it joins are replaced. One
   * statement per level keeps each sort in memory.
   */
  const rebuildSuffixes = (tables: Tables, projectId: string, plan: SyncPlan) =>
    Effect.forEach(["campaigns", "adGroups", "keywords", "searchTerms", "ads"] as const, (level) =>
      sql`
        INSERT INTO ${sql(tables.suffixes)} (project_id, level, entity_key, campaign_id, ad_group_id, through_day, spend)
        WITH kept AS MATERIALIZED (
          SELECT entity_key, day, spend_micros FROM daily_metrics
          WHERE project_id = ${projectId} AND level = ${level} AND spend_micros > 0
            AND day > ${plan.windowEnd}::date - ${MAX_DAYS}::int AND day < ${monthOf(plan.windowStart)}::date
        ),
        active AS (
          SELECT entity_key, age, sum(spend) OVER w AS total, lead(age, 1, ${MAX_DAYS + 1}::int) OVER w AS next_age
          FROM (
            ${
        sql.join(" UNION ALL ", false)(monthsFrom(plan.windowStart, plan.windowEnd).map((month) =>
          sql`
            SELECT entity_key, (${plan.windowEnd}::date - day) + 1 AS age, spend_micros AS spend
            FROM ${sql(stagedMonth(tables, month))}
            WHERE level = ${level} AND spend_micros > 0 AND day > ${plan.windowEnd}::date - ${MAX_DAYS}::int AND day <= ${plan.windowEnd}::date`
        ))
      }
            UNION ALL
            SELECT entity_key, (${plan.windowEnd}::date - day) + 1, spend_micros FROM kept
          ) days
          WINDOW w AS (PARTITION BY entity_key ORDER BY age)
        ),
        suffixes AS (
          SELECT entity_key, ('{' || rtrim(repeat('0,', min(age) - 1) ||
            string_agg(repeat(total::text || ',', next_age - age), '' ORDER BY age), ',') || '}')::int8[] AS spend
          FROM active GROUP BY entity_key
        )
        SELECT ${projectId}, ${level}, s.entity_key, o.campaign_id, o.ad_group_id, ${plan.windowEnd}::date, s.spend
        FROM suffixes s JOIN (${owners(level, projectId, tables)}) o ON o.entity_key = s.entity_key`, { discard: true })

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
      // The month leaves as plain tables of their own from here on, as the statements below read them: on Citus,
      // a statement reading the sync's partitioned table beside distributed ones crashed its backend. Undone
      // with the transaction if it fails, so a failed sync's table still drops with its leaves.
      for (const month of monthsFrom(plan.windowStart, plan.windowEnd)) {
        yield* sql`ALTER TABLE ${sql(tables.metrics)} DETACH PARTITION ${sql(stagedMonth(tables, month))}`
      }
      yield* sql`DROP TABLE ${sql(tables.metrics)}`
      if (!suffixesStaged) {
        // Room to aggregate and sort a large window in memory, for this transaction only; its statements run
        // once each, so compiling them (JIT) costs more than it saves.
        yield* sql`SET LOCAL work_mem = '256MB'`
        yield* sql`SET LOCAL jit = off`
        yield* timed("suffixes", rebuildSuffixes(tables, projectId, plan))
        yield* sql`ANALYZE ${sql(tables.suffixes)}`
      }
      yield* accountWrites(sql).markSynced(projectId, {
        windowStart: plan.windowStart,
        windowEnd: plan.windowEnd,
        retainedDays: RETAINED_DAYS,
        status: entities.campaigns.some((c) => c.status === "ENABLED") ? "active" : "paused",
        readOnly: entities.readOnly
      })
      const rowsWritten = metricRows + entities.campaigns.length + entities.adGroups.length +
        entities.keywords.length + entities.negatives.length + entities.ads.length
      const finished = yield* syncWrites(sql).succeed(projectId, syncId, rowsWritten)
      // Marked abandoned meanwhile (it stopped beating for minutes): another sync may own the account now.
      if (finished.length === 0) return yield* Effect.dieMessage("the sync was marked abandoned before its swap")
      // `sync.succeeded` commits with the copy it announces.
      yield* writeSyncEvent(sql, finished[0]!)
      yield* timed("partition", Effect.gen(function*() {
        // All three parents at once, in the order a read statement touching two of them locks them (an entity
        // table before the suffixes), so no reader can hold one while waiting for another held here.
        yield* sql`LOCK TABLE search_terms, spend_suffixes, daily_metrics IN ACCESS EXCLUSIVE MODE`
        const previous = yield* sql`SELECT generation FROM metric_generations WHERE project_id = ${projectId}`.pipe(
          Effect.flatMap(decodeGenerations)
        )
        for (const { generation } of previous) {
          for (const parent of ACCOUNT_PARENTS) yield* sql`DROP TABLE IF EXISTS ${sql(`${parent}_${generation}`)}`
        }
        for (const parent of ACCOUNT_PARENTS) {
          const table = `${parent}_${syncId}`
          yield* sql`ALTER TABLE ${sql(parent)} ATTACH PARTITION ${sql(table)} FOR VALUES IN (${sql.literal(partitionValue)})`
        }
        // Each month the sync staged replaces the account's partition of that month; its leaf already carries
        // the bound as a constraint, so attaching it needs no scan. The months every day of which is past
        // retention go whole; the others stay untouched.
        const months = yield* sql`
          SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = 'daily_metrics'::regclass AND c.relname ~ ${`^daily_metrics_${projectId}_m[0-9]{6}$`}`.pipe(
          Effect.flatMap(decodeRelations)
        )
        const keptFrom = firstKeptMonth(plan.windowEnd)
        for (const { relname } of months) {
          const month = monthOfPartition(relname)
          if (month !== undefined && month < keptFrom) yield* sql`DROP TABLE ${sql(relname)}`
        }
        for (const month of monthsFrom(plan.windowStart, plan.windowEnd)) {
          const leaf = stagedMonth(tables, month)
          const partition = monthPartition(projectId, month)
          yield* sql`DROP TABLE IF EXISTS ${sql(partition)}`
          yield* sql`ALTER TABLE ${sql(leaf)} RENAME TO ${sql(partition)}`
          yield* sql`
            ALTER TABLE daily_metrics ATTACH PARTITION ${sql(partition)}
            FOR VALUES FROM (${sql.literal(partitionValue)}, ${sql.literal(`'${month}'`)})
              TO (${sql.literal(partitionValue)}, ${sql.literal(`'${nextMonth(month)}'`)})`
        }
        yield* sql`
          INSERT INTO metric_generations (project_id, generation, sync_id) VALUES (${projectId}, ${syncId}, ${syncId})
          ON CONFLICT (project_id) DO UPDATE SET generation = excluded.generation, sync_id = excluded.sync_id`
      }))
      return rowsWritten
    })).pipe(Effect.orDie)

  return { swap } as const
}
