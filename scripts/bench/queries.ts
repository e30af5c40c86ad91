/**
 * The two ways to answer `GET keywords?days=N&limit=L` with bare `pg`:
 *
 * - the obvious aggregate SQL: every keyword left-joined with its daily rows in the window, summed per
 *   keyword, ordered by spend descending then keyword id, limited, with the total count;
 * - acs's own ranked read, statement for statement as `packages/server/src/warehouse/Reads.ts` issues it
 *   for the keywords level without narrowing (count, top spenders from `spend_suffixes`, the fill of
 *   non-spenders when there are fewer spenders than the limit, the entity rows, the window metrics of just
 *   those rows), in the same order and with the same parameters.
 */
import { daysBetween, type MetricWindow, windowEndingYesterday } from "../../packages/server/src/warehouse/Window.ts"
import { metricsOf } from "../../packages/server/src/warehouse/Reads.ts"
import type { Pool } from "./pg.ts"

export interface BenchAccount {
  readonly projectId: string
  readonly timeZone: string
  /** YYYY-MM-DD or null before the first sync. */
  readonly lastSyncedDay: string | null
}

export interface KeywordResult {
  readonly keywordId: string
  readonly adGroupId: string
  readonly campaignId: string
  readonly text: string
  readonly matchType: string
  readonly status: string
  readonly bidMicros: number | null
  readonly impressions: number
  readonly taps: number
  readonly installs: number
  readonly spendMicros: number
  readonly avgCptMicros: number | null
  readonly cpaMicros: number | null
  readonly ttr: number | null
  readonly conversionRate: number | null
}

export interface KeywordPage {
  readonly keywords: ReadonlyArray<KeywordResult>
  readonly total: number
  readonly truncated: boolean
}

type Numeric = string | number | null | undefined

const num = (value: Numeric): number => (value === null || value === undefined ? 0 : Number(value))
const numOrNull = (value: Numeric): number | null => (value === null || value === undefined ? null : Number(value))


interface EntityRow {
  readonly keyword_id: string
  readonly ad_group_id: string
  readonly campaign_id: string
  readonly text: string
  readonly match_type: string
  readonly status: string
  readonly bid_micros: Numeric
}

interface SumRow {
  readonly impressions: Numeric
  readonly taps: Numeric
  readonly installs: Numeric
  readonly spend_micros: Numeric
}

const entityFields = (row: EntityRow) => ({
  keywordId: row.keyword_id,
  adGroupId: row.ad_group_id,
  campaignId: row.campaign_id,
  text: row.text,
  matchType: row.match_type,
  status: row.status,
  bidMicros: numOrNull(row.bid_micros)
})

const sums = (row: SumRow | undefined) =>
  metricsOf({
    impressions: num(row?.impressions),
    taps: num(row?.taps),
    installs: num(row?.installs),
    spendMicros: num(row?.spend_micros)
  })

export const OBVIOUS_SQL = `
SELECT k.keyword_id, k.ad_group_id, k.campaign_id, k.text, k.match_type, k.status, k.bid_micros,
  coalesce(sum(m.impressions), 0) AS impressions, coalesce(sum(m.taps), 0) AS taps,
  coalesce(sum(m.installs), 0) AS installs, coalesce(sum(m.spend_micros), 0) AS spend_micros,
  count(*) OVER () AS total
FROM keywords k
LEFT JOIN daily_metrics m
  ON m.project_id = k.project_id AND m.level = 'keywords' AND m.entity_key = k.keyword_id
  AND m.day BETWEEN $2::date AND $3::date
WHERE k.project_id = $1
GROUP BY k.project_id, k.keyword_id
ORDER BY coalesce(sum(m.spend_micros), 0) DESC, k.keyword_id
LIMIT $4`

export const obviousParams = (account: BenchAccount, window: MetricWindow, limit: number): Array<unknown> => [
  account.projectId,
  window.start,
  window.end,
  limit
]

