/**
 * Apple's recommendations in the warehouse (docs/contract.md 4.5), the owner of the `recommendations` table: after
 * each sync the account's are read per promoted app (the `adamId`s of its campaigns) and replace the stored ones
 * whole, in one transaction. Only v1 has them: with a v5 connection nothing is read and none are listed. A
 * recommendation's state as listed is the one Apple gave at the sync, overridden by acs's own applied apply or dismiss
 * of it since (found by its id in the ledger), and `expired` once its expiry has passed while still available.
 */
import type { RecommendationRow as Listed } from "@acs/domain/Recommendations"
import { DEFAULT_DAYS } from "@acs/domain/Warehouse"
import type { UpstreamClient, UpstreamRecommendation } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { freshnessFor } from "./Reads.ts"
import { decodeRows } from "../db/Rows.ts"
import { windowEndingYesterday } from "./Window.ts"

const Week = Schema.Struct({ installs: Schema.Number, spendMicros: Schema.Number, cpaMicros: Schema.NullOr(Schema.Number) })

/** A stored recommendation, its state already the effective one (`available`, `applied` or `dismissed`). */
export const RecommendationRow = Schema.Struct({
  recommendationId: Schema.String,
  type: Schema.Literal("daily_cap", "target_cpa"),
  adamId: Schema.String,
  campaignId: Schema.String,
  campaignName: Schema.String,
  state: Schema.Literal("available", "applied", "dismissed"),
  currentMicros: Schema.NullOr(Schema.NumberFromString),
  recommendedMicros: Schema.NumberFromString,
  lastWeek: Week,
  expected: Week,
  expiresAt: Schema.String,
  syncedAt: Schema.String
})
export type RecommendationRow = typeof RecommendationRow.Type
const decode = decodeRows(RecommendationRow)

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** The select list, with the state overridden by acs's own apply or dismiss applied since the sync. */
const SELECT = `r.recommendation_id, r.type, r.adam_id, r.campaign_id, r.campaign_name,
  COALESCE((SELECT CASE a.kind WHEN 'apply_recommendation' THEN 'applied' ELSE 'dismissed' END FROM actions a
    WHERE a.project_id = r.project_id AND a.kind IN ('apply_recommendation', 'dismiss_recommendation')
      AND a.payload ->> 'recommendationId' = r.recommendation_id AND a.applied_at IS NOT NULL
    ORDER BY a.applied_at DESC LIMIT 1), r.state) AS state,
  r.current_micros::text AS current_micros, r.recommended_micros::text AS recommended_micros, r.last_week, r.expected,
  ${iso("r.expires_at")} AS expires_at, ${iso("r.synced_at")} AS synced_at`

/** One recommendation of the account as acs knows it now, on the caller's connection (the kinds' checks). */
export const readRecommendation = (projectId: string, recommendationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`SELECT ${sql.unsafe(SELECT)} FROM recommendations r
      WHERE r.project_id = ${projectId} AND r.recommendation_id = ${recommendationId}`.pipe(
      Effect.orDie,
      Effect.flatMap(decode),
      Effect.map((rows) => rows[0])
    ))

/** Whether it has expired at `now` (ms). */
export const isExpired = (row: { readonly expiresAt: string }, now: number) => Date.parse(row.expiresAt) <= now

const listed = (row: RecommendationRow, now: number): Listed => ({
  ...row,
  state: row.state === "available" && isExpired(row, now) ? "expired" : row.state
})

/** What one read of the platform gives, as the row to store (snake_case: the names `jsonb_to_recordset` reads). */
const stored = (r: UpstreamRecommendation) => ({
  recommendation_id: r.recommendationId,
  type: r.type,
  adam_id: r.adamId,
  campaign_id: r.campaignId,
  campaign_name: r.campaignName,
  state: r.state,
  current_micros: r.currentMicros,
  recommended_micros: r.recommendedMicros,
  last_week: r.lastWeek,
  expected: r.expected,
  expires_at: r.expiresAt
})

const COLUMNS = `recommendation_id text, type text, adam_id text, campaign_id text, campaign_name text, state text,
  current_micros int8, recommended_micros int8, last_week jsonb, expected jsonb, expires_at timestamptz`

export class Recommendations extends Effect.Service<Recommendations>()("acs/Recommendations", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Reads the account's recommendations from the platform and replaces the stored ones (after a sync). */
    const sync = (client: UpstreamClient, account: AccountRecord) =>
      Effect.gen(function*() {
        const read = client.recommendations
        if (read === undefined) return 0
        const apps = yield* sql`SELECT DISTINCT adam_id FROM campaigns WHERE project_id = ${account.projectId} ORDER BY adam_id`.pipe(
          Effect.orDie,
          Effect.flatMap(decodeRows(Schema.Struct({ adamId: Schema.String })))
        )
        const found = yield* Effect.forEach(apps, ({ adamId }) => read(account.upstreamAccountId, adamId), { concurrency: 2 })
        // One per id: an id Apple lists twice (under two apps) is kept once.
        const unique = [...new Map(found.flat().map((r) => [r.recommendationId, r])).values()]
        const syncedAt = new Date(yield* Clock.currentTimeMillis).toISOString()
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`DELETE FROM recommendations WHERE project_id = ${account.projectId}`
          if (unique.length === 0) return
          yield* sql`
            INSERT INTO recommendations (project_id, recommendation_id, type, adam_id, campaign_id, campaign_name, state,
              current_micros, recommended_micros, last_week, expected, expires_at, synced_at)
            SELECT ${account.projectId}, x.recommendation_id, x.type, x.adam_id, x.campaign_id, x.campaign_name, x.state,
              x.current_micros, x.recommended_micros, x.last_week, x.expected, x.expires_at, ${syncedAt}::timestamptz
            FROM jsonb_to_recordset(${JSON.stringify(unique.map(stored))}::jsonb) AS x(${sql.unsafe(COLUMNS)})`
        })).pipe(Effect.orDie)
        return unique.length
      }).pipe(Effect.withSpan("Recommendations.sync"))

    /** The account's recommendations, those expiring first first; narrowed to a campaign when asked. */
    const list = (account: AccountRecord, campaignId: string | undefined) =>
      Effect.gen(function*() {
        const rows = yield* sql`SELECT ${sql.unsafe(SELECT)} FROM recommendations r WHERE r.project_id = ${account.projectId}
          ${campaignId === undefined ? sql`` : sql`AND r.campaign_id = ${campaignId}`}
          ORDER BY r.expires_at, r.recommendation_id`.pipe(Effect.orDie, Effect.flatMap(decode))
        const now = yield* Clock.currentTimeMillis
        return {
          recommendations: rows.map((row) => listed(row, now)),
          total: rows.length,
          truncated: false,
          dataFreshness: freshnessFor(account, windowEndingYesterday(now, account.timeZone, DEFAULT_DAYS), now)
        }
      }).pipe(Effect.withSpan("Recommendations.list"))

    return { sync, list } as const
  })
}) {}
