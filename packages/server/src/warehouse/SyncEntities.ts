/** The account's entities: read whole from the upstream, then replaced in one go inside the swap. */
import type { UpstreamCampaign, UpstreamClient } from "@acs/upstream/Upstream"
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export const CAMPAIGN_CONCURRENCY = 3
const AD_GROUP_CONCURRENCY = 8

/** Ad groups, keywords (one paged campaign-wide find per campaign), negatives and ads of every campaign. */
export const readEntities = (client: UpstreamClient, accountId: string, campaigns: ReadonlyArray<UpstreamCampaign>) =>
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

export type Entities = Effect.Effect.Success<ReturnType<typeof readEntities>> & { readonly readOnly: boolean }

export const makeEntityWrites = (sql: SqlClient.SqlClient) => {
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

  return { replaceEntities } as const
}
