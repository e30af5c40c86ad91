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
import { monthPartition, monthsFrom, nextMonth } from "../../warehouse/GenerationTables.ts"
import { decodeRows } from "../Rows.ts"

const decodeSpans = decodeRows(Schema.Struct({ projectId: Schema.String, first: Schema.String, last: Schema.String }))

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
  const spans = yield* sql`
    SELECT project_id, min(day)::text AS first, max(day)::text AS last FROM daily_metrics_by_account GROUP BY project_id`.pipe(
    Effect.flatMap(decodeSpans)
  )
  for (const { first, last, projectId } of spans) {
    if (!/^[a-z0-9_]+$/.test(projectId)) return yield* Effect.dieMessage(`unexpected project id ${projectId}`)
    const bound = sql.literal(`'${projectId}'`)
    for (const month of monthsFrom(first, last)) {
      const partition = monthPartition(projectId, month)
      yield* sql`
        CREATE TABLE ${sql(partition)} PARTITION OF daily_metrics
        FOR VALUES FROM (${bound}, ${sql.literal(`'${month}'`)}) TO (${bound}, ${sql.literal(`'${nextMonth(month)}'`)})`
    }
    // Rows first, then each month's key in one sorted pass.
    yield* sql`INSERT INTO daily_metrics SELECT * FROM daily_metrics_by_account WHERE project_id = ${projectId}`
    for (const month of monthsFrom(first, last)) {
      const partition = monthPartition(projectId, month)
      yield* sql`CREATE UNIQUE INDEX ${sql(`${partition}_key`)} ON ${sql(partition)} (level, entity_key, day, project_id)`
    }
  }
  yield* sql`DROP TABLE daily_metrics_by_account`
})
