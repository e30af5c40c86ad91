/**
 * The baseline: a bare `node:http` + `pg` server answering the keyword read as JSON, run as its own process
 * (like acs) by the benchmark. No framework, no authentication, no rate limiting, no request log; the
 * account (time zone, last synced day) is read once at start.
 *
 *   GET /ready
 *   GET /obvious?days=30&limit=50   the obvious aggregate SQL (needs PROJECT_ID)
 *   GET /acs?days=30&limit=50       acs's own ranked statements (Reads.ts) (needs PROJECT_ID)
 *   GET /ledger/<projectId>?limit=50[&before=T]   the ledger page, acs's statement (Ledger.list)
 *
 * Environment: DATABASE_URL, PORT, PROJECT_ID (optional: the keyword routes' account).
 */
import * as Http from "node:http"
import { makePool } from "./pg.ts"
import { acsKeywords, type BenchAccount, type KeywordPage, ledgerPage, obviousKeywords } from "./queries.ts"

const required = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value === "") throw new Error(`${name} is required`)
  return value
}

// One pool per route: a backend that has run the obvious aggregate (parallel hash/sort, JIT) answers later
// small statements measurably slower, and acs's own backends never run it.
const pools = {
  obvious: makePool({ connectionString: required("DATABASE_URL"), max: 10 }),
  acs: makePool({ connectionString: required("DATABASE_URL"), max: 10 })
}
const pool = pools.acs
const projectId = process.env["PROJECT_ID"] ?? ""

const loadAccount = async (): Promise<BenchAccount | undefined> => {
  if (projectId === "") return undefined
  const loaded = await pool.query<{ time_zone: string; last_synced_day: string | null }>(
    `SELECT time_zone, last_synced_day::text AS last_synced_day FROM accounts WHERE project_id = $1`,
    [projectId]
  )
  const accountRow = loaded.rows[0]
  if (accountRow === undefined) throw new Error(`no account ${projectId}`)
  return { projectId, timeZone: accountRow.time_zone, lastSyncedDay: accountRow.last_synced_day }
}
const account = await loadAccount()

const intParam = (url: URL, name: string, fallback: number): number => {
  const raw = url.searchParams.get(name)
  const value = raw === null ? fallback : Number(raw)
  return Number.isInteger(value) ? value : fallback
}

const send = (response: Http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  response.end(text)
}

const server = Http.createServer((request, response) => {
  const url = new URL(request.url ?? "/", "http://bare")
  const days = intParam(url, "days", 30)
  const limit = Math.min(1000, Math.max(1, intParam(url, "limit", 50)))
  if (url.pathname === "/ready") return send(response, 200, { ready: true })
  if (url.pathname.startsWith("/ledger/")) {
    return void ledgerPage(pools.acs, decodeURIComponent(url.pathname.slice("/ledger/".length)), limit, url.searchParams.get("before") ?? undefined).then(
      (page) => send(response, 200, page),
      (error: unknown) => send(response, 500, { error: String(error) })
    )
  }
  const read: Promise<KeywordPage> | undefined = account === undefined
    ? undefined
    : url.pathname === "/obvious"
    ? obviousKeywords(pools.obvious, account, days, limit)
    : url.pathname === "/acs"
    ? acsKeywords(pools.acs, account, days, limit)
    : undefined
  if (read === undefined) return send(response, 404, { error: "not found" })
  read.then(
    (page) => send(response, 200, page),
    (error: unknown) => send(response, 500, { error: String(error) })
  )
})
server.keepAliveTimeout = 60_000

let stopping = false
const shutdown = () => {
  if (stopping) return
  stopping = true
  server.close()
  server.closeAllConnections()
  void Promise.all([pools.obvious.end(), pools.acs.end()]).finally(() => process.exit(0))
}
process.on("SIGTERM", shutdown)
process.on("SIGINT", shutdown)
// The bench holds our stdin open: when it ends (the bench exited, however), so do we.
process.stdin.on("end", shutdown)
process.stdin.on("error", shutdown)
process.stdin.resume()

server.listen(Number(required("PORT")), "127.0.0.1")
