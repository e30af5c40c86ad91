/**
 * acs as a real process for the benchmark (started through the test support, as the tests do), and
 * waiting for a sync: it ends `succeeded`, `failed`, or is declared stalled when one of acs's statements has
 * been running longer than a limit (found through pg_stat_activity, application_name 'acs').
 */
import { type RunningServer, startServer } from "../../packages/server/test/support/server.ts"
import { array, nullableString, number, record, string } from "./json.ts"
import { type HttpClient, makeHttpClient, retrying } from "./measure.ts"
import type { Pool } from "./pg.ts"

/** The person acs is started with in the benchmarks (ADMIN_EMAIL, ADMIN_PASSWORD), for the session ones. */
export const BENCH_ADMIN = { email: "bench@acs.example", password: "bench-password-0123456789" } as const

/** Signs the benchmark's person in; the session cookie (`acs_session=…`). */
export const signIn = async (api: string, part: string): Promise<string> => {
  const login = await fetch(`${api}/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(BENCH_ADMIN)
  })
  const cookie = login.headers.getSetCookie().find((line) => line.startsWith("acs_session="))?.split(";")[0]
  if (cookie === undefined) throw new Error(`${part}: sign-in failed: ${login.status} ${await login.text()}`)
  return cookie
}

export interface AcsInstance {
  readonly pid: number | undefined
  readonly api: string
  readonly client: HttpClient
  readonly logs: () => string
  readonly stop: () => Promise<void>
}

export const startAcs = async (env: Record<string, string>, bootstrapKey: string): Promise<AcsInstance> => {
  const server: RunningServer = await startServer(env)
  const client = makeHttpClient({ authorization: `Bearer ${bootstrapKey}` })
  let stopped = false
  return {
    pid: server.process.pid,
    api: server.api,
    client,
    logs: server.logs,
    stop: async () => {
      if (stopped) return
      stopped = true
      client.close()
      const timer = setTimeout(() => server.process.kill("SIGKILL"), 15_000)
      try {
        await server.stop("SIGTERM")
      } finally {
        clearTimeout(timer)
      }
    }
  }
}

export interface SyncInfo {
  readonly syncId: string
  readonly status: string
  readonly trigger: string
  readonly startedAt: string
  readonly finishedAt: string | null
  readonly windowStart: string | null
  readonly windowEnd: string | null
  readonly rowsWritten: number
  readonly error: string | null
  readonly progress: unknown
}

export const toSyncInfo = (value: unknown): SyncInfo => {
  const o = record(value, "sync")
  return {
    syncId: string(o, "syncId"),
    status: string(o, "status"),
    trigger: string(o, "trigger"),
    startedAt: string(o, "startedAt"),
    finishedAt: nullableString(o, "finishedAt"),
    windowStart: nullableString(o, "windowStart"),
    windowEnd: nullableString(o, "windowEnd"),
    rowsWritten: number(o, "rowsWritten"),
    error: nullableString(o, "error"),
    progress: o["progress"]
  }
}

export interface StuckStatement {
  readonly pid: number
  readonly seconds: number
  readonly waitEvent: string | null
  readonly query: string
  /** EXPLAIN (no ANALYZE) of the statement when its only parameter is the project id; else null. */
  readonly plan: ReadonlyArray<string> | null
}

export type SyncOutcome =
  | { readonly kind: "succeeded"; readonly sync: SyncInfo }
  | { readonly kind: "failed"; readonly sync: SyncInfo }
  | { readonly kind: "stalled"; readonly sync: SyncInfo; readonly statement: StuckStatement; readonly observedSeconds: number }

/** acs's longest-running active statement, if it has run longer than `seconds`. */
const stuckStatement = async (pool: Pool, seconds: number, projectId: string): Promise<StuckStatement | undefined> => {
  const rows = await pool.query<{ pid: number; seconds: number; wait_event: string | null; query: string }>(
    `SELECT pid, extract(epoch FROM now() - query_start)::float8 AS seconds, wait_event, query
     FROM pg_stat_activity
     WHERE datname = current_database() AND application_name = 'acs' AND state = 'active'
       AND query_start < now() - make_interval(secs => $1)
     ORDER BY query_start LIMIT 1`,
    [seconds]
  )
  const row = rows.rows[0]
  if (row === undefined) return undefined
  let plan: ReadonlyArray<string> | null = null
  const placeholders = new Set(row.query.match(/\$\d+/g) ?? [])
  if (placeholders.size === 1 && placeholders.has("$1")) {
    try {
      const explained = await pool.query<{ "QUERY PLAN": string }>(`EXPLAIN ${row.query}`, [projectId])
      plan = explained.rows.map((r) => r["QUERY PLAN"])
    } catch {
      plan = null
    }
  }
  return { pid: row.pid, seconds: row.seconds, waitEvent: row.wait_event, query: row.query.trim(), plan }
}

export const latestSync = async (acs: AcsInstance, projectId: string): Promise<SyncInfo | undefined> => {
  const list = record(await retrying("GET syncs", () => acs.client.getJson(`${acs.api}/accounts/${projectId}/syncs`)), "syncs")
  return array(list["syncs"], "syncs").map(toSyncInfo)[0]
}

/** Polls the account's latest sync (or `syncId`) until it ends or stalls. */
export const waitForSync = async (options: {
  readonly acs: AcsInstance
  readonly pool: Pool
  readonly projectId: string
  readonly syncId?: string
  readonly stallSeconds: number
  readonly timeoutMs: number
  readonly log: (message: string) => void
  /** Called with every polled state of the sync. */
  readonly onPoll?: (sync: SyncInfo) => void
}): Promise<SyncOutcome> => {
  const { acs, pool, projectId } = options
  const started = Date.now()
  let lastReport = 0
  for (;;) {
    const sync = options.syncId === undefined
      ? await latestSync(acs, projectId)
      : toSyncInfo(await retrying("GET sync", () => acs.client.getJson(`${acs.api}/accounts/${projectId}/syncs/${options.syncId}`)))
    if (sync !== undefined) options.onPoll?.(sync)
    if (sync !== undefined && sync.status === "succeeded") return { kind: "succeeded", sync }
    if (sync !== undefined && sync.status === "failed") return { kind: "failed", sync }
    if (sync !== undefined) {
      const stuck = await retrying("the stall check", () => stuckStatement(pool, options.stallSeconds, projectId))
      if (stuck !== undefined) return { kind: "stalled", sync, statement: stuck, observedSeconds: (Date.now() - Date.parse(sync.startedAt)) / 1000 }
    }
    if (Date.now() - started > options.timeoutMs) throw new Error(`the sync did not end in ${options.timeoutMs / 1000} s:\n${acs.logs()}`)
    if (Date.now() - lastReport > 10_000) {
      lastReport = Date.now()
      options.log(`  sync ${sync?.status ?? "not started"} ${JSON.stringify(sync?.progress ?? {})} rows ${sync?.rowsWritten ?? 0}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

/** Cancels a stuck statement and waits for the sync to be marked failed; terminates the backend if need be. */
export const abortStalledSync = async (options: {
  readonly acs: AcsInstance
  readonly pool: Pool
  readonly projectId: string
  readonly syncId: string
  readonly pid: number
}): Promise<SyncInfo | undefined> => {
  const { acs, pool, projectId, syncId, pid } = options
  await pool.query("SELECT pg_cancel_backend($1)", [pid])
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    const sync = toSyncInfo(await retrying("GET sync", () => acs.client.getJson(`${acs.api}/accounts/${projectId}/syncs/${syncId}`)))
    if (sync.status !== "running") return sync
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
  await pool.query("SELECT pg_terminate_backend($1)", [pid])
  return undefined
}
