/**
 * The warehouse's daily rows in partitions per account and calendar month (docs/decisions/warehouse-and-reads.md
 * "Daily metrics in partitions per account and month"; warehouse/GenerationTables.ts): `daily_metrics` becomes
 * partitioned by range of `(project_id, day)`, one level, so Citus distributes it by `project_id` as before. Each
 * account's partition as it was is split into one partition per month its rows fall in, every row kept, each
 * named for its account and month (the name the next sync's swap looks for) with its unique key naming both
 * partition columns. The partitions by account go with the old parent.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { decodeRows } from "../Rows.ts"

/** The names and bounds warehouse/GenerationTables.ts gives an account's month (`monthPartition`, `nextMonth`). */
const monthPartition = (projectId: string, month: string) => `daily_metrics_${projectId}_m${month.slice(0, 4)}${month.slice(5, 7)}`
const nextMonth = (month: string) => {
  const d = new Date(`${month}T00:00:00Z`)
  d.setUTCMonth(d.getUTCMonth() + 1)
  return d.toISOString().slice(0, 10)
}

const decodeMonths = decodeRows(Schema.Struct({ project: Schema.String, month: Schema.String }))

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE daily_metrics RENAME TO daily_metrics_by_account`
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
    ) PARTITION BY RANGE (project_id, day)`
  const months = yield* sql`
    SELECT project_id AS project, date_trunc('month', day)::date::text AS month FROM daily_metrics_by_account
    GROUP BY 1, 2 ORDER BY 1, 2`.pipe(Effect.flatMap(decodeMonths))
  for (const { month, project: projectId } of months) {
    if (!/^[a-z0-9_]+$/.test(projectId)) return yield* Effect.dieMessage(`unexpected project id ${projectId}`)
    const bound = sql.literal(`'${projectId}'`)
    yield* sql`
      CREATE TABLE ${sql(monthPartition(projectId, month))} PARTITION OF daily_metrics
      FOR VALUES FROM (${bound}, ${sql.literal(`'${month}'`)}) TO (${bound}, ${sql.literal(`'${nextMonth(month)}'`)})`
  }
  // Each account's rows in one statement that routes them, then each month's key in one sorted pass.
  for (const projectId of new Set(months.map((m) => m.project))) {
    yield* sql`INSERT INTO daily_metrics SELECT * FROM daily_metrics_by_account WHERE project_id = ${projectId}`
  }
  for (const { month, project: projectId } of months) {
    const partition = monthPartition(projectId, month)
    yield* sql`CREATE UNIQUE INDEX ${sql(`${partition}_key`)} ON ${sql(partition)} (level, entity_key, day, project_id)`
  }
  yield* sql`DROP TABLE daily_metrics_by_account`
})
