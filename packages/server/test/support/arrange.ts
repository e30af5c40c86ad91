/**
 * Arranging warehouse rows with SQL, for tests of what acs computes from them (plan, audits, keyword ideas).
 * The simulator's metrics follow from its seed and cannot be dialled through the platform's API, so a test
 * that needs "a keyword that spent 60 USD without an install" writes the daily rows a sync would have written.
 */
import type { Pipeline } from "./pipeline.ts"

export interface Totals {
  readonly spendMicros: number
  readonly taps: number
  readonly installs: number
}

/** The last day of the 30-day window (yesterday in the account's time zone), as the server computes it. */
export const windowEnd = async (p: Pipeline): Promise<string> =>
  (await p.sql<{ end: string }>(
    "SELECT ((now() AT TIME ZONE time_zone)::date - 1)::text AS end FROM accounts WHERE project_id = $1",
    [p.account.projectId]
  ))[0]!.end

/**
 * Replaces every daily row of one entity with `totals` spread over the `days` days ending at the window's end
 * (the remainder on the last day), so its 30-day sums are exactly `totals`.
 */
export const setDaily = async (p: Pipeline, level: string, entityKey: string, totals: Totals, days = 3): Promise<void> => {
  const end = await windowEnd(p)
  await p.sql("DELETE FROM daily_metrics WHERE project_id = $1 AND level = $2 AND entity_key = $3", [p.account.projectId, level, entityKey])
  const share = (value: number, i: number) => Math.floor(value / days) + (i === 0 ? value % days : 0)
  for (let i = 0; i < days; i++) {
    await p.sql(
      `INSERT INTO daily_metrics (project_id, level, entity_key, day, impressions, taps, installs, spend_micros)
       VALUES ($1, $2, $3, $4::date - $5::int, $6, $7, $8, $9)`,
      [p.account.projectId, level, entityKey, end, i, share(totals.taps, i) * 10, share(totals.taps, i), share(totals.installs, i),
        share(totals.spendMicros, i)]
    )
  }
}

/** A search term of an ad group (keywordId null: Search Match) with its 30-day totals. */
export const addSearchTerm = async (
  p: Pipeline,
  place: { readonly campaignId: string; readonly adGroupId: string; readonly keywordId: string | null },
  text: string,
  totals: Totals
): Promise<void> => {
  const entityKey = JSON.stringify([place.adGroupId, place.keywordId, text])
  await p.sql(
    `INSERT INTO search_terms (project_id, entity_key, campaign_id, ad_group_id, keyword_id, text) VALUES ($1, $2, $3, $4, $5, $6)`,
    [p.account.projectId, entityKey, place.campaignId, place.adGroupId, place.keywordId, text]
  )
  await setDaily(p, "searchTerms", entityKey, totals)
}

/** A keyword row in the warehouse only (the platform never hears of it): for checks that read the warehouse. */
export const addKeyword = async (
  p: Pipeline,
  keyword: { readonly keywordId: string; readonly campaignId: string; readonly adGroupId: string; readonly text: string; readonly matchType: string }
): Promise<void> => {
  await p.sql(
    `INSERT INTO keywords (project_id, keyword_id, ad_group_id, campaign_id, text, match_type, status, bid_micros)
     VALUES ($1, $2, $3, $4, $5, $6, 'ACTIVE', NULL)`,
    [p.account.projectId, keyword.keywordId, keyword.adGroupId, keyword.campaignId, keyword.text, keyword.matchType]
  )
}

/** The account's 30-day totals at campaign level: what the plan's account CPA is taken from. */
export const accountTotals = async (p: Pipeline): Promise<Totals> => {
  const end = await windowEnd(p)
  const row = (await p.sql<{ spend: string; taps: string; installs: string }>(
    `SELECT coalesce(sum(spend_micros), 0) AS spend, coalesce(sum(taps), 0) AS taps, coalesce(sum(installs), 0) AS installs
     FROM daily_metrics WHERE project_id = $1 AND level = 'campaigns' AND day BETWEEN $2::date - 29 AND $2::date`,
    [p.account.projectId, end]
  ))[0]!
  return { spendMicros: Number(row.spend), taps: Number(row.taps), installs: Number(row.installs) }
}

/** One campaign's 30-day totals. */
export const campaignTotals = async (p: Pipeline, campaignId: string): Promise<Totals> => {
  const end = await windowEnd(p)
  const row = (await p.sql<{ spend: string; taps: string; installs: string }>(
    `SELECT coalesce(sum(spend_micros), 0) AS spend, coalesce(sum(taps), 0) AS taps, coalesce(sum(installs), 0) AS installs
     FROM daily_metrics WHERE project_id = $1 AND level = 'campaigns' AND entity_key = $3 AND day BETWEEN $2::date - 29 AND $2::date`,
    [p.account.projectId, end, campaignId]
  ))[0]!
  return { spendMicros: Number(row.spend), taps: Number(row.taps), installs: Number(row.installs) }
}
