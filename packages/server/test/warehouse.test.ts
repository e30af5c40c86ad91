/**
 * The warehouse end to end: the real server syncs the simulator's demo org over HTTP into PostgreSQL;
 * totals agree with the simulator's own to the micro at every level; reads rank, narrow, clamp and say
 * how fresh they are; a failed sync keeps the previous copy; two instances never run one account's sync twice.
 */
import { ErrorBodies } from "@acs/domain/Errors"
import { Sync } from "@acs/domain/Warehouse"
import { type Simulator, startSimulator } from "@acs/upstream/simulator/Simulator"
import type { ReportLevel } from "@acs/upstream/Upstream"
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { monthOf, monthPartition, monthsFrom, nextMonth } from "../src/warehouse/GenerationTables.ts"
import { RETAINED_DAYS } from "../src/warehouse/SyncPlan.ts"
import { type ApiClient, withApi } from "./support/apiClient.ts"
import { createDatabase, query } from "./support/database.ts"
import { BOOTSTRAP_KEY, call, errorCode, type RunningServer, startServer } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

let simulator: Simulator
let database: string
let server: RunningServer
let twin: RunningServer
let projectId: string
let upstreamAccountId: string

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

/** The typed client of `base` with the bootstrap key. */
const api = <A, E>(base: RunningServer, use: (client: ApiClient) => Effect.Effect<A, E>): Promise<A> =>
  withApi(base.baseUrl, BOOTSTRAP_KEY, use)

/** Waits until every account of the server has a finished sync; returns the account list. */
const waitForSyncs = async (base: RunningServer) => {
  const { accounts } = await waitFor(
    "every account's first sync",
    () =>
      api(base, (client) =>
        Effect.gen(function*() {
          const { accounts } = yield* client.accounts.listAccounts()
          const latest = yield* Effect.forEach(accounts, (a) =>
            Effect.map(client.warehouse.listSyncs({ path: { projectId: a.projectId }, urlParams: {} }), ({ syncs }) => syncs[0]?.status ?? "none"))
          return { accounts, latest }
        })
      ),
    ({ accounts, latest }) => accounts.length > 0 && latest.every((status) => status === "succeeded"),
    { intervalMs: 250, show: ({ accounts, latest }) => `${accounts.length} accounts, last syncs ${latest.join(", ")}\n${base.logs()}` }
  )
  return accounts
}

const waitForSync = (base: RunningServer, account: string, syncId: string): Promise<typeof Sync.Type> =>
  waitFor(
    `sync ${syncId} to end`,
    () => api(base, (client) => client.warehouse.getSync({ path: { projectId: account, syncId } })),
    (sync) => sync.status !== "running",
    { intervalMs: 150 }
  )

