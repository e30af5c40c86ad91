/**
 * The warehouse end to end: the real server syncs the simulator's demo org over HTTP into PostgreSQL;
 * totals agree with the simulator's own to the micro at every level; reads rank, narrow, clamp and say
 * how fresh they are; a failed sync keeps the previous copy; two instances never run one account's sync twice.
 */
import { type Simulator, startSimulator } from "@acs/upstream/simulator/Simulator"
import type { ReportLevel } from "@acs/upstream/Upstream"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase, query } from "./support/database.ts"
import { BOOTSTRAP_KEY, call, errorCode, type RunningServer, startServer } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

let simulator: Simulator
let database: string
let server: RunningServer
let twin: RunningServer
let projectId: string
let upstreamAccountId: string

interface SyncView {
  readonly syncId: string
  readonly status: string
  readonly windowStart: string
  readonly windowEnd: string
  readonly error: string | null
}

interface Row {
  readonly impressions: number
  readonly taps: number
  readonly installs: number
  readonly spendMicros: number
}

const env = (databaseUrl: string, extra: Record<string, string> = {}) => ({
  DATABASE_URL: databaseUrl,
  ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
  SIMULATOR_URL: simulator.url,
  ACS_DEMO: "true",
  SYNC_INTERVAL_MINUTES: "0",
  RATE_LIMIT_READ: "100000",
  RATE_LIMIT_WRITE: "100000",
  ...extra
})

const get = (base: RunningServer, path: string) => call(`${base.api}${path}`, { key: BOOTSTRAP_KEY })

/** Waits until every account of the server has a finished sync; returns the account list. */
const waitForSyncs = async (base: RunningServer) => {
  const { accounts } = await waitFor(
    "every account's first sync",
    async () => {
      const listed = (await get(base, "/accounts")).body as { accounts: Array<{ projectId: string; currency: string; upstreamAccountId: string }> }
      const latest = await Promise.all(listed.accounts.map(async (a) => {
        const syncs = (await get(base, `/accounts/${a.projectId}/syncs`)).body as { syncs: Array<SyncView> }
        return syncs.syncs[0]?.status ?? "none"
      }))
      return { accounts: listed.accounts, latest }
    },
    ({ accounts, latest }) => accounts.length > 0 && latest.every((status) => status === "succeeded"),
    { intervalMs: 250, show: ({ accounts, latest }) => `${accounts.length} accounts, last syncs ${latest.join(", ")}\n${base.logs()}` }
  )
  return accounts
}

const waitForSync = (base: RunningServer, account: string, syncId: string): Promise<SyncView> =>
  waitFor(
    `sync ${syncId} to end`,
    async () => (await get(base, `/accounts/${account}/syncs/${syncId}`)).body as SyncView,
    (sync) => sync.status !== "running",
    { intervalMs: 150 }
  )

const latestSync = async (account: string) =>
  ((await get(server, `/accounts/${account}/syncs`)).body as { syncs: Array<SyncView> }).syncs[0]!

beforeAll(async () => {
  simulator = await startSimulator({ seed: 11, size: "demo" })
  database = await createDatabase()
  server = await startServer(env(database))
  const accounts = await waitForSyncs(server)
  const usd = accounts.find((a) => a.currency === "USD")!
  projectId = usd.projectId
  upstreamAccountId = usd.upstreamAccountId
  twin = await startServer(env(database))
})

afterAll(async () => {
  await Promise.all([server?.stop(), twin?.stop()])
  await simulator?.close()
})

const levels: ReadonlyArray<ReportLevel> = ["campaigns", "adGroups", "keywords", "searchTerms", "ads"]

