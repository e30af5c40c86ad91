/**
 * `pnpm bench --only scale`: agency-scale syncing from cold on one machine. 200 small simulator accounts (1 campaign,
 * 2 ad groups of 10 keywords, 90 days) over 20 orgs, one org holding 100 of them and the other 19 holding 5 or 6; each
 * org connected with an Apple Ads API client of its own; the simulator enforcing a request budget per API client
 * (BUDGET: 429 with Retry-After beyond it). One acs instance with the sync scheduler's defaults (4 syncs at once, 2 per
 * org, 60-minute freshness target). The big org imports first, then the others, as an agency onboarding would.
 *
 * Reported: the time from the first import to every account fresh; the freshness lag once all are fresh (p95 of each
 * copy's age at that moment, and of each account's import → fresh); upstream calls per account (the simulator's call
 * log, token requests and refused calls included); the fairness, as each org's wait (import → its syncs' starts): the
 * max / median over orgs of the wait for an org's first sync, and of the org's median wait; and the most syncs that
 * ran at once, per instance and per org (from the `syncs` rows: the bounds, a target).
 */
import { type Simulator, startSimulator } from "../../packages/upstream/src/simulator/Simulator.ts"
import { ACCOUNT_MANAGER, type AccountPlan } from "../../packages/upstream/src/simulator/SimulatorSize.ts"
import { type AcsInstance, startAcs } from "./acs.ts"
import type { BenchCluster } from "./cluster.ts"
import { array, record, string } from "./json.ts"
import { makeHttpClient } from "./measure.ts"
import { makePool } from "./pg.ts"
import { fmt, type TargetRow } from "./report.ts"
import { mostAtOnce } from "../../packages/server/test/support/intervals.ts"

const DATABASE = "acs_bench_scale"
const BOOTSTRAP_KEY = "acs_bench_scale_key_0123456789abcdefghijklmnopqrs"
const SECRETS_KEY = Buffer.alloc(32, 9).toString("base64")
const ACCOUNTS = 200
const ORGS = 20
const BIG_ORG_ACCOUNTS = 100
/** Per API client: what the simulator lets through before answering 429 (Apple publishes no numbers). */
export const BUDGET = { limit: 300, windowSeconds: 10 }
export const BOUNDS = { instance: 4, perOrg: 2 }
const TIMEOUT_MS = 15 * 60_000

const ACCOUNT: Omit<AccountPlan, "name"> = {
  currency: "USD",
  timeZone: "America/New_York",
  roleNames: [ACCOUNT_MANAGER],
  countriesOrRegions: ["US"],
  campaigns: 1,
  adGroupsPerCampaign: 2,
  keywordsPerAdGroup: 10,
  keywordSpread: 0
}

