-- The cooldown families and entities an action changes, as `family:EntityType:id` keys (`budget:Campaign:42`,
-- `bid:Keyword:7`, `status:AdGroup:9`): `actions.cooldown_keys` is generated from it, so an outside change starts a
-- cooldown as an acs change does (docs/contract.md 3.3). A payload that does not say gives none; it never fails.
-- PL/pgSQL, not SQL: its plan is kept per connection, where a SQL function this shape is planned at every call (each
-- insert and update of an action computes it).
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_cooldown_keys(kind text, payload jsonb)
 RETURNS text[]
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
    BEGIN
      RETURN (SELECT COALESCE(array_agg(DISTINCT key ORDER BY key), '{}') FROM (
        SELECT CASE kind
            WHEN 'budget_change' THEN 'budget:Campaign:' || (payload ->> 'campaignId')
            WHEN 'apply_recommendation' THEN CASE WHEN jsonb_typeof(payload -> 'newDailyBudgetMicros') = 'number'
              THEN 'budget:Campaign:' || (payload ->> 'campaignId') END
            WHEN 'campaign_status' THEN 'status:Campaign:' || (payload ->> 'campaignId')
            WHEN 'default_bid_change' THEN 'bid:AdGroup:' || (payload ->> 'adGroupId')
            WHEN 'ad_group_status' THEN 'status:AdGroup:' || (payload ->> 'adGroupId')
            WHEN 'ad_status' THEN 'status:Ad:' || (payload ->> 'adId')
          END AS key
        UNION ALL
        SELECT CASE kind WHEN 'keyword_bid_change' THEN 'bid:Keyword:' ELSE 'status:Keyword:' END || (k ->> 'keywordId')
        FROM jsonb_array_elements(CASE WHEN kind IN ('keyword_bid_change', 'keyword_status')
          AND jsonb_typeof(payload -> 'keywords') = 'array' THEN payload -> 'keywords' ELSE '[]' END) k
        UNION ALL
        SELECT CASE c ->> 'field'
            WHEN 'dailyBudgetMicros' THEN 'budget:'
            WHEN 'bidMicros' THEN 'bid:'
            WHEN 'defaultBidMicros' THEN 'bid:'
            WHEN 'status' THEN 'status:'
          END || CASE payload #>> '{entity,type}'
            WHEN 'campaign' THEN 'Campaign:'
            WHEN 'adGroup' THEN 'AdGroup:'
            WHEN 'keyword' THEN 'Keyword:'
            WHEN 'ad' THEN 'Ad:'
          END || (payload #>> '{entity,id}')
        FROM jsonb_array_elements(CASE WHEN kind = 'external_change'
          AND jsonb_typeof(payload -> 'changes') = 'array' THEN payload -> 'changes' ELSE '[]' END) c
      ) keys
      WHERE key IS NOT NULL);
    END $function$