describe("sync", () => {
  it("imports the demo org and holds, per level, exactly the simulator's totals for the synced window", async () => {
    const sync = await latestSync(projectId)
    expect(sync.windowEnd).toBe(addDaysIso(simulator.today(upstreamAccountId), -1))
    for (const level of levels) {
      const rows = await query<{ impressions: string; taps: string; installs: string; spend: string }>(
        database,
        `SELECT coalesce(sum(impressions), 0) AS impressions, coalesce(sum(taps), 0) AS taps,
                coalesce(sum(installs), 0) AS installs, coalesce(sum(spend_micros), 0) AS spend
         FROM daily_metrics WHERE project_id = $1 AND level = $2 AND day BETWEEN $3 AND $4`,
        [projectId, level, sync.windowStart, sync.windowEnd]
      )
      const expected = simulator.totals(upstreamAccountId, level, sync.windowStart, sync.windowEnd).total
      expect({ level, ...numbers(rows[0]!) }).toEqual({
        level,
        impressions: expected.impressions,
        taps: expected.taps,
        installs: expected.installs,
        spend: expected.spendMicros
      })
      expect(expected.spendMicros).toBeGreaterThan(0)
    }
  })

  it("serves the same totals through the campaign read", async () => {
    const sync = await latestSync(projectId)
    const days = 30
    const start = addDaysIso(sync.windowEnd, -(days - 1))
    const read = (await get(server, `/accounts/${projectId}/campaigns?days=${days}&limit=1000`)).body as {
      campaigns: Array<Row & { campaignId: string }>
    }
    const expected = simulator.totals(upstreamAccountId, "campaigns", start, sync.windowEnd)
    expect(sum(read.campaigns)).toEqual({
      impressions: expected.total.impressions,
      taps: expected.total.taps,
      installs: expected.total.installs,
      spendMicros: expected.total.spendMicros
    })
    const top = read.campaigns[0]!
    const own = expected.rows.find((row) => row.campaignId === top.campaignId)!
    expect(top.spendMicros).toBe(own.total.spendMicros)
  })

  it("keeps the previous copy when a sync fails, and records why", async () => {
    const before = (await get(server, `/accounts/${projectId}/keywords?limit=20`)).body
    simulator.control.addFaults([{ kind: "status", status: 500, path: "/reports/", times: "always" }])
    try {
      const started = await call(`${server.api}/accounts/${projectId}/syncs`, { method: "POST", key: BOOTSTRAP_KEY })
      expect(started.status).toBe(202)
      expect(started.headers.get("location")).toMatch(new RegExp(`/api/v1/accounts/${projectId}/syncs/syn_`))
      const ended = await waitForSync(server, projectId, (started.body as SyncView).syncId)
      expect(ended.status).toBe("failed")
      expect(ended.error).toMatch(/500/)
    } finally {
      simulator.control.clearFaults()
    }
    const after = (await get(server, `/accounts/${projectId}/keywords?limit=20`)).body
    expect(stripFreshness(after)).toEqual(stripFreshness(before))
    // The failed sync's own metrics table is gone; only attached partitions remain.
    const staged = await query<{ n: number }>(
      database,
      "SELECT count(*)::int AS n FROM pg_class WHERE relkind = 'r' AND NOT relispartition AND relname LIKE 'daily_metrics_syn%'"
    )
    expect(staged[0]!.n).toBe(0)
  })

  it("runs one sync per account when two instances are asked at once", async () => {
    const [a, b] = await Promise.all([
      call(`${server.api}/accounts/${projectId}/syncs`, { method: "POST", key: BOOTSTRAP_KEY }),
      call(`${twin.api}/accounts/${projectId}/syncs`, { method: "POST", key: BOOTSTRAP_KEY })
    ])
    expect([a.status, b.status].sort()).toEqual([202, 409])
    const refused = a.status === 409 ? a : b
    expect(errorCode(refused)).toBe("sync_in_progress")
    const accepted = (a.status === 202 ? a : b).body as SyncView
    const running = await query<{ n: number }>(database, "SELECT count(*)::int AS n FROM syncs WHERE project_id = $1 AND status = 'running'", [projectId])
    expect(running[0]!.n).toBe(1)
    expect((await waitForSync(server, projectId, accepted.syncId)).status).toBe("succeeded")
  })
})