/** The account's latest sync, which has read a window (every sync of these tests has). */
const latestSync = async (account: string) => {
  const { syncs } = await api(server, (client) => client.warehouse.listSyncs({ path: { projectId: account }, urlParams: {} }))
  const { windowEnd, windowStart } = syncs[0]!
  expect(windowStart).not.toBeNull()
  expect(windowEnd).not.toBeNull()
  return { windowStart: windowStart!, windowEnd: windowEnd! }
}

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
    const read = await api(server, (client) => client.warehouse.listCampaigns({ path: { projectId }, urlParams: { days, limit: 1000 } }))
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
    const keywords = () => api(server, (client) => client.warehouse.listKeywords({ path: { projectId }, urlParams: { limit: 20 } }))
    const before = await keywords()
    simulator.control.addFaults([{ kind: "status", status: 500, path: "/reports/", times: "always" }])
    try {
      const started = await call(`${server.api}/accounts/${projectId}/syncs`, { method: "POST", key: BOOTSTRAP_KEY })
      expect(started.status).toBe(202)
      expect(started.headers.get("location")).toMatch(new RegExp(`/api/v1/accounts/${projectId}/syncs/syn_`))
      const ended = await waitForSync(server, projectId, Schema.decodeUnknownSync(Sync)(started.body).syncId)
      expect(ended.status).toBe("failed")
      expect(ended.error).toMatch(/500/)
    } finally {
      simulator.control.clearFaults()
    }
    const after = await keywords()
    expect(stripFreshness(after)).toEqual(stripFreshness(before))
    // The failed sync's own metrics table is gone; only attached partitions remain.
    const staged = await query<{ n: number }>(
      database,
      "SELECT count(*)::int AS n FROM pg_class WHERE relkind IN ('r', 'p') AND NOT relispartition AND relname LIKE 'daily_metrics_syn%'"
    )
    expect(staged[0]!.n).toBe(0)
  })

  it("runs one sync per account when two instances are asked at once", async () => {
    // The typed client decodes a 202 as the sync and only a 409 `sync_in_progress` envelope as SyncInProgress.
    const start = (base: RunningServer) => api(base, (client) => Effect.either(client.warehouse.startSync({ path: { projectId } })))
    const answers = await Promise.all([start(server), start(twin)])
    const accepted = answers.flatMap((answer) => answer._tag === "Right" ? [answer.right] : [])
    const refused = answers.flatMap((answer) => answer._tag === "Left" ? [answer.left] : [])
    expect(accepted).toHaveLength(1)
    expect(refused).toHaveLength(1)
    expect(refused[0]).toMatchObject({ _tag: "SyncInProgress" })
    const running = await query<{ n: number }>(database, "SELECT count(*)::int AS n FROM syncs WHERE project_id = $1 AND status = 'running'", [projectId])
    expect(running[0]!.n).toBe(1)
    expect((await waitForSync(server, projectId, accepted[0]!.syncId)).status).toBe("succeeded")
  })
  it("rewrites on a later sync only the months its window touches, and drops a month all past retention", async () => {
    const first = await latestSync(projectId)
    const partitions = async () =>
      new Map((await query<{ name: string; oid: number }>(
        database,
        `SELECT c.relname AS name, c.oid::int AS oid FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'daily_metrics'::regclass AND c.relname LIKE $1`,
        [`daily_metrics_${projectId}_m%`]
      )).map((p) => [p.name, p.oid]))
    // A month every day of which is past the retained days, and the month holding the earliest retained day,
    // as a sync long ago would have left them.
    const gone = monthOf(addDaysIso(first.windowEnd, -(RETAINED_DAYS + 30)))
    const oldestKept = monthOf(addDaysIso(first.windowEnd, -(RETAINED_DAYS - 1)))
    for (const [month, day] of [[gone, gone], [oldestKept, addDaysIso(first.windowEnd, -(RETAINED_DAYS - 1))]] as const) {
      const name = monthPartition(projectId, month)
      await query(database, `CREATE TABLE IF NOT EXISTS ${name} PARTITION OF daily_metrics
        FOR VALUES FROM ('${projectId}', '${month}') TO ('${projectId}', '${nextMonth(month)}')`)
      await query(database, `INSERT INTO daily_metrics VALUES ($1, 'campaigns', 'old', $2, 1, 1, 1, 1) ON CONFLICT DO NOTHING`, [projectId, day])
    }
    const before = await partitions()
    expect([...before.keys()]).toContain(monthPartition(projectId, gone))

    // The platform restates its last days; the next sync reads them again.
    simulator.control.restate()
    const started = await api(server, (client) => client.warehouse.startSync({ path: { projectId } }))
    expect((await waitForSync(server, projectId, started.syncId)).status).toBe("succeeded")
    const later = await latestSync(projectId)
    const touched = monthsFrom(later.windowStart, later.windowEnd).map((month) => monthPartition(projectId, month))
    expect(touched.length).toBeLessThanOrEqual(2)
    const after = await partitions()
    expect(after.has(monthPartition(projectId, gone))).toBe(false)
    expect(after.get(monthPartition(projectId, oldestKept))).toBe(before.get(monthPartition(projectId, oldestKept)))
    for (const [name, oid] of before) {
      if (name === monthPartition(projectId, gone)) continue
      if (touched.includes(name)) expect(after.get(name), name).not.toBe(oid)
      else expect(after.get(name), name).toBe(oid)
    }
    // The copy holds the restated days and, in the months kept, the days before them: the simulator's totals
    // over the 90 days, and the reads (the spend suffixes rebuilt over both) say the same.
    const start = addDaysIso(later.windowEnd, -89)
    for (const level of levels) {
      const rows = await query<{ impressions: string; taps: string; installs: string; spend: string }>(
        database,
        `SELECT coalesce(sum(impressions), 0) AS impressions, coalesce(sum(taps), 0) AS taps,
                coalesce(sum(installs), 0) AS installs, coalesce(sum(spend_micros), 0) AS spend
         FROM daily_metrics WHERE project_id = $1 AND level = $2 AND day BETWEEN $3 AND $4`,
        [projectId, level, start, later.windowEnd]
      )
      const expected = simulator.totals(upstreamAccountId, level, start, later.windowEnd).total
      expect({ level, ...numbers(rows[0]!) }).toEqual({
        level,
        impressions: expected.impressions,
        taps: expected.taps,
        installs: expected.installs,
        spend: expected.spendMicros
      })
    }
    // Every search term with a row in the copy, in the months kept as in those rewritten, is still listed.
    const terms = await query<{ listed: number; active: number }>(
      database,
      `SELECT (SELECT count(*)::int FROM search_terms WHERE project_id = $1) AS listed,
         (SELECT count(DISTINCT entity_key)::int FROM daily_metrics WHERE project_id = $1 AND level = 'searchTerms') AS active`,
      [projectId]
    )
    expect(terms[0]!.active).toBeGreaterThan(0)
    expect(terms[0]!.listed).toBe(terms[0]!.active)
    const read = await api(server, (client) => client.warehouse.listCampaigns({ path: { projectId }, urlParams: { days: 90, limit: 1000 } }))
    expect(sum(read.campaigns).spendMicros).toBe(simulator.totals(upstreamAccountId, "campaigns", start, later.windowEnd).total.spendMicros)
  })
})

