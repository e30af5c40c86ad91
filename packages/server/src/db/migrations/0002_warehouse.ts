/**
 * The warehouse: each account's entities, its daily metrics per level, the per-entity spend suffixes
 * that make spend-ranked window reads cheap, and the sync history.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE campaigns (
      project_id text NOT NULL REFERENCES accounts (project_id),
      campaign_id text NOT NULL,
      name text NOT NULL,
      adam_id text NOT NULL,
      countries_or_regions jsonb NOT NULL DEFAULT '[]',
      daily_budget_micros int8,
      status text NOT NULL,
      bid_strategy text NOT NULL,
      target_cpa_micros int8,
      PRIMARY KEY (project_id, campaign_id)
    )`
  yield* sql`
    CREATE TABLE ad_groups (
      project_id text NOT NULL REFERENCES accounts (project_id),
      ad_group_id text NOT NULL,
      campaign_id text NOT NULL,
      name text NOT NULL,
      status text NOT NULL,
      default_bid_micros int8 NOT NULL,
      cpa_goal_micros int8,
      search_match boolean NOT NULL,
      PRIMARY KEY (project_id, ad_group_id)
    )`
  yield* sql`
    CREATE TABLE keywords (
      project_id text NOT NULL REFERENCES accounts (project_id),
      keyword_id text NOT NULL,
      ad_group_id text NOT NULL,
      campaign_id text NOT NULL,
      text text NOT NULL,
      match_type text NOT NULL,
      status text NOT NULL,
      bid_micros int8,
      PRIMARY KEY (project_id, keyword_id)
    )`
  yield* sql`
    CREATE TABLE negative_keywords (
      project_id text NOT NULL REFERENCES accounts (project_id),
      negative_keyword_id text NOT NULL,
      campaign_id text NOT NULL,
      ad_group_id text,
      text text NOT NULL,
      match_type text NOT NULL,
      status text NOT NULL,
      PRIMARY KEY (project_id, negative_keyword_id)
    )`
  yield* sql`
    CREATE TABLE ads (
      project_id text NOT NULL REFERENCES accounts (project_id),
      ad_id text NOT NULL,
      ad_group_id text NOT NULL,
      campaign_id text NOT NULL,
      name text NOT NULL,
      creative_type text NOT NULL,
      status text NOT NULL,
      PRIMARY KEY (project_id, ad_id)
    )`
  // One row per entity per day with activity. `entity_key` is the entity's id, or for a search term the
  // JSON array [adGroupId, keywordId, term] (keywordId null for Search Match, term null when hidden).
  yield* sql`
    CREATE TABLE daily_metrics (
      project_id text NOT NULL REFERENCES accounts (project_id),
      level text NOT NULL CHECK (level IN ('campaigns', 'adGroups', 'keywords', 'searchTerms', 'ads')),
      entity_key text NOT NULL,
      day date NOT NULL,
      impressions int8 NOT NULL,
      taps int8 NOT NULL,
      installs int8 NOT NULL,
      spend_micros int8 NOT NULL,
      PRIMARY KEY (project_id, level, entity_key, day)
    )`
  // Search terms are known only from reports: the ones with activity in the retained days. `text` is null for
  // the low-volume terms the platform reports without their text.
  yield* sql`
    CREATE TABLE search_terms (
      project_id text NOT NULL REFERENCES accounts (project_id),
      entity_key text NOT NULL,
      campaign_id text NOT NULL,
      ad_group_id text NOT NULL,
      keyword_id text,
      text text,
      PRIMARY KEY (project_id, entity_key)
    )`
  // What spend ranking needs: per entity with any spend in the last 90 synced days, spend[d] is its spend
  // over the d days ending through_day. A window's top rows are then one array read per active entity
  // instead of a scan and aggregation of every daily row.
  yield* sql`
    CREATE TABLE spend_suffixes (
      project_id text NOT NULL REFERENCES accounts (project_id),
      level text NOT NULL,
      entity_key text NOT NULL,
      campaign_id text NOT NULL,
      ad_group_id text,
      through_day date NOT NULL,
      spend int8[] NOT NULL,
      PRIMARY KEY (project_id, level, entity_key)
    )`
  yield* sql`CREATE INDEX spend_suffixes_campaign ON spend_suffixes (project_id, level, campaign_id)`
  yield* sql`CREATE INDEX spend_suffixes_ad_group ON spend_suffixes (project_id, level, ad_group_id)`
  yield* sql`
    CREATE TABLE syncs (
      sync_id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES accounts (project_id),
      org_id text NOT NULL REFERENCES orgs (org_id),
      status text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
      trigger text NOT NULL CHECK (trigger IN ('manual', 'schedule', 'import')),
      started_at timestamptz NOT NULL DEFAULT now(),
      heartbeat_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      window_start date,
      window_end date,
      rows_written int8 NOT NULL DEFAULT 0,
      progress jsonb NOT NULL DEFAULT '{}',
      error text
    )`
  // At most one running sync per account, whichever instance started it.
  yield* sql`CREATE UNIQUE INDEX syncs_one_running ON syncs (project_id) WHERE status = 'running'`
  yield* sql`CREATE INDEX syncs_history ON syncs (project_id, started_at DESC)`
  yield* sql`
    CREATE UNLOGGED TABLE staged_metrics (
      sync_id text NOT NULL,
      level text NOT NULL,
      entity_key text NOT NULL,
      campaign_id text NOT NULL,
      ad_group_id text,
      keyword_id text,
      search_term text,
      day date NOT NULL,
      impressions int8 NOT NULL,
      taps int8 NOT NULL,
      installs int8 NOT NULL,
      spend_micros int8 NOT NULL
    )`
  yield* sql`CREATE INDEX staged_metrics_sync ON staged_metrics (sync_id)`
})