describe("reads", () => {
  it("ranks by spend, ties by id, and counts every keyword of the account", async () => {
    const read = (await get(server, `/accounts/${projectId}/keywords?days=30&limit=1000`)).body as {
      keywords: Array<Row & { keywordId: string }>
      total: number
      truncated: boolean
    }
    const summary = simulator.control.summary().accounts.find((a) => String(a.orgId) === upstreamAccountId)!
    expect(read.total).toBe(summary.keywords)
    expect(read.keywords).toHaveLength(Math.min(1000, summary.keywords))
    expect(read.truncated).toBe(summary.keywords > 1000)
    for (let i = 1; i < read.keywords.length; i++) {
      const [prev, next] = [read.keywords[i - 1]!, read.keywords[i]!]
      const ordered = prev.spendMicros > next.spendMicros || (prev.spendMicros === next.spendMicros && prev.keywordId < next.keywordId)
      expect(ordered, `${prev.keywordId} before ${next.keywordId}`).toBe(true)
    }
    expect(read.keywords.some((k) => k.spendMicros === 0)).toBe(true)
  })

  it("narrows by campaign and ad group", async () => {
    const campaigns = (await get(server, `/accounts/${projectId}/campaigns`)).body as { campaigns: Array<{ campaignId: string }> }
    const campaignId = campaigns.campaigns[0]!.campaignId
    const adGroups = (await get(server, `/accounts/${projectId}/ad-groups?campaignId=${campaignId}&limit=1000`)).body as {
      adGroups: Array<{ adGroupId: string; campaignId: string }>
      total: number
    }
    expect(adGroups.adGroups.every((g) => g.campaignId === campaignId)).toBe(true)
    expect(adGroups.total).toBe(adGroups.adGroups.length)
    const adGroupId = adGroups.adGroups[0]!.adGroupId
    for (const path of ["keywords", "search-terms", "ads"]) {
      const read = (await get(server, `/accounts/${projectId}/${path}?adGroupId=${adGroupId}&limit=1000`)).body as Record<
        string,
        unknown
      > & { total: number }
      const rows = Object.values(read).find(Array.isArray) as Array<{ adGroupId: string }>
      expect(rows.length, path).toBeGreaterThan(0)
      expect(rows.every((r) => r.adGroupId === adGroupId), path).toBe(true)
    }
    const negatives = (await get(server, `/accounts/${projectId}/negative-keywords?campaignId=${campaignId}`)).body as {
      negativeKeywords: Array<{ campaignId: string; text: string }>
    }
    expect(negatives.negativeKeywords.every((n) => n.campaignId === campaignId)).toBe(true)
    const texts = negatives.negativeKeywords.map((n) => n.text)
    expect(texts).toEqual([...texts].sort())
  })

  it("clamps limit and refuses days out of range, naming the parameter", async () => {
    const many = (await get(server, `/accounts/${projectId}/keywords?limit=5000`)).body as { keywords: Array<unknown>; truncated: boolean }
    expect(many.keywords).toHaveLength(1000)
    expect(many.truncated).toBe(true)
    const one = (await get(server, `/accounts/${projectId}/keywords?limit=0`)).body as { keywords: Array<unknown> }
    expect(one.keywords).toHaveLength(1)
    const fallback = (await get(server, `/accounts/${projectId}/keywords`)).body as { keywords: Array<unknown> }
    expect(fallback.keywords).toHaveLength(50)
    for (const days of ["0", "91", "-3", "abc", "2.5"]) {
      const refused = await get(server, `/accounts/${projectId}/keywords?days=${days}`)
      expect(refused.status, days).toBe(400)
      expect(errorCode(refused)).toBe("invalid_request")
      expect((refused.body as { error: { message: string } }).error.message).toContain("days")
    }
  })

  it("says how fresh the data is, and warns when it is old", async () => {
    const fresh = (await get(server, `/accounts/${projectId}/campaigns?days=90`)).body as {
      dataFreshness: { coverage: string; warning?: string; ageHours: number }
    }
    expect(fresh.dataFreshness.coverage).toBe("90 of 90 requested days")
    expect(fresh.dataFreshness.warning).toBeUndefined()
    await query(database, "UPDATE accounts SET last_synced_at = now() - interval '30 hours' WHERE project_id = $1", [projectId])
    try {
      const stale = (await get(server, `/accounts/${projectId}/campaigns`)).body as {
        dataFreshness: { ageHours: number; warning?: string }
      }
      expect(stale.dataFreshness.ageHours).toBeGreaterThanOrEqual(30)
      expect(stale.dataFreshness.warning).toMatch(/hours old/)
    } finally {
      await query(database, "UPDATE accounts SET last_synced_at = now() WHERE project_id = $1", [projectId])
    }
  })

  it("reports a short history as coverage and warns, when the first sync read only 12 days", async () => {
    const shortDatabase = await createDatabase()
    const short = await startServer(env(shortDatabase, { SYNC_INITIAL_DAYS: "12" }))
    try {
      const accounts = await waitForSyncs(short)
      const usd = accounts.find((a) => a.currency === "USD")!
      const month = (await get(short, `/accounts/${usd.projectId}/keywords?days=30`)).body as {
        dataFreshness: { coverage: string; warning?: string }
      }
      expect(month.dataFreshness.coverage).toBe("12 of 30 requested days")
      expect(month.dataFreshness.warning).toContain("12 of 30 requested days")
      const week = (await get(short, `/accounts/${usd.projectId}/keywords?days=7`)).body as {
        dataFreshness: { coverage: string; warning?: string }
      }
      expect(week.dataFreshness).toMatchObject({ coverage: "7 of 7 requested days" })
      expect(week.dataFreshness.warning).toBeUndefined()
    } finally {
      await short.stop()
    }
  })
})

const numbers = (row: Record<string, string>) =>
  Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)])) as Record<string, number>

const sum = (rows: ReadonlyArray<Row>): Row =>
  rows.reduce((acc, r) => ({
    impressions: acc.impressions + r.impressions,
    taps: acc.taps + r.taps,
    installs: acc.installs + r.installs,
    spendMicros: acc.spendMicros + r.spendMicros
  }), { impressions: 0, taps: 0, installs: 0, spendMicros: 0 })

const stripFreshness = (body: unknown) => {
  const { dataFreshness: _ignored, ...rest } = body as Record<string, unknown>
  return rest
}

const addDaysIso = (date: string, days: number): string => {
  const d = new Date(`${date}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + days)
  return d.toISOString().slice(0, 10)
}