/** The obvious aggregate SQL, one statement. */
export const obviousKeywords = async (pool: Pool, account: BenchAccount, days: number, limit: number): Promise<KeywordPage> => {
  const window = windowEndingYesterday(Date.now(), account.timeZone, days)
  const result = await pool.query<EntityRow & SumRow & { total: Numeric }>(OBVIOUS_SQL, obviousParams(account, window, limit))
  const keywords = result.rows.map((row) => ({ ...entityFields(row), ...sums(row) }))
  const total = result.rows.length === 0 ? 0 : num(result.rows[0]?.total)
  return { keywords, total, truncated: keywords.length < total }
}

/** The statements acs's keyword read sends (Reads.ts: rank, then load + windowMetrics), as sent. */
export const ACS_SQL = {
  count: `SELECT count(*)::int AS n FROM keywords WHERE project_id = $1 AND TRUE`,
  spenders: `
            SELECT entity_key, spend[$1] AS spend FROM spend_suffixes
            WHERE project_id = $2 AND level = $3 AND spend[$4] > 0 AND TRUE
            ORDER BY spend[$5] DESC, entity_key LIMIT $6`,
  fillWithSpend: `
            SELECT keyword_id AS entity_key FROM keywords e
            WHERE e.project_id = $1 AND TRUE
              AND NOT EXISTS (
                SELECT 1 FROM spend_suffixes s
                WHERE s.project_id = e.project_id AND s.level = $2 AND s.entity_key = e.keyword_id AND s.spend[$3] > 0)
            ORDER BY keyword_id LIMIT $4`,
  fillNoSpend: `
            SELECT keyword_id AS entity_key FROM keywords e
            WHERE e.project_id = $1 AND TRUE
              AND NOT EXISTS (
                SELECT 1 FROM spend_suffixes s
                WHERE s.project_id = e.project_id AND s.level = $2 AND s.entity_key = e.keyword_id AND FALSE)
            ORDER BY keyword_id LIMIT $3`,
  entities: `SELECT * FROM keywords WHERE project_id = $1 AND keyword_id = ANY($2::text[])`,
  metrics: `
          SELECT entity_key, sum(impressions) AS impressions, sum(taps) AS taps, sum(installs) AS installs,
            sum(spend_micros) AS spend_micros
          FROM daily_metrics
          WHERE project_id = $1 AND level = $2 AND entity_key = ANY($3::text[])
            AND day BETWEEN $4 AND $5
          GROUP BY entity_key`
} as const

/** How many suffix days cover the window (Reads.rank). */
export const suffixDays = (account: BenchAccount, window: MetricWindow): number => {
  const lag = account.lastSyncedDay === null ? window.days : daysBetween(account.lastSyncedDay, window.end)
  return Math.min(90, window.days - Math.max(0, lag))
}

/** acs's keyword read through bare `pg`: the same statements, sequentially, as acs runs them. */
export const acsKeywords = async (pool: Pool, account: BenchAccount, days: number, limit: number): Promise<KeywordPage> => {
  const window = windowEndingYesterday(Date.now(), account.timeZone, days)
  const d = suffixDays(account, window)
  const projectId = account.projectId
  const totalRows = await pool.query<{ n: number }>(ACS_SQL.count, [projectId])
  const spenders = d <= 0
    ? []
    : (await pool.query<{ entity_key: string }>(ACS_SQL.spenders, [d, projectId, "keywords", d, d, limit])).rows
  const ranked = spenders.map((row) => row.entity_key)
  if (ranked.length < limit) {
    const fill = d > 0
      ? await pool.query<{ entity_key: string }>(ACS_SQL.fillWithSpend, [projectId, "keywords", d, limit - ranked.length])
      : await pool.query<{ entity_key: string }>(ACS_SQL.fillNoSpend, [projectId, "keywords", limit - ranked.length])
    ranked.push(...fill.rows.map((row) => row.entity_key))
  }
  const total = totalRows.rows[0]?.n ?? 0
  if (ranked.length === 0) return { keywords: [], total, truncated: total > 0 }
  const entities = await pool.query<EntityRow>(ACS_SQL.entities, [projectId, ranked])
  const metrics = await pool.query<SumRow & { entity_key: string }>(ACS_SQL.metrics, [
    projectId,
    "keywords",
    ranked,
    window.start,
    window.end
  ])
  const byKey = new Map(entities.rows.map((row) => [row.keyword_id, row]))
  const metricsByKey = new Map(metrics.rows.map((row) => [row.entity_key, row]))
  const keywords = ranked.flatMap((key) => {
    const row = byKey.get(key)
    return row === undefined ? [] : [{ ...entityFields(row), ...sums(metricsByKey.get(key)) }]
  })
  return { keywords, total, truncated: keywords.length < total }
}