describe("reads", () => {
  it("ranks by spend, ties by id, and counts every keyword of the account", async () => {
    const read = await api(server, (client) => client.warehouse.listKeywords({ path: { projectId }, urlParams: { days: 30, limit: 1000 } }))
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
    await api(server, (client) =>
      Effect.gen(function*() {
        const campaigns = yield* client.warehouse.listCampaigns({ path: { projectId }, urlParams: {} })
        const campaignId = campaigns.campaigns[0]!.campaignId
        const adGroups = yield* client.warehouse.listAdGroups({ path: { projectId }, urlParams: { campaignId, limit: 1000 } })
        expect(adGroups.adGroups.every((g) => g.campaignId === campaignId)).toBe(true)
        expect(adGroups.total).toBe(adGroups.adGroups.length)
        const adGroupId = adGroups.adGroups[0]!.adGroupId
        const narrowed = { path: { projectId }, urlParams: { adGroupId, limit: 1000 } }
        const reads: ReadonlyArray<[string, ReadonlyArray<{ readonly adGroupId: string }>]> = [
          ["keywords", (yield* client.warehouse.listKeywords(narrowed)).keywords],
          ["search-terms", (yield* client.warehouse.listSearchTerms(narrowed)).searchTerms],
          ["ads", (yield* client.warehouse.listAds(narrowed)).ads]
        ]
        for (const [path, rows] of reads) {
          expect(rows.length, path).toBeGreaterThan(0)
          expect(rows.every((r) => r.adGroupId === adGroupId), path).toBe(true)
        }
        const negatives = yield* client.warehouse.listNegativeKeywords({ path: { projectId }, urlParams: { campaignId } })
        expect(negatives.negativeKeywords.every((n) => n.campaignId === campaignId)).toBe(true)
        const texts = negatives.negativeKeywords.map((n) => n.text)
        expect(texts).toEqual([...texts].sort())
      })
    )
  })

  it("clamps limit and refuses days out of range, naming the parameter", async () => {
    const keywords = (limit?: number) =>
      api(server, (client) => client.warehouse.listKeywords({ path: { projectId }, urlParams: limit === undefined ? {} : { limit } }))
    const many = await keywords(5000)
    expect(many.keywords).toHaveLength(1000)
    expect(many.truncated).toBe(true)
    expect((await keywords(0)).keywords).toHaveLength(1)
    expect((await keywords()).keywords).toHaveLength(50)
    // The refusals are checked on the wire: the typed client cannot send a days it would not encode.
    for (const days of ["0", "91", "-3", "abc", "2.5"]) {
      const refused = await get(server, `/accounts/${projectId}/keywords?days=${days}`)
      expect(refused.status, days).toBe(400)
      expect(errorCode(refused)).toBe("invalid_request")
      expect(Schema.decodeUnknownSync(ErrorBodies.InvalidRequest)(refused.body).message).toContain("days")
    }
  })

  it("says how fresh the data is, and warns when it is old", async () => {
    const campaigns = (days?: number) =>
      api(server, (client) => client.warehouse.listCampaigns({ path: { projectId }, urlParams: days === undefined ? {} : { days } }))
    const fresh = await campaigns(90)
    expect(fresh.dataFreshness.coverage).toBe("90 of 90 requested days")
    expect(fresh.dataFreshness.warning).toBeUndefined()
    // By hand, with the notification the accounts' owner sends (db/Invalidation.ts).
    await query(database, "UPDATE accounts SET last_synced_at = now() - interval '30 hours' WHERE project_id = $1 RETURNING pg_notify('acs_invalidate', 'a:' || project_id)", [projectId])
    try {
      const stale = await campaigns()
      expect(stale.dataFreshness.ageHours).toBeGreaterThanOrEqual(30)
      expect(stale.dataFreshness.warning).toMatch(/hours old/)
    } finally {
      await query(database, "UPDATE accounts SET last_synced_at = now() WHERE project_id = $1 RETURNING pg_notify('acs_invalidate', 'a:' || project_id)", [projectId])
    }
  })

  it("reports a short history as coverage and warns, when the first sync read only 12 days", async () => {
    const shortDatabase = await createDatabase()
    const short = await startServer(env(shortDatabase, { SYNC_INITIAL_DAYS: "12" }))
    try {
      const accounts = await waitForSyncs(short)
      const usd = accounts.find((a) => a.currency === "USD")!
      const keywords = (days: number) =>
        api(short, (client) => client.warehouse.listKeywords({ path: { projectId: usd.projectId }, urlParams: { days } }))
      const month = await keywords(30)
      expect(month.dataFreshness.coverage).toBe("12 of 30 requested days")
      expect(month.dataFreshness.warning).toContain("12 of 30 requested days")
      const week = await keywords(7)
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

const stripFreshness = <A extends { readonly dataFreshness: unknown }>({ dataFreshness: _ignored, ...rest }: A) => rest

const addDaysIso = (date: string, days: number): string => {
  const d = new Date(`${date}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + days)
  return d.toISOString().slice(0, 10)
}
