/**
 * Sync generations: `daily_metrics` becomes a table partitioned by account, one partition per account holding
 * exactly its current copy. A sync writes its rows once, into a table of its own without indexes, builds the
 * index in one sorted pass, and its swap transaction replaces the account's partition with that table;
 * `metric_generations` names each account's current partition. The staging table goes.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP TABLE staged_metrics`
  yield* sql`ALTER TABLE daily_metrics RENAME TO daily_metrics_0002`
  // No foreign key: a partition attached with one would be checked row by row against accounts, and a
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
    CREATE TABLE metric_generations (
      project_id text PRIMARY KEY REFERENCES accounts (project_id),
      table_name text NOT NULL UNIQUE,
      sync_id text
    )`
  // The existing copies move into one partition per account (project ids are [a-z0-9_], safe in a name).
  const projects = yield* sql<{ projectId: string }>`SELECT DISTINCT project_id FROM daily_metrics_0002`
  for (const { projectId } of projects) {
    if (!/^[a-z0-9_]+$/.test(projectId)) return yield* Effect.dieMessage(`unexpected project id ${projectId}`)
    const table = sql(`daily_metrics_${projectId}`)
    yield* sql`CREATE TABLE ${table} (LIKE daily_metrics INCLUDING CONSTRAINTS)`
    yield* sql`INSERT INTO ${table} SELECT * FROM daily_metrics_0002 WHERE project_id = ${projectId}`
    yield* sql`CREATE UNIQUE INDEX ON ${table} (level, entity_key, day)`
    yield* sql`ALTER TABLE daily_metrics ATTACH PARTITION ${table} FOR VALUES IN (${sql.literal(`'${projectId}'`)})`
    yield* sql`INSERT INTO metric_generations (project_id, table_name) VALUES (${projectId}, ${`daily_metrics_${projectId}`})`
  }
  yield* sql`DROP TABLE daily_metrics_0002`
})
