/**
 * After an apply, the warehouse copy of what it touched is brought up to date from the upstream's own answers,
 * so reads and the next proposal's validation see the change without waiting for a sync.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Touched } from "../actions/Kind.ts"
import { HOT_SPAN } from "../db/HotSpan.ts"

export const writeBack = (projectId: string, touched: Touched) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const c of touched.campaigns ?? []) {
      if (c.deleted) {
        yield* sql`DELETE FROM campaigns WHERE project_id = ${projectId} AND campaign_id = ${c.campaignId}`
        continue
      }
      yield* sql`
        INSERT INTO campaigns (project_id, campaign_id, name, adam_id, countries_or_regions, daily_budget_micros, status,
          bid_strategy, target_cpa_micros)
        VALUES (${projectId}, ${c.campaignId}, ${c.name}, ${c.adamId}, ${JSON.stringify(c.countriesOrRegions)}::jsonb,
          ${c.dailyBudgetMicros}, ${c.status}, ${c.bidStrategy}, ${c.targetCpaMicros})
        ON CONFLICT (project_id, campaign_id) DO UPDATE SET name = EXCLUDED.name, adam_id = EXCLUDED.adam_id,
          countries_or_regions = EXCLUDED.countries_or_regions, daily_budget_micros = EXCLUDED.daily_budget_micros,
          status = EXCLUDED.status, bid_strategy = EXCLUDED.bid_strategy, target_cpa_micros = EXCLUDED.target_cpa_micros`
    }
    for (const a of touched.adGroups ?? []) {
      if (a.deleted) {
        yield* sql`DELETE FROM ad_groups WHERE project_id = ${projectId} AND ad_group_id = ${a.adGroupId}`
        continue
      }
      yield* sql`
        INSERT INTO ad_groups (project_id, ad_group_id, campaign_id, name, status, default_bid_micros, cpa_goal_micros, search_match)
        VALUES (${projectId}, ${a.adGroupId}, ${a.campaignId}, ${a.name}, ${a.status}, ${a.defaultBidMicros}, ${a.cpaGoalMicros},
          ${a.searchMatch})
        ON CONFLICT (project_id, ad_group_id) DO UPDATE SET name = EXCLUDED.name, status = EXCLUDED.status,
          default_bid_micros = EXCLUDED.default_bid_micros, cpa_goal_micros = EXCLUDED.cpa_goal_micros,
          search_match = EXCLUDED.search_match`
    }
    const keywords = (touched.keywords ?? []).filter((k) => !k.deleted)
    if (keywords.length > 0) {
      yield* sql`
        INSERT INTO keywords (project_id, keyword_id, ad_group_id, campaign_id, text, match_type, status, bid_micros)
        SELECT ${projectId}, * FROM unnest(
          ${keywords.map((k) => k.keywordId)}::text[], ${keywords.map((k) => k.adGroupId)}::text[],
          ${keywords.map((k) => k.campaignId)}::text[], ${keywords.map((k) => k.text)}::text[],
          ${keywords.map((k) => k.matchType)}::text[], ${keywords.map((k) => k.status)}::text[],
          ${keywords.map((k) => k.bidMicros)}::int8[])
        ON CONFLICT (project_id, keyword_id) DO UPDATE SET status = EXCLUDED.status, bid_micros = EXCLUDED.bid_micros,
          match_type = EXCLUDED.match_type, text = EXCLUDED.text`
    }
    const negatives = (touched.negativeKeywords ?? []).filter((n) => !n.deleted)
    if (negatives.length > 0) {
      yield* sql`
        INSERT INTO negative_keywords (project_id, negative_keyword_id, campaign_id, ad_group_id, text, match_type, status)
        SELECT ${projectId}, * FROM unnest(
          ${negatives.map((n) => n.negativeKeywordId)}::text[], ${negatives.map((n) => n.campaignId)}::text[],
          ${negatives.map((n) => n.adGroupId)}::text[], ${negatives.map((n) => n.text)}::text[],
          ${negatives.map((n) => n.matchType)}::text[], ${negatives.map((n) => n.status)}::text[])
        ON CONFLICT (project_id, negative_keyword_id) DO UPDATE SET status = EXCLUDED.status`
    }
    for (const ad of touched.ads ?? []) {
      yield* sql`UPDATE ads SET name = ${ad.name}, status = ${ad.status} WHERE project_id = ${projectId} AND ad_id = ${ad.adId}`
    }
    const removedKeywords = [
      ...(touched.removedKeywords ?? []),
      ...(touched.keywords ?? []).filter((k) => k.deleted).map((k) => k.keywordId)
    ]
    if (removedKeywords.length > 0) {
      yield* sql`DELETE FROM keywords WHERE project_id = ${projectId} AND keyword_id = ANY(${removedKeywords}::text[])`
    }
    const removedNegatives = [
      ...(touched.removedNegativeKeywords ?? []),
      ...(touched.negativeKeywords ?? []).filter((n) => n.deleted).map((n) => n.negativeKeywordId)
    ]
    if (removedNegatives.length > 0) {
      yield* sql`DELETE FROM negative_keywords WHERE project_id = ${projectId}
        AND negative_keyword_id = ANY(${removedNegatives}::text[])`
    }
    for (const adGroupId of touched.removedAdGroups ?? []) {
      yield* sql`DELETE FROM keywords WHERE project_id = ${projectId} AND ad_group_id = ${adGroupId}`
      yield* sql`DELETE FROM negative_keywords WHERE project_id = ${projectId} AND ad_group_id = ${adGroupId}`
      yield* sql`DELETE FROM ads WHERE project_id = ${projectId} AND ad_group_id = ${adGroupId}`
      yield* sql`DELETE FROM ad_groups WHERE project_id = ${projectId} AND ad_group_id = ${adGroupId}`
    }
    for (const campaignId of touched.removedCampaigns ?? []) {
      for (const table of ["keywords", "negative_keywords", "ads", "ad_groups", "campaigns"] as const) {
        yield* sql`DELETE FROM ${sql(table)} WHERE project_id = ${projectId} AND campaign_id = ${campaignId}`
      }
    }
  }).pipe(Effect.orDie, Effect.withSpan("Warehouse.writeBack", HOT_SPAN))
