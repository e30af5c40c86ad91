/**
 * Retention of warehouse history (bench/README.md, `--only scale`): 30 days of 10 M daily metric rows aged out by
 * dropping their partition, against deleting them from one table, on the bench's PostgreSQL.
 *
 * The bench builds its own tables (named for it), shaped like `daily_metrics` rows (account, level, entity key,
 * day, four counters; the key (project_id, level, entity_key, day)), so the live schema's layout may change under it:
 * - `bench_retention_months`: partitioned by range of `day`, one partition per calendar month
 *   (`<table>_<yyyymm>`, as db/TimePartitions.ts names its day partitions `<table>_<yyyymmdd>`);
 * - `bench_retention_flat`: one table with its primary key.
 * Each holds the same rows, made by one `INSERT … SELECT generate_series` in day order (as syncs add them): 10 accounts
 * × 33,334 keywords = 333,340 rows a day, 30 days of September 2026 to age out (10,000,200 rows) and 7 days of
 * October kept (2,333,380). Retention is then `DROP TABLE bench_retention_months_202609` against
 * `DELETE FROM bench_retention_flat WHERE day < '2026-10-01'` and the `VACUUM` the delete needs (default settings:
 * maintenance_work_mem as autovacuum would have it), with each table's size before and after. Meanwhile a second
 * connection reads one random keyword's rows (every day left, by the key) in a loop: its latency before, during
 * and after each step (the delete leaves dead rows in the keyword's index range until the vacuum).
 */
import { performance } from "node:perf_hooks"
import type { BenchCluster } from "./cluster.ts"
import { summarize, type Summary } from "./measure.ts"
import { makePool, type Pool } from "./pg.ts"
import { fmt, type TargetRow } from "./report.ts"

const DATABASE = "acs_bench_retention"
const ACCOUNTS = 10
const KEYWORDS_PER_ACCOUNT = 33_334
const ROWS_PER_DAY = ACCOUNTS * KEYWORDS_PER_ACCOUNT
const AGED_DAYS = 30
const KEPT_DAYS = 7
const FIRST_DAY = "2026-09-01"
const CUTOFF = "2026-10-01"
/** Seconds of reads before and after each step. */
const READ_SECONDS = 3
/** The partitions' size after the drop, against the kept rows' share of it before (1.1: their indexes' slack). */
export const TARGET_SPACE_LEFT = 1.1

export interface ReadPhase {
  readonly phase: string
  readonly reads: Summary
}

export interface RetentionResults {
  readonly agedRows: number
  readonly keptRows: number
  readonly shape: string
  readonly loadSeconds: { readonly flat: number; readonly months: number }
  readonly drop: {
    readonly ms: number
    readonly steps: { readonly lockMs: number; readonly dropMs: number; readonly commitMs: number }
    readonly sizeBeforeBytes: number; readonly sizeAfterBytes: number; readonly reads: ReadonlyArray<ReadPhase> }
  readonly delete: {
    readonly ms: number
    readonly rows: number
    readonly vacuumMs: number
    readonly sizeBeforeBytes: number
    readonly sizeAfterDeleteBytes: number
    readonly sizeAfterVacuumBytes: number
    readonly reads: ReadonlyArray<ReadPhase>
  }
}

const COLUMNS = `
  project_id text NOT NULL,
  level text NOT NULL,
  entity_key text NOT NULL,
  day date NOT NULL,
  impressions int8 NOT NULL,
  taps int8 NOT NULL,
  installs int8 NOT NULL,
  spend_micros int8 NOT NULL`

/** Every row, day by day: row i is day i / ROWS_PER_DAY, and within the day account j % 10, keyword j / 10. */
const fill = (table: string) => `
  INSERT INTO ${table}
  SELECT 'bench_acct_' || (j % ${ACCOUNTS}), 'keywords', 'kw_' || (j / ${ACCOUNTS}), DATE '${FIRST_DAY}' + (i / ${ROWS_PER_DAY})::int,
    100 + i % 997, i % 89, i % 13, (i % 9973) * 1000
  FROM generate_series(0, ${(AGED_DAYS + KEPT_DAYS) * ROWS_PER_DAY - 1}::int8) AS i, LATERAL (SELECT i % ${ROWS_PER_DAY} AS j) AS within`

const size = async (pool: Pool, table: string, partitioned: boolean) =>
  Number((await pool.query<{ bytes: string }>(
    partitioned
      ? `SELECT COALESCE(sum(pg_total_relation_size(inhrelid)), 0)::text AS bytes FROM pg_inherits WHERE inhparent = '${table}'::regclass`
      : `SELECT pg_total_relation_size('${table}')::text AS bytes`
  )).rows[0]?.bytes ?? 0)