/**
 * The ledger page (`GET actions?limit=L[&before=T]`) as acs's Ledger.list issues it: the same select list
 * (ActionRow.ts's actionColumns and the guard's watch), one row more than the limit to know whether a page follows.
 */
const LEDGER_PAGE_SELECT = `
        SELECT action_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason, payload, result,
          warnings, failure, proposed_by, decided_by, decision_reason, approvals,
          to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at_iso,
          to_char(decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS decided_at_iso,
          to_char(applied_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS applied_at_iso,
          revert_of, reverted_by, superseded_by, changeset_id, depends_on,
          (SELECT w.record FROM watches w
            WHERE w.project_id = actions.project_id AND w.watch_id = COALESCE(actions.changeset_id, actions.action_id)) AS watch
        FROM actions`

export const LEDGER_PAGE_SQL = {
  first: `${LEDGER_PAGE_SELECT}
        WHERE project_id = $1
        ORDER BY created_at DESC
        LIMIT $2`,
  before: `${LEDGER_PAGE_SELECT}
        WHERE project_id = $1 AND created_at < $3::timestamptz
        ORDER BY created_at DESC
        LIMIT $2`
} as const

interface LedgerRow {
  readonly action_id: string
  readonly project_id: string
  readonly kind: string
  readonly mode: string | null
  readonly status: string
  readonly risk_tier: string
  readonly policy_reasons: unknown
  readonly summary: string
  readonly reason: string
  readonly payload: unknown
  readonly result: unknown
  readonly warnings: unknown
  readonly failure: unknown
  readonly proposed_by: unknown
  readonly decided_by: unknown
  readonly decision_reason: string | null
  readonly approvals: unknown
  readonly created_at_iso: string
  readonly decided_at_iso: string | null
  readonly applied_at_iso: string | null
  readonly revert_of: string | null
  readonly reverted_by: string | null
  readonly superseded_by: string | null
  readonly changeset_id: string | null
  readonly depends_on: ReadonlyArray<string>
  readonly watch: unknown
}

/** A ledger page through bare `pg`, shaped as acs answers it (`{actions, nextBefore}`). */
export const ledgerPage = async (pool: Pool, projectId: string, limit: number, before: string | undefined) => {
  const result = before === undefined
    ? await pool.query<LedgerRow>(LEDGER_PAGE_SQL.first, [projectId, limit + 1])
    : await pool.query<LedgerRow>(LEDGER_PAGE_SQL.before, [projectId, limit + 1, before])
  const actions = result.rows.slice(0, limit).map((row) => ({
    actionId: row.action_id,
    projectId: row.project_id,
    kind: row.kind,
    mode: row.mode,
    status: row.status,
    riskTier: row.risk_tier,
    policyReasons: row.policy_reasons,
    summary: row.summary,
    reason: row.reason,
    payload: row.payload,
    result: row.result,
    warnings: row.warnings ?? [],
    failure: row.failure,
    proposedBy: row.proposed_by,
    decidedBy: row.decided_by,
    decisionReason: row.decision_reason,
    created_at: row.created_at_iso,
    decidedAt: row.decided_at_iso,
    appliedAt: row.applied_at_iso,
    revertOf: row.revert_of,
    revertedBy: row.reverted_by,
    supersededBy: row.superseded_by,
    approvals: row.approvals,
    changesetId: row.changeset_id,
    dependsOn: row.depends_on,
    watch: row.watch
  }))
  return { actions, nextBefore: result.rows.length > limit ? (actions[actions.length - 1]?.created_at ?? null) : null }
}