export interface ScaleResults {
  readonly accounts: number
  readonly orgs: number
  readonly bigOrgAccounts: number
  readonly accountShape: string
  readonly budget: typeof BUDGET
  readonly bounds: typeof BOUNDS
  readonly allFreshSeconds: number
  readonly p95CopyAgeSeconds: number
  readonly p95ImportToFreshSeconds: number
  readonly upstreamCallsPerAccount: number
  readonly refusedPerAccount: number
  readonly firstSyncWait: { readonly maxSeconds: number; readonly medianSeconds: number; readonly ratio: number }
  readonly orgMedianWait: { readonly maxSeconds: number; readonly medianSeconds: number; readonly ratio: number }
  readonly bigOrgMedianWaitSeconds: number
  readonly smallOrgsAllFreshSeconds: number
  readonly mostAtOnce: number
  readonly mostAtOnceInAnOrg: number
  readonly failedSyncs: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const quantile = (values: ReadonlyArray<number>, q: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}
const median = (values: ReadonlyArray<number>) => quantile(values, 0.5)


/** The org's admin key: the bootstrap key for the first org, one made in SQL for each other. */
const orgKey = (n: number) => n === 0 ? BOOTSTRAP_KEY : `acs_bench_scale_org_${String(n).padStart(2, "0")}_0123456789abcdefghijklmn`

export const benchScale = async (cluster: BenchCluster, log: (message: string) => void): Promise<ScaleResults> => {
  await cluster.createDatabase(DATABASE)
  const stops: Array<() => Promise<void> | void> = []
  try {
    log(`scale: ${ACCOUNTS} accounts over ${ORGS} orgs (one holding ${BIG_ORG_ACCOUNTS}), budget ${BUDGET.limit} per ${BUDGET.windowSeconds} s per API client`)
    const simulator: Simulator = await startSimulator({
      seed: 39,
      size: { accounts: Array.from({ length: ACCOUNTS }, (_, n) => ({ ...ACCOUNT, name: `Agency client ${n}` })) },
      rateLimit: { ...BUDGET, enforce: true }
    })
    stops.push(() => simulator.close())
    const acs: AcsInstance = await startAcs({
      DATABASE_URL: cluster.url(DATABASE),
      ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
      ACS_SECRETS_KEY: SECRETS_KEY,
      UPSTREAM: "apple",
      APPLE_V1_API_URL: simulator.apiV1Url,
      APPLE_TOKEN_URL: simulator.tokenUrl,
      SYNC_INTERVAL_MINUTES: "60",
      SYNC_CONCURRENCY: String(BOUNDS.instance),
      SYNC_CONCURRENCY_PER_ORG: String(BOUNDS.perOrg),
      // Two syncs of the big org share its budget: more tries than the default before a sync gives up.
      UPSTREAM_MAX_RETRIES: "10",
      CHANGE_HISTORY_POLL_SECONDS: "0",
      WEBHOOK_CONCURRENCY: "0",
      RATE_LIMIT_READ: "100000000",
      RATE_LIMIT_WRITE: "100000000",
      RATE_LIMIT_EXPENSIVE: "100000000",
      LOG_LEVEL: "warn"
    }, BOOTSTRAP_KEY)
    stops.push(() => acs.stop())
    const pool = makePool({ connectionString: cluster.url(DATABASE), max: 2 })
    stops.push(() => pool.end())

    const orgIds = [string(record((await pool.query("SELECT org_id FROM orgs ORDER BY created_at LIMIT 1")).rows[0], "org"), "org_id")]
    for (let n = 1; n < ORGS; n++) {
      const orgId = `org_scale_${String(n).padStart(2, "0")}`
      await pool.query("INSERT INTO orgs (org_id, name) VALUES ($1, $1)", [orgId])
      await pool.query(
        `INSERT INTO api_keys (key_id, org_id, name, secret_hash, scope, can_approve, binding_kind, project_ids, created_by)
         VALUES ($1, $2, 'admin', encode(sha256($3::bytea), 'hex'), 'admin', false, 'org', '[]', 'operator')`,
        [`key_scale_${n}`, orgId, orgKey(n)]
      )
      orgIds.push(orgId)
    }
    // Each org's API client: acs's key pair, registered as an Apple Ads admin would.
    for (let n = 0; n < ORGS; n++) {
      const client = makeHttpClient({ authorization: `Bearer ${orgKey(n)}` })
      const pair = record(await client.sendJson("POST", `${acs.api}/connection/keypair`, {}), "key pair")
      const ids = simulator.control.registerApiClient(string(pair, "publicKeyPem"))
      if (ids === null) throw new Error("scale: the simulator refused acs's public key")
      await client.sendJson("PUT", `${acs.api}/connection`, { clientId: ids.clientId, teamId: ids.teamId, keyId: ids.keyId })
      client.close()
    }
    simulator.control.clearCalls()

    // The big org's 100, then 5 or 6 for each of the others.
    const upstreamIds = simulator.accounts.map((a) => String(a.orgId))
    const shares = [BIG_ORG_ACCOUNTS, ...Array.from({ length: ORGS - 1 }, (_, i) => i < (ACCOUNTS - BIG_ORG_ACCOUNTS) % (ORGS - 1) ? 6 : 5)]
    const startedAt = Date.now()
    let offset = 0
    for (let n = 0; n < ORGS; n++) {
      const client = makeHttpClient({ authorization: `Bearer ${orgKey(n)}` })
      const imported = record(
        await client.sendJson("POST", `${acs.api}/accounts/import`, { upstreamAccountIds: upstreamIds.slice(offset, offset + shares[n]!) }),
        "import"
      )
      if (array(imported["accounts"], "accounts").length !== shares[n]) throw new Error(`scale: org ${n} imported the wrong number`)
      offset += shares[n]!
      client.close()
    }
    log(`scale: imported in ${fmt((Date.now() - startedAt) / 1000, 1)} s; waiting for every account to be fresh`)

    let fresh = 0
    while (fresh < ACCOUNTS) {
      if (Date.now() - startedAt > TIMEOUT_MS) throw new Error(`scale: ${fresh} of ${ACCOUNTS} fresh after ${TIMEOUT_MS / 60_000} minutes\n${acs.logs()}`)
      await sleep(250)
      fresh = Number((await pool.query("SELECT count(*)::int AS n FROM accounts WHERE last_synced_at IS NOT NULL")).rows[0].n)
    }

    const accounts = (await pool.query<{ project_id: string; org_id: string; created_at: Date; last_synced_at: Date }>(
      "SELECT project_id, org_id, created_at, last_synced_at FROM accounts"
    )).rows
    const syncs = (await pool.query<{ project_id: string; org_id: string; status: string; started_at: Date; finished_at: Date }>(
      "SELECT project_id, org_id, status, started_at, finished_at FROM syncs WHERE finished_at IS NOT NULL"
    )).rows
    const allFresh = Math.max(...accounts.map((a) => a.last_synced_at.getTime()))
    const firstImport = Math.min(...accounts.map((a) => a.created_at.getTime()))
    const importOf = new Map(accounts.map((a) => [a.project_id, a.created_at.getTime()]))
    const firstStart = new Map<string, number>()
    for (const s of syncs) {
      const at = s.started_at.getTime()
      if (!firstStart.has(s.project_id) || at < firstStart.get(s.project_id)!) firstStart.set(s.project_id, at)
    }
    const waitOf = (projectId: string) => (firstStart.get(projectId)! - importOf.get(projectId)!) / 1000
    const byOrg = new Map<string, Array<string>>()
    for (const a of accounts) byOrg.set(a.org_id, [...(byOrg.get(a.org_id) ?? []), a.project_id])
    const orgFirstWaits = [...byOrg.values()].map((ids) => Math.min(...ids.map(waitOf)))
    const orgMedianWaits = [...byOrg.values()].map((ids) => median(ids.map(waitOf)))
    const bigOrg = orgIds[0]!
    const smallFresh = Math.max(...accounts.filter((a) => a.org_id !== bigOrg).map((a) => a.last_synced_at.getTime()))
    const calls = simulator.control.listCalls()
    const ratio = (values: ReadonlyArray<number>) => {
      const most = Math.max(...values)
      const middle = median(values)
      return { maxSeconds: most, medianSeconds: middle, ratio: middle > 0 ? most / middle : Number.POSITIVE_INFINITY }
    }
    const intervals = (rows: typeof syncs) => rows.map((s) => [s.started_at.getTime(), s.finished_at.getTime()] as const)
    return {
      accounts: ACCOUNTS,
      orgs: ORGS,
      bigOrgAccounts: BIG_ORG_ACCOUNTS,
      accountShape: `${ACCOUNT.campaigns} campaign × ${ACCOUNT.adGroupsPerCampaign} ad groups × ${ACCOUNT.keywordsPerAdGroup} keywords, 90 days`,
      budget: BUDGET,
      bounds: BOUNDS,
      allFreshSeconds: (allFresh - firstImport) / 1000,
      p95CopyAgeSeconds: quantile(accounts.map((a) => (allFresh - a.last_synced_at.getTime()) / 1000), 0.95),
      p95ImportToFreshSeconds: quantile(accounts.map((a) => (a.last_synced_at.getTime() - a.created_at.getTime()) / 1000), 0.95),
      upstreamCallsPerAccount: calls.length / ACCOUNTS,
      refusedPerAccount: calls.filter((c) => c.status === 429).length / ACCOUNTS,
      firstSyncWait: ratio(orgFirstWaits),
      orgMedianWait: ratio(orgMedianWaits),
      bigOrgMedianWaitSeconds: median(byOrg.get(bigOrg)!.map(waitOf)),
      smallOrgsAllFreshSeconds: (smallFresh - firstImport) / 1000,
      mostAtOnce: mostAtOnce(intervals(syncs)),
      mostAtOnceInAnOrg: Math.max(...[...byOrg.keys()].map((org) => mostAtOnce(intervals(syncs.filter((s) => s.org_id === org))))),
      failedSyncs: syncs.filter((s) => s.status === "failed").length
    }
  } finally {
    for (const stop of stops.reverse()) {
      try {
        await stop()
      } catch (error) {
        log(`scale: stopping failed: ${String(error)}`)
      }
    }
  }
}

export const scaleTargets = (r: ScaleResults): Array<TargetRow> => [
  {
    name: `time to all ${r.accounts} accounts fresh, from cold`,
    target: "(reported)",
    measured: `${fmt(r.allFreshSeconds, 1)} s (the 19 small orgs' ${r.accounts - r.bigOrgAccounts}: ${fmt(r.smallOrgsAllFreshSeconds, 1)} s)`,
    value: r.allFreshSeconds,
    pass: null
  },
  {
    name: "freshness lag once all are fresh: p95 copy age / p95 import → fresh",
    target: "(reported)",
    measured: `${fmt(r.p95CopyAgeSeconds, 1)} s / ${fmt(r.p95ImportToFreshSeconds, 1)} s`,
    value: r.p95CopyAgeSeconds,
    pass: null
  },
  {
    name: "upstream calls per account (429s among them)",
    target: "(reported)",
    measured: `${fmt(r.upstreamCallsPerAccount, 1)} (${fmt(r.refusedPerAccount, 2)})`,
    value: r.upstreamCallsPerAccount,
    pass: null
  },
  {
    // Orgs take turns: each org's first sync starts within one round of the others, whatever the big org holds.
    name: "fairness: wait for an org's first sync, max / median over orgs",
    target: "<= 3x",
    measured: `${fmt(r.firstSyncWait.ratio, 2)}x (${fmt(r.firstSyncWait.maxSeconds, 1)} / ${fmt(r.firstSyncWait.medianSeconds, 1)} s)`,
    value: r.firstSyncWait.ratio,
    pass: r.firstSyncWait.ratio <= 3
  },
  {
    name: "fairness: an org's median wait, max / median over orgs",
    target: "(reported: the big org waits for its own 100)",
    measured: `${fmt(r.orgMedianWait.ratio, 2)}x (${fmt(r.orgMedianWait.maxSeconds, 1)} / ${fmt(r.orgMedianWait.medianSeconds, 1)} s; big org ${
      fmt(r.bigOrgMedianWaitSeconds, 1)
    } s)`,
    value: r.orgMedianWait.ratio,
    pass: null
  },
  {
    name: "most syncs at once: on the instance / in one org; syncs failed",
    target: `<= ${r.bounds.instance} / <= ${r.bounds.perOrg}; 0`,
    measured: `${r.mostAtOnce} / ${r.mostAtOnceInAnOrg}; ${r.failedSyncs}`,
    value: r.mostAtOnce,
    pass: r.mostAtOnce <= r.bounds.instance && r.mostAtOnceInAnOrg <= r.bounds.perOrg && r.failedSyncs === 0
  }
]

export const scaleDetails = (r: ScaleResults): Array<string> => [
  `scale: ${r.accounts} accounts of ${r.accountShape}, over ${r.orgs} orgs (one of ${r.bigOrgAccounts}, the others 5 or 6), ` +
  `one API client per org, the simulator's budget ${r.budget.limit} requests per ${r.budget.windowSeconds} s per client (enforced), ` +
  `one acs instance: ${r.bounds.instance} syncs at once, ${r.bounds.perOrg} per org`,
  ""
]
