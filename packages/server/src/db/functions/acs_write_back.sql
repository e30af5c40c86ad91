-- Writes what an apply changed upstream into the warehouse, in the apply's transaction (worker/WarehouseWriteBack.ts).
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_write_back(project text, touched jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
    BEGIN
      -- Each part runs only when its key is there: a budget change touches one campaign and nothing else.
      IF touched ? 'campaigns' THEN
      WITH last AS (
        SELECT DISTINCT ON (e.v->>'campaignId') e.v FROM jsonb_array_elements(coalesce(touched->'campaigns', '[]')) WITH ORDINALITY AS e(v, n)
        ORDER BY e.v->>'campaignId', e.n DESC),
      gone AS (
        DELETE FROM campaigns c USING last
        WHERE coalesce((last.v->>'deleted')::boolean, false) AND c.project_id = project AND c.campaign_id = last.v->>'campaignId')
      INSERT INTO campaigns (project_id, campaign_id, name, adam_id, countries_or_regions, daily_budget_micros, status,
        bid_strategy, target_cpa_micros)
      SELECT project, v->>'campaignId', v->>'name', v->>'adamId', v->'countriesOrRegions', (v->>'dailyBudgetMicros')::int8,
        v->>'status', v->>'bidStrategy', (v->>'targetCpaMicros')::int8
      FROM last WHERE NOT coalesce((v->>'deleted')::boolean, false)
      ON CONFLICT (project_id, campaign_id) DO UPDATE SET name = EXCLUDED.name, adam_id = EXCLUDED.adam_id,
        countries_or_regions = EXCLUDED.countries_or_regions, daily_budget_micros = EXCLUDED.daily_budget_micros,
        status = EXCLUDED.status, bid_strategy = EXCLUDED.bid_strategy, target_cpa_micros = EXCLUDED.target_cpa_micros;
      END IF;

      IF touched ? 'adGroups' THEN
      WITH last AS (
        SELECT DISTINCT ON (e.v->>'adGroupId') e.v FROM jsonb_array_elements(coalesce(touched->'adGroups', '[]')) WITH ORDINALITY AS e(v, n)
        ORDER BY e.v->>'adGroupId', e.n DESC),
      gone AS (
        DELETE FROM ad_groups a USING last
        WHERE coalesce((last.v->>'deleted')::boolean, false) AND a.project_id = project AND a.ad_group_id = last.v->>'adGroupId')
      INSERT INTO ad_groups (project_id, ad_group_id, campaign_id, name, status, default_bid_micros, cpa_goal_micros, search_match)
      SELECT project, v->>'adGroupId', v->>'campaignId', v->>'name', v->>'status', (v->>'defaultBidMicros')::int8,
        (v->>'cpaGoalMicros')::int8, (v->>'searchMatch')::boolean
      FROM last WHERE NOT coalesce((v->>'deleted')::boolean, false)
      ON CONFLICT (project_id, ad_group_id) DO UPDATE SET name = EXCLUDED.name, status = EXCLUDED.status,
        default_bid_micros = EXCLUDED.default_bid_micros, cpa_goal_micros = EXCLUDED.cpa_goal_micros,
        search_match = EXCLUDED.search_match;
      END IF;

      IF touched ? 'keywords' THEN
      INSERT INTO keywords (project_id, keyword_id, ad_group_id, campaign_id, text, match_type, status, bid_micros)
      SELECT DISTINCT ON (e.v->>'keywordId') project, e.v->>'keywordId', e.v->>'adGroupId', e.v->>'campaignId', e.v->>'text',
        e.v->>'matchType', e.v->>'status', (e.v->>'bidMicros')::int8
      FROM jsonb_array_elements(coalesce(touched->'keywords', '[]')) WITH ORDINALITY AS e(v, n)
      WHERE NOT coalesce((e.v->>'deleted')::boolean, false)
      ORDER BY e.v->>'keywordId', e.n DESC
      ON CONFLICT (project_id, keyword_id) DO UPDATE SET status = EXCLUDED.status, bid_micros = EXCLUDED.bid_micros,
        match_type = EXCLUDED.match_type, text = EXCLUDED.text;
      END IF;

      IF touched ? 'negativeKeywords' THEN
      INSERT INTO negative_keywords (project_id, negative_keyword_id, campaign_id, ad_group_id, text, match_type, status)
      SELECT DISTINCT ON (e.v->>'negativeKeywordId') project, e.v->>'negativeKeywordId', e.v->>'campaignId', e.v->>'adGroupId',
        e.v->>'text', e.v->>'matchType', e.v->>'status'
      FROM jsonb_array_elements(coalesce(touched->'negativeKeywords', '[]')) WITH ORDINALITY AS e(v, n)
      WHERE NOT coalesce((e.v->>'deleted')::boolean, false)
      ORDER BY e.v->>'negativeKeywordId', e.n DESC
      ON CONFLICT (project_id, negative_keyword_id) DO UPDATE SET status = EXCLUDED.status;
      END IF;

      IF touched ? 'ads' THEN
      UPDATE ads SET name = last.v->>'name', status = last.v->>'status'
      FROM (SELECT DISTINCT ON (e.v->>'adId') e.v FROM jsonb_array_elements(coalesce(touched->'ads', '[]')) WITH ORDINALITY AS e(v, n)
        ORDER BY e.v->>'adId', e.n DESC) AS last
      WHERE ads.project_id = project AND ads.ad_id = last.v->>'adId';
      END IF;

      IF touched ? 'removedKeywords' OR touched ? 'keywords' THEN
      DELETE FROM keywords WHERE project_id = project AND keyword_id IN (
        SELECT jsonb_array_elements_text(coalesce(touched->'removedKeywords', '[]'))
        UNION ALL
        SELECT e->>'keywordId' FROM jsonb_array_elements(coalesce(touched->'keywords', '[]')) AS e WHERE coalesce((e->>'deleted')::boolean, false));
      END IF;

      IF touched ? 'removedNegativeKeywords' OR touched ? 'negativeKeywords' THEN
      DELETE FROM negative_keywords WHERE project_id = project AND negative_keyword_id IN (
        SELECT jsonb_array_elements_text(coalesce(touched->'removedNegativeKeywords', '[]'))
        UNION ALL
        SELECT e->>'negativeKeywordId' FROM jsonb_array_elements(coalesce(touched->'negativeKeywords', '[]')) AS e WHERE coalesce((e->>'deleted')::boolean, false));
      END IF;

      -- A removed ad group or campaign takes what lies under it.
      IF touched ? 'removedAdGroups' OR touched ? 'removedCampaigns' THEN
        DELETE FROM keywords WHERE project_id = project AND (ad_group_id IN (SELECT jsonb_array_elements_text(coalesce(touched->'removedAdGroups', '[]')))
          OR campaign_id IN (SELECT jsonb_array_elements_text(coalesce(touched->'removedCampaigns', '[]'))));
        DELETE FROM negative_keywords WHERE project_id = project AND (ad_group_id IN (SELECT jsonb_array_elements_text(coalesce(touched->'removedAdGroups', '[]')))
          OR campaign_id IN (SELECT jsonb_array_elements_text(coalesce(touched->'removedCampaigns', '[]'))));
        DELETE FROM ads WHERE project_id = project AND (ad_group_id IN (SELECT jsonb_array_elements_text(coalesce(touched->'removedAdGroups', '[]')))
          OR campaign_id IN (SELECT jsonb_array_elements_text(coalesce(touched->'removedCampaigns', '[]'))));
        DELETE FROM ad_groups WHERE project_id = project AND (ad_group_id IN (SELECT jsonb_array_elements_text(coalesce(touched->'removedAdGroups', '[]')))
          OR campaign_id IN (SELECT jsonb_array_elements_text(coalesce(touched->'removedCampaigns', '[]'))));
        DELETE FROM campaigns WHERE project_id = project AND campaign_id IN (SELECT jsonb_array_elements_text(coalesce(touched->'removedCampaigns', '[]')));
      END IF;
    END $function$
