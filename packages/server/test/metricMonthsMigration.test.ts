/**
 * Migration 0050 on a warehouse synced before it: each account's partition of `daily_metrics` becomes one partition
 * per month its rows fall in (named for the account and the month, as a sync's swap looks for them), every row kept,
 * each with its unique key; a read of one account's days touches only that account's months.
 */
import { beforeAll, describe, expect, it } from "vitest"
import { createBlankDatabase, query } from "./support/database.ts"
import { migrateThrough } from "./support/migrateThrough.ts"

let database: string

const ROWS: ReadonlyArray<readonly [string, string, string, string]> = [
  ["prj_a", "campaigns", "c1", "2026-07-31"],
  ["prj_a", "campaigns", "c1", "2026-08-01"],
  ["prj_a", "keywords", "k1", "2026-08-31"],
  ["prj_a", "keywords", "k1", "2026-10-15"],
  ["prj_a", "searchTerms", "t1", "2026-11-28"],
  ["prj_b", "campaigns", "c9", "2026-11-01"],
  ["prj_b", "campaigns", "c9", "2026-11-02"]
]

const partitions = async () =>
  (await query<{ name: string; bound: string; rows: number }>(
    database,
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound,
       (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I', c.relname), false, true, '')))[1]::text::int AS rows
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'daily_metrics'::regclass ORDER BY 1`
  ))

beforeAll(async () => {
  database = await createBlankDatabase()
  // Every migration before 0050 ("0049_…" sorts before "0050").
  await migrateThrough(database, "0050")
  await query(database, `INSERT INTO orgs (org_id, name) VALUES ('org_m', 'm')`)
  for (const [projectId, upstream] of [["prj_a", "u1"], ["prj_b", "u2"]] as const) {
    await query(database, `INSERT INTO accounts (project_id, org_id, upstream_account_id, name, status, currency, time_zone)
      VALUES ($1, 'org_m', $2, $1, 'active', 'USD', 'UTC')`, [projectId, upstream])
    // The account's partition, as a sync's swap attaches it (its generation named after the sync).
    const generation = `syn_${projectId}`
    await query(database, `CREATE TABLE daily_metrics_${generation} (LIKE daily_metrics INCLUDING CONSTRAINTS, CHECK (project_id = '${projectId}'))`)
    await query(database, `CREATE UNIQUE INDEX daily_metrics_${generation}_key ON daily_metrics_${generation} (level, entity_key, day, project_id)`)
    await query(database, `ALTER TABLE daily_metrics ATTACH PARTITION daily_metrics_${generation} FOR VALUES IN ('${projectId}')`)
    await query(database, `INSERT INTO metric_generations (project_id, generation, sync_id) VALUES ($1, $2, $2)`, [projectId, generation])
  }
  for (const [i, [projectId, level, key, day]] of ROWS.entries()) {
    await query(database, `INSERT INTO daily_metrics VALUES ($1, $2, $3, $4, $5::int8, 1, 0, $5::int8 * 1000)`, [projectId, level, key, day, i + 1])
  }
  await migrateThrough(database, undefined)
}, 300_000)

describe("migration 0050: daily metrics by account and month", () => {
  it("splits each account's partition into its months, keeping every row", async () => {
    expect(await partitions()).toEqual([
      { name: "daily_metrics_prj_a_m202607", bound: "FOR VALUES FROM ('prj_a', '2026-07-01') TO ('prj_a', '2026-08-01')", rows: 1 },
      { name: "daily_metrics_prj_a_m202608", bound: "FOR VALUES FROM ('prj_a', '2026-08-01') TO ('prj_a', '2026-09-01')", rows: 2 },
      { name: "daily_metrics_prj_a_m202610", bound: "FOR VALUES FROM ('prj_a', '2026-10-01') TO ('prj_a', '2026-11-01')", rows: 1 },
      { name: "daily_metrics_prj_a_m202611", bound: "FOR VALUES FROM ('prj_a', '2026-11-01') TO ('prj_a', '2026-12-01')", rows: 1 },
      { name: "daily_metrics_prj_b_m202611", bound: "FOR VALUES FROM ('prj_b', '2026-11-01') TO ('prj_b', '2026-12-01')", rows: 2 }
    ])
    const rows = await query<{ project_id: string; level: string; entity_key: string; day: string; impressions: string }>(
      database,
      "SELECT project_id, level, entity_key, day::text AS day, impressions::text AS impressions FROM daily_metrics ORDER BY impressions"
    )
    expect(rows.map((r) => [r.project_id, r.level, r.entity_key, r.day])).toEqual(ROWS)
    expect(rows.map((r) => Number(r.impressions))).toEqual(ROWS.map((_, i) => i + 1))
    // Each month's unique key names both partition columns (Citus attaches a partition only then).
    const keys = await query<{ name: string }>(
      database,
      `SELECT i.indexrelid::regclass::text AS name FROM pg_index i JOIN pg_inherits h ON h.inhrelid = i.indrelid
       WHERE h.inhparent = 'daily_metrics'::regclass AND i.indisunique
         AND pg_get_indexdef(i.indexrelid) LIKE '%(level, entity_key, day, project_id)' ORDER BY 1`
    )
    expect(keys.map((k) => k.name)).toEqual((await partitions()).map((p) => `${p.name}_key`))
    const old = await query(database, "SELECT 1 FROM pg_class WHERE relname IN ('daily_metrics_by_account', 'daily_metrics_syn_prj_a')")
    expect(old).toEqual([])
  })

  it("plans a read of one account's days over that account's months alone", async () => {
    const plan = await query<{ "QUERY PLAN": string }>(
      database,
      `EXPLAIN SELECT sum(spend_micros) FROM daily_metrics
       WHERE project_id = 'prj_a' AND level = 'keywords' AND day BETWEEN '2026-08-30' AND '2026-11-28'`
    )
    const scanned = [...new Set(plan.flatMap((line) => [...line["QUERY PLAN"].matchAll(/on (daily_metrics_\w+)/g)].map((m) => m[1])))]
    expect(scanned.toSorted()).toEqual(["daily_metrics_prj_a_m202608", "daily_metrics_prj_a_m202610", "daily_metrics_prj_a_m202611"])
  })
})
