/**
 * Where each applied change happened, as place keys: the owner of table `change_places`, the confounders' side of the
 * guard's review (Watches.ts looks a watch's keys up in it, with what a confounder shows: kind, summary, reverted change). A change is keyed by its campaigns (`c:`), its ad
 * groups (`g:`) and its keywords (`k:`), and by what it changed whole: a campaign-level change (`C:`), an
 * ad-group-level one (`G:`). Reading them takes a recursive JSON path over the change's payload, the review's
 * costliest part when every batch did it again (bench/history.md); a change's places never move once it applied, so
 * each pass reads only the changes applied since the last.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { countOf } from "../db/Rows.ts"

/** How far back applied changes keep their places: the warehouse's reach, past any review's windows. */
const REACH_DAYS = 90
/**
 * Changes read in one call past which the table's statistics are taken at once: the review right after would otherwise
 * plan its lookups on none (autovacuum comes a minute later) and scan the table for each watch (bench/history.md).
 */
const ANALYZE_AFTER = 1_000

export class ChangePlaces extends Effect.Service<ChangePlaces>()("acs/ChangePlaces", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Records the places of the account's changes applied since the last call (and forgets those past the reach);
     * answers how many changes it read. A change with no place gets an empty key, so it is read once too.
     */
    const record = (projectId: string) =>
      Effect.gen(function*() {
        yield* sql`DELETE FROM change_places WHERE project_id = ${projectId} AND applied_at < now() - make_interval(days => ${REACH_DAYS})`
        const read = yield* sql`
          WITH unread AS (
            SELECT x.action_id, x.applied_at, x.kind, x.summary, x.revert_of,
              CASE WHEN x.kind = 'external_change'
                THEN array_remove(ARRAY[COALESCE(x.payload #>> '{entity,campaignId}',
                  CASE WHEN x.payload #>> '{entity,type}' = 'campaign' THEN x.payload #>> '{entity,id}' END)], NULL)
                ELSE ARRAY(SELECT DISTINCT v #>> '{}' FROM jsonb_path_query(x.payload, 'lax $.**.campaignId') v WHERE jsonb_typeof(v) = 'string')
              END AS campaigns,
              CASE WHEN x.kind = 'external_change'
                THEN array_remove(ARRAY[COALESCE(x.payload #>> '{entity,adGroupId}',
                  CASE WHEN x.payload #>> '{entity,type}' = 'adGroup' THEN x.payload #>> '{entity,id}' END)], NULL)
                ELSE ARRAY(SELECT DISTINCT v #>> '{}' FROM jsonb_path_query(x.payload, 'lax $.**.adGroupId') v WHERE jsonb_typeof(v) = 'string')
              END AS ad_groups,
              CASE WHEN x.kind = 'external_change'
                THEN CASE WHEN x.payload #>> '{entity,type}' = 'keyword' THEN ARRAY[x.payload #>> '{entity,id}'] ELSE '{}'::text[] END
                ELSE ARRAY(SELECT DISTINCT v #>> '{}' FROM jsonb_path_query(x.payload, 'lax $.**.keywordId') v WHERE jsonb_typeof(v) = 'string')
              END AS keywords
            FROM actions x
            WHERE x.project_id = ${projectId} AND x.created_at > now() - make_interval(days => ${REACH_DAYS})
              AND x.applied_at IS NOT NULL AND x.status IN ('applied', 'reverted')
              AND NOT EXISTS (SELECT 1 FROM change_places p WHERE p.project_id = x.project_id AND p.action_id = x.action_id)),
          written AS (
            INSERT INTO change_places (project_id, action_id, place, applied_at, kind, summary, revert_of)
            SELECT ${projectId}, u.action_id, k.place, u.applied_at, u.kind, u.summary, u.revert_of FROM unread u
            CROSS JOIN LATERAL (
              SELECT ''
              UNION ALL SELECT 'c:' || x FROM unnest(u.campaigns) x
              UNION ALL SELECT 'C:' || x FROM unnest(u.campaigns) x WHERE cardinality(u.ad_groups) = 0
              UNION ALL SELECT 'g:' || x FROM unnest(u.ad_groups) x
              UNION ALL SELECT 'G:' || x FROM unnest(u.ad_groups) x WHERE cardinality(u.keywords) = 0
              UNION ALL SELECT 'k:' || x FROM unnest(u.keywords) x) k(place)
            ON CONFLICT DO NOTHING)
          SELECT count(*)::int AS n FROM unread`.pipe(Effect.flatMap(countOf))
        if (read >= ANALYZE_AFTER) yield* sql`ANALYZE change_places`
        return read
      }).pipe(Effect.orDie, Effect.withSpan("ChangePlaces.record"))

    return { record } as const
  })
}) {}
