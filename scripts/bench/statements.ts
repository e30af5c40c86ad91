/**
 * Statements per operation from pg_stat_statements (loaded by scripts/bench/cluster.ts): a snapshot of every
 * statement the `postgres` role ran in one database (acs and pgbench connect as `postgres`; the bench's own
 * queries run as `bench` and are left out), and the difference of two snapshots. Utility statements (BEGIN,
 * COMMIT, LISTEN) are counted too, so a transaction's own frame shows, as it does for pgbench.
 */
import type { Pool } from "./pg.ts"

export interface StatementSnapshot {
  readonly byQuery: ReadonlyMap<string, { readonly query: string; readonly calls: number; readonly ms: number; readonly rows: number }>
}

export interface StatementDelta {
  readonly calls: number
  readonly ms: number
  /** The statements that ran in between, most calls first. */
  readonly top: ReadonlyArray<{ readonly query: string; readonly calls: number; readonly meanMs: number; readonly rows: number }>
}

/** `pool` is connected to any database of the cluster (the view shows all of them). */
export const statementSnapshot = async (pool: Pool, database: string): Promise<StatementSnapshot> => {
  const result = await pool.query<{ queryid: string; query: string; calls: string; ms: number; rows: string }>(
    `SELECT s.queryid::text AS queryid, s.query, s.calls::text AS calls, s.total_exec_time AS ms, s.rows::text AS rows
     FROM pg_stat_statements s
     JOIN pg_database d ON d.oid = s.dbid
     JOIN pg_roles r ON r.oid = s.userid
     WHERE d.datname = $1 AND r.rolname = 'postgres'`,
    [database]
  )
  return {
    byQuery: new Map(result.rows.map((row) => [row.queryid, { query: row.query, calls: Number(row.calls), ms: row.ms, rows: Number(row.rows) }]))
  }
}

const oneLine = (query: string) => query.replace(/\s+/g, " ").trim().slice(0, 160)

export const statementDelta = (from: StatementSnapshot, to: StatementSnapshot): StatementDelta => {
  const top: Array<{ query: string; calls: number; meanMs: number; rows: number }> = []
  let calls = 0
  let ms = 0
  for (const [id, now] of to.byQuery) {
    const before = from.byQuery.get(id)
    const dc = now.calls - (before?.calls ?? 0)
    if (dc <= 0) continue
    const dm = now.ms - (before?.ms ?? 0)
    calls += dc
    ms += dm
    top.push({ query: oneLine(now.query), calls: dc, meanMs: Math.round((dm / dc) * 1000) / 1000, rows: now.rows - (before?.rows ?? 0) })
  }
  top.sort((a, b) => b.calls - a.calls)
  return { calls, ms: Math.round(ms * 10) / 10, top }
}