/** One connection reading a random keyword's rows in a loop; `mark` closes a phase and opens the next. */
const startReader = (pool: Pool, table: string) => {
  const phases: Array<ReadPhase> = []
  let current: Array<number> = []
  let running = true
  const loop = (async () => {
    const client = await pool.connect()
    try {
      while (running) {
        const account = Math.floor(Math.random() * ACCOUNTS)
        const keyword = Math.floor(Math.random() * KEYWORDS_PER_ACCOUNT)
        const t0 = performance.now()
        await client.query({
          name: `bench_retention_read_${table}`,
          text: `SELECT count(*), sum(spend_micros) FROM ${table} WHERE project_id = $1 AND level = 'keywords' AND entity_key = $2`,
          values: [`bench_acct_${account}`, `kw_${keyword}`]
        })
        current.push(performance.now() - t0)
      }
    } finally {
      client.release()
    }
  })()
  return {
    mark: (phase: string) => {
      phases.push({ phase, reads: summarize(current) })
      current = []
    },
    stop: async () => {
      running = false
      await loop
      return phases
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const timed = async (run: () => Promise<unknown>) => {
  const t0 = performance.now()
  await run()
  return performance.now() - t0
}

export const benchRetention = async (cluster: BenchCluster, log: (message: string) => void): Promise<RetentionResults> => {
  await cluster.createDatabase(DATABASE)
  const pool = makePool({ connectionString: cluster.benchUrl(DATABASE), max: 3 })
  try {
    const agedRows = AGED_DAYS * ROWS_PER_DAY
    const keptRows = KEPT_DAYS * ROWS_PER_DAY
    log(`retention: ${fmt(agedRows)} rows over ${AGED_DAYS} days to age out and ${fmt(keptRows)} over ${KEPT_DAYS} kept, in two layouts (generate_series)`)
    // The loads' index builds sort in memory; the delete's vacuum keeps the default (as autovacuum would run it).
    const load = async (table: string, create: ReadonlyArray<string>) =>
      timed(async () => {
        const client = await pool.connect()
        try {
          for (const statement of create) await client.query(statement)
          await client.query("SET maintenance_work_mem = '512MB'")
          await client.query(fill(table))
          await client.query(`ALTER TABLE ${table} ADD PRIMARY KEY (project_id, level, entity_key, day)`)
          await client.query(`VACUUM ANALYZE ${table}`)
        } finally {
          client.release()
        }
      })
    const flatLoad = await load("bench_retention_flat", [`CREATE TABLE bench_retention_flat (${COLUMNS})`])
    log(`retention: the table loaded in ${fmt(flatLoad / 1000, 1)} s`)
    const monthsLoad = await load("bench_retention_months", [
      `CREATE TABLE bench_retention_months (${COLUMNS}) PARTITION BY RANGE (day)`,
      `CREATE TABLE bench_retention_months_202609 PARTITION OF bench_retention_months FOR VALUES FROM ('2026-09-01') TO ('2026-10-01')`,
      `CREATE TABLE bench_retention_months_202610 PARTITION OF bench_retention_months FOR VALUES FROM ('2026-10-01') TO ('2026-11-01')`
    ])
    log(`retention: the month partitions loaded in ${fmt(monthsLoad / 1000, 1)} s`)

    // The partition's drop, reads on the parent around it.
    const monthsBefore = await size(pool, "bench_retention_months", true)
    let reader = startReader(pool, "bench_retention_months")
    await sleep(READ_SECONDS * 1000)
    reader.mark("before")
    // In three steps, to see where its time goes: the lock waits for the reads in flight, the drop itself, and the
    // commit, where PostgreSQL lets go of the partition's files.
    const steps = { lockMs: 0, dropMs: 0, commitMs: 0 }
    const dropMs = await timed(async () => {
      const client = await pool.connect()
      try {
        await client.query("BEGIN")
        steps.lockMs = await timed(() => client.query("LOCK TABLE bench_retention_months IN ACCESS EXCLUSIVE MODE"))
        steps.dropMs = await timed(() => client.query("DROP TABLE bench_retention_months_202609"))
        steps.commitMs = await timed(() => client.query("COMMIT"))
      } finally {
        client.release()
      }
    })
    // The drop takes milliseconds: the reads it held up, if any, land in the second after it.
    await sleep(1000)
    reader.mark("the drop and 1 s after")
    await sleep(READ_SECONDS * 1000)
    reader.mark("after")
    const dropReads = await reader.stop()
    const monthsAfter = await size(pool, "bench_retention_months", true)
    log(`retention: the partition dropped in ${fmt(dropMs, 1)} ms`)

    // The delete, then its vacuum, reads on the table throughout.
    const flatBefore = await size(pool, "bench_retention_flat", false)
    reader = startReader(pool, "bench_retention_flat")
    await sleep(READ_SECONDS * 1000)
    reader.mark("before")
    let deleted = 0
    const deleteMs = await timed(async () => {
      deleted = (await pool.query(`DELETE FROM bench_retention_flat WHERE day < '${CUTOFF}'`)).rowCount ?? 0
    })
    reader.mark("during the delete")
    log(`retention: ${fmt(deleted)} rows deleted in ${fmt(deleteMs / 1000, 1)} s`)
    await sleep(READ_SECONDS * 1000)
    reader.mark("after the delete")
    const flatAfterDelete = await size(pool, "bench_retention_flat", false)
    const vacuumMs = await timed(() => pool.query("VACUUM bench_retention_flat"))
    reader.mark("during the vacuum")
    await sleep(READ_SECONDS * 1000)
    reader.mark("after the vacuum")
    const deleteReads = await reader.stop()
    const flatAfterVacuum = await size(pool, "bench_retention_flat", false)
    log(`retention: the vacuum took ${fmt(vacuumMs / 1000, 1)} s`)

    return {
      agedRows,
      keptRows,
      shape: `daily_metrics' columns, ${ACCOUNTS} accounts × ${fmt(KEYWORDS_PER_ACCOUNT)} keywords, a row a keyword a day, key (project_id, level, entity_key, day)`,
      loadSeconds: { flat: Math.round(flatLoad / 100) / 10, months: Math.round(monthsLoad / 100) / 10 },
      drop: {
        ms: Math.round(dropMs * 10) / 10,
        steps: { lockMs: Math.round(steps.lockMs * 10) / 10, dropMs: Math.round(steps.dropMs * 10) / 10, commitMs: Math.round(steps.commitMs * 10) / 10 },
        sizeBeforeBytes: monthsBefore, sizeAfterBytes: monthsAfter, reads: dropReads },
      delete: {
        ms: Math.round(deleteMs),
        rows: deleted,
        vacuumMs: Math.round(vacuumMs),
        sizeBeforeBytes: flatBefore,
        sizeAfterDeleteBytes: flatAfterDelete,
        sizeAfterVacuumBytes: flatAfterVacuum,
        reads: deleteReads
      }
    }
  } finally {
    // The tables are gigabytes: gone before the next part.
    try {
      await pool.query("DROP TABLE IF EXISTS bench_retention_flat, bench_retention_months")
    } finally {
      await pool.end()
    }
  }
}

const mib = (bytes: number) => `${fmt(bytes / 2 ** 20, 0)} MiB`
const readsText = (phases: ReadonlyArray<ReadPhase>) =>
  phases.map((p) => `${p.phase} p50 ${fmt(p.reads.p50Ms)} / p95 ${fmt(p.reads.p95Ms)} / max ${fmt(p.reads.maxMs)} ms (${p.reads.samples})`).join("; ")

export const retentionTargets = (r: RetentionResults): Array<TargetRow> => {
  const keptShare = r.keptRows / (r.keptRows + r.agedRows)
  const spaceLeft = r.drop.sizeAfterBytes / (r.drop.sizeBeforeBytes * keptShare)
  return [
    {
      name: `retention: drop the ${AGED_DAYS} days' month partition (${fmt(r.agedRows)} rows)`,
      target: "(reported)",
      measured: `${fmt(r.drop.ms, 1)} ms (the lock ${fmt(r.drop.steps.lockMs, 1)}, the drop ${fmt(r.drop.steps.dropMs, 1)}, the commit ${fmt(r.drop.steps.commitMs, 1)} ms)`,
      value: r.drop.ms,
      pass: null
    },
    {
      // What retention is for: the aged rows' space is given back at once.
      name: "retention by drop: the partitions' size after / the kept rows' share before",
      target: `<= ${TARGET_SPACE_LEFT}x`,
      measured: `${fmt(spaceLeft)}x (${mib(r.drop.sizeBeforeBytes)} → ${mib(r.drop.sizeAfterBytes)}; the kept rows are ${fmt(keptShare * 100, 1)} %)`,
      value: spaceLeft,
      pass: spaceLeft <= TARGET_SPACE_LEFT
    },
    {
      name: `retention: DELETE of the same rows from one table, then VACUUM`,
      target: "(reported)",
      measured: `${fmt(r.delete.ms / 1000, 1)} s + ${fmt(r.delete.vacuumMs / 1000, 1)} s (${fmt(r.delete.rows)} rows; ` +
        `${fmt((r.delete.ms + r.delete.vacuumMs) / Math.max(r.drop.ms, 0.001), 0)}× the drop); the table ${mib(r.delete.sizeBeforeBytes)} → ` +
        `${mib(r.delete.sizeAfterDeleteBytes)} after the delete → ${mib(r.delete.sizeAfterVacuumBytes)} after the vacuum`,
      value: r.delete.ms + r.delete.vacuumMs,
      pass: null
    },
    {
      name: "retention: a keyword's rows read meanwhile (p50 / p95 / max)",
      target: "(reported)",
      measured: `partitions: ${readsText(r.drop.reads)} | one table: ${readsText(r.delete.reads)}`,
      value: null,
      pass: null
    }
  ]
}

export const retentionDetails = (r: RetentionResults): Array<string> => [
  `retention: ${fmt(r.agedRows)} rows over ${AGED_DAYS} days aged out, ${fmt(r.keptRows)} over ${KEPT_DAYS} days kept (${r.shape}); ` +
  `loaded with one INSERT … SELECT generate_series each and their key built after: one table ${fmt(r.loadSeconds.flat, 1)} s, ` +
  `month partitions ${fmt(r.loadSeconds.months, 1)} s`,
  ""
]
