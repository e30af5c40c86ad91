/**
 * Sync generations: `daily_metrics`, `search_terms` and `spend_suffixes` become tables partitioned by account,
 * one partition each per account holding exactly its current copy. A sync writes its rows once, into tables
 * of its own without indexes, builds their indexes in sorted passes, and its swap transaction replaces the
 * account's three partitions with them; `metric_generations` names each account's current generation (the
 * partitions are `<table>_<generation>`). The staging table goes.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP TABLE staged_metrics`
  yield* sql`ALTER TABLE daily_metrics RENAME TO daily_metrics_0002`
  yield* sql`ALTER TABLE search_terms RENAME TO search_terms_0002`
  yield* sql`ALTER TABLE spend_suffixes RENAME TO spend_suffixes_0002`
  // No foreign keys and no indexes on the parents: a partition attached with a foreign key would be checked
  // row by row against accounts, and each partition carries its own indexes, without the account column. A
  // partition exists only for an account that synced (metric_generations keeps the reference).
  yield* sql`
    CREATE TABLE daily_metrics (
      project_id text NOT NULL,
      level text NOT NULL CHECK (level IN ('campaigns', 'adGroups', 'keywords', 'searchTerms', 'ads')),
      entity_key text NOT NULL,
      day date NOT NULL,
      impressions int8 NOT NULL,
      taps int8 NOT NULL,
      installs int8 NOT NULL,
      spend_micros int8 NOT NULL
    ) PARTITION BY LIST (project_id)`
  yield* sql`
    CREATE TABLE search_terms (
      project_id text NOT NULL,
      entity_key text NOT NULL,
      campaign_id text NOT NULL,
      ad_group_id text NOT NULL,
      keyword_id text,
      text text
    ) PARTITION BY LIST (project_id)`
  yield* sql`
    CREATE TABLE spend_suffixes (
      project_id text NOT NULL,
      level text NOT NULL,
      entity_key text NOT NULL,
      campaign_id text NOT NULL,
      ad_group_id text,
      through_day date NOT NULL,
      spend int8[] NOT NULL
    ) PARTITION BY LIST (project_id)`
  yield* sql`
    CREATE TABLE metric_generations (
      project_id text PRIMARY KEY REFERENCES accounts (project_id),
      generation text NOT NULL UNIQUE,
      sync_id text
    )`
  // The existing copies move into one generation per account, named after it (project ids are [a-z0-9_]).
  const projects = yield* sql<{ projectId: string }>`
    SELECT project_id FROM daily_metrics_0002 UNION SELECT project_id FROM search_terms_0002
    UNION SELECT project_id FROM spend_suffixes_0002`
  for (const { projectId } of projects) {
    if (!/^[a-z0-9_]+$/.test(projectId)) return yield* Effect.dieMessage(`unexpected project id ${projectId}`)
    const bound = sql.literal(`'${projectId}'`)
    for (const parent of ["daily_metrics", "search_terms", "spend_suffixes"]) {
      const table = sql(`${parent}_${projectId}`)
      yield* sql`CREATE TABLE ${table} (LIKE ${sql(parent)} INCLUDING CONSTRAINTS)`
      yield* sql`INSERT INTO ${table} SELECT * FROM ${sql(`${parent}_0002`)} WHERE project_id = ${projectId}`
    }
    yield* sql`CREATE UNIQUE INDEX ON ${sql(`daily_metrics_${projectId}`)} (level, entity_key, day)`
    yield* sql`CREATE UNIQUE INDEX ON ${sql(`search_terms_${projectId}`)} (entity_key)`
    yield* sql`CREATE UNIQUE INDEX ON ${sql(`spend_suffixes_${projectId}`)} (level, entity_key)`
    yield* sql`CREATE INDEX ON ${sql(`spend_suffixes_${projectId}`)} (level, campaign_id)`
    yield* sql`CREATE INDEX ON ${sql(`spend_suffixes_${projectId}`)} (level, ad_group_id)`
    for (const parent of ["daily_metrics", "search_terms", "spend_suffixes"]) {
      yield* sql`ALTER TABLE ${sql(parent)} ATTACH PARTITION ${sql(`${parent}_${projectId}`)} FOR VALUES IN (${bound})`
    }
    yield* sql`INSERT INTO metric_generations (project_id, generation) VALUES (${projectId}, ${projectId})`
  }
  yield* sql`DROP TABLE daily_metrics_0002`
  yield* sql`DROP TABLE search_terms_0002`
  yield* sql`DROP TABLE spend_suffixes_0002`
})
