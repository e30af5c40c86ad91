/**
 * `pnpm bench --only guard`: the guard's review pass (packages/server/src/guard/Watches.ts) over 10,000 due watches on
 * the warehouse's account of 100,000 keywords. 10,000 applied keyword bid changes are seeded into the ledger, applied
 * 3 days ago, so the sync after them opens their watches (baseline: the 7 days before) and makes each one's 1-day
 * review. The pass runs where production runs it, in acs's process after a sync (after the change history and the
 * hourly spend check); its time is from the first watch it opened to the last review it recorded (the watches'
 * own timestamps; none of the reviews proposes a revert: a 1-day review only warns). Beside it:
 * - the statements acs sent that read or write `watches` (pg_stat_statements, role `postgres`), per batch;
 * - acs's CPU for the pass: the CPU of a sync with the pass, less that of the same sync before the seed (nothing due).
 * - key proposals per second (8 clients) while the pass over another 10,000 watches runs (from the first watch it
 *   opened to the last review), against the same span after the end of a sync with nothing due, in pairs (the median
 *   of ROUNDS): the proposals run from the sync's start to past the pass, and each one's time is its ledger row's.
 */
import type { BenchCluster } from "./cluster.ts"
import { makePool, type Pool } from "./pg.ts"
import { type AcsInstance, toSyncInfo, waitForSync } from "./acs.ts"
import { processCpuSeconds } from "./cpu.ts"
import { fmt, type TargetRow } from "./report.ts"
import { makeHttpClient } from "./measure.ts"
import { statementDelta, statementSnapshot } from "./statements.ts"
import { BOOTSTRAP_KEY, STALL_SECONDS, SYNC_TIMEOUT_MS, WAREHOUSE_DATABASE, type Warehouse } from "./warehouse.ts"

export const WATCHES = 10_000
/** Watches one statement reviews (Watches.ts `BATCH`). */
const BATCH = 1_000
export const TARGET_PASS_MS = 5_000
/** Proposals while a pass runs, against the same sync with nothing due: at least this share. */
export const TARGET_PROPOSALS_SHARE = 0.95
const PROPOSAL_CLIENTS = 8
/** Pairs of windows (with the pass, then with nothing due) whose median share is the result. */
const ROUNDS = 3

export interface ProposalRound {
  readonly withPass: number
  readonly quiet: number
  /** The pass's span (first watch opened → last review), in ms. */
  readonly passMs: number
}

export interface GuardResults {
  readonly watches: number
  readonly opened: number
  readonly reviewed: number
  readonly passMs: number
  readonly guardStatements: number
  readonly batches: number
  readonly passCpuMs: number | null
  /** Each pair's key proposals per second while the pass ran, and over the same span after a sync with nothing due. */
  readonly proposalRounds: ReadonlyArray<ProposalRound>
  readonly quietSync: { readonly wallMs: number; readonly cpuMs: number | null }
  readonly busySync: { readonly wallMs: number; readonly cpuMs: number | null }
  readonly top: ReadonlyArray<{ readonly query: string; readonly calls: number; readonly meanMs: number }>
}

/** Applied keyword bid changes on `count` keywords with metrics, 3 days ago, proposed by a key. */
const seed = async (pool: Pool, projectId: string, count: number, offset = 0) => {
  await pool.query("UPDATE accounts SET watched_since = now() - interval '30 days' WHERE project_id = $1 RETURNING pg_notify('acs_invalidate', 'a:' || project_id)", [projectId])
  await pool.query(
    `INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason,
       payload, proposed_by, created_at, decided_at, applied_at)
     SELECT 'act_guard_' || ($3::int + k.i), a.org_id, a.project_id, 'keyword_bid_change', 'queued', 'applied', 'review', '[]'::jsonb,
       'Raise the bid of keyword "' || k.text || '"', 'guard bench',
       jsonb_build_object('currency', 'USD', 'keywords', jsonb_build_array(jsonb_build_object('keywordId', k.keyword_id,
         'adGroupId', k.ad_group_id, 'campaignId', k.campaign_id, 'text', k.text, 'priorBidMicros', k.bid_micros,
         'newBidMicros', k.bid_micros + 10000))),
       '{"kind":"key","id":"key_guard_bench","name":"guard bench"}'::jsonb,
       now() - interval '3 days' - ($3::int + k.i) * interval '1 millisecond', now() - interval '3 days' - k.i * interval '1 millisecond',
       now() - interval '3 days' - k.i * interval '1 millisecond'
     FROM accounts a,
       (SELECT row_number() OVER (ORDER BY keyword_id) AS i, keyword_id, ad_group_id, campaign_id, text, COALESCE(bid_micros, 100000) AS bid_micros
        FROM keywords WHERE project_id = $1 ORDER BY keyword_id LIMIT $2 OFFSET $3) k
     WHERE a.project_id = $1`,
    [projectId, count, offset]
  )
}

/** Key proposals in a closed loop (budget cuts of 1 to 20 cents, each queued) from `clients` clients until `stop()`. */
const proposeUntil = async (acs: AcsInstance, pool: Pool, projectId: string, clients: number, stop: () => boolean): Promise<void> => {
  const { rows } = await pool.query<{ campaign_id: string; budget: string }>(
    "SELECT campaign_id, daily_budget_micros::text AS budget FROM campaigns WHERE project_id = $1 AND daily_budget_micros > 1000000 ORDER BY campaign_id LIMIT 50",
    [projectId]
  )
  const url = `${acs.api}/accounts/${projectId}/actions/budget-change`
  let sequence = 0
  await Promise.all(Array.from({ length: clients }, async () => {
    const client = makeHttpClient({ authorization: `Bearer ${BOOTSTRAP_KEY}` })
    try {
      while (!stop()) {
        const i = sequence++
        const campaign = rows[i % rows.length]!
        await client.sendJson("POST", url, { campaignId: campaign.campaign_id, newDailyBudgetMicros: Number(campaign.budget) - 10_000 * (1 + (i % 20)), reason: "guard bench" })
      }
    } finally {
      client.close()
    }
  }))
}

/** Key proposals per second whose ledger time falls in [from, to). */
const proposalRate = async (pool: Pool, projectId: string, from: number, to: number): Promise<number> => {
  const { rows } = await pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM actions WHERE project_id = $1 AND reason = 'guard bench' AND created_at >= $2 AND created_at < $3",
    [projectId, new Date(from), new Date(to)]
  )
  return (rows[0]?.n ?? 0) / ((to - from) / 1000)
}

/**
 * Key proposals from a sync's start until `settled` (the pass's end, or nothing) and `tailMs` more; answers when the
 * sync ended (its row's time). The window's proposals (queued, never applied) are removed after they are counted by
 * `count`, so every window starts from the same ledger: thousands of waiting proposals slow the next ones down on
 * their own (bench/history.md).
 */
const proposalsAroundSync = async <A>(
  acs: AcsInstance,
  pool: Pool,
  projectId: string,
  log: (message: string) => void,
  settled: () => Promise<void>,
  tailMs: number,
  count: (syncEnd: number) => Promise<A>
): Promise<A> => {
  let stopped = false
  const load = proposeUntil(acs, pool, projectId, PROPOSAL_CLIENTS, () => stopped)
  try {
    const syncId = await syncOnce(acs, pool, projectId, log).then((s) => s.syncId)
    await settled()
    await new Promise((resolve) => setTimeout(resolve, tailMs))
    stopped = true
    await load
    const { rows } = await pool.query<{ t: Date }>("SELECT finished_at AS t FROM syncs WHERE sync_id = $1", [syncId])
    return await count(rows[0]!.t.getTime())
  } finally {
    stopped = true
    await load
    // Without the foreign keys' triggers: each deleted row would scan `actions` for rows naming it (revert_of has no index).
    const client = await pool.connect()
    try {
      await client.query("SET session_replication_role = replica")
      await client.query("DELETE FROM events WHERE project_id = $1 AND type = 'action.proposed'", [projectId])
      await client.query("DELETE FROM actions WHERE project_id = $1 AND reason = 'guard bench' AND status = 'proposed'", [projectId])
    } finally {
      await client.query("RESET session_replication_role")
      client.release()
    }
  }
}

/**
 * One pair: a sync whose pass opens and reviews `WATCHES` more watches (seeded after `offset` keywords) with key
 * proposals throughout, then a sync with nothing due; each window's rate over the pass's span (relative to its
 * sync's end).
 */
const proposalRound = async (acs: AcsInstance, pool: Pool, projectId: string, offset: number, log: (message: string) => void): Promise<ProposalRound> => {
  await seed(pool, projectId, WATCHES, offset)
  const before = new Date()
  const pass = await proposalsAroundSync(acs, pool, projectId, log, () => reviewsDone(pool, projectId, 300_000, offset + WATCHES).then(() => undefined), 1_000, async (syncEnd) => {
    const { rows } = await pool.query<{ first: Date; last: Date }>(
      `SELECT min(w.created_at) AS first, max((w.record #>> '{reviews,0,reviewedAt}')::timestamptz) AS last
       FROM watches w WHERE w.project_id = $1 AND w.created_at >= $2`,
      [projectId, before]
    )
    const first = rows[0]!.first.getTime()
    const last = rows[0]!.last.getTime()
    return { from: first - syncEnd, to: last - syncEnd, withPass: await proposalRate(pool, projectId, first, last) }
  })
  const quiet = await proposalsAroundSync(acs, pool, projectId, log, () => Promise.resolve(), pass.to + 1_000, (syncEnd) =>
    proposalRate(pool, projectId, syncEnd + pass.from, syncEnd + pass.to))
  log(`  key proposals per second while the pass ran (${fmt(pass.to - pass.from)} ms): ${fmt(pass.withPass, 0)}; the same span with nothing due: ${fmt(quiet, 0)}`)
  return { withPass: pass.withPass, quiet, passMs: pass.to - pass.from }
}

const syncOnce = async (acs: AcsInstance, pool: Pool, projectId: string, log: (message: string) => void) => {
  const cpuBefore = processCpuSeconds(acs.pid)
  const startedAt = Date.now()
  const begun = toSyncInfo(await acs.client.postJson(`${acs.api}/accounts/${projectId}/syncs`))
  const outcome = await waitForSync({ acs, pool, projectId, syncId: begun.syncId, stallSeconds: STALL_SECONDS, timeoutMs: SYNC_TIMEOUT_MS, log })
  if (outcome.sync.status !== "succeeded") throw new Error(`the guard bench's sync ended ${outcome.sync.status}: ${outcome.sync.error ?? ""}`)
  return { startedAt, cpuBefore, syncId: begun.syncId }
}

/**
 * Waits until every seeded watch has its review; answers how many were opened and reviewed. It polls every 200 ms
 * with index reads only (the opened watches' keys, and whether any is still due): counting reviews by scanning
 * `watches`, whose records are large, every 50 ms took a core from the proposals measured beside it.
 */
const reviewsDone = async (pool: Pool, projectId: string, timeoutMs: number, expected = WATCHES): Promise<{ readonly opened: number; readonly reviewed: number }> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const { rows } = await pool.query<{ opened: number; due: boolean }>(
      `SELECT (SELECT count(*)::int FROM watches WHERE project_id = $1) AS opened,
         EXISTS (SELECT 1 FROM watches w JOIN accounts a ON a.project_id = w.project_id
           WHERE w.project_id = $1 AND w.next_review_day <= a.last_synced_day) AS due`,
      [projectId]
    )
    const opened = rows[0]?.opened ?? 0
    if (opened >= expected && rows[0]?.due === false) {
      const { rows: counted } = await pool.query<{ reviewed: number }>(
        "SELECT count(*) FILTER (WHERE reviews_done > 0)::int AS reviewed FROM watches WHERE project_id = $1",
        [projectId]
      )
      return { opened, reviewed: counted[0]?.reviewed ?? 0 }
    }
    if (Date.now() > deadline) throw new Error(`after ${timeoutMs / 1000} s the pass had opened ${opened} watches and still had some due`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

export const benchGuard = async (cluster: BenchCluster, warehouse: Warehouse, log: (message: string) => void): Promise<GuardResults> => {
  // pg_stat_statements is created in the cluster's `postgres` database; its view shows every database.
  const stats = makePool({ connectionString: cluster.benchUrl("postgres"), max: 1 })
  try {
    return await measure(stats, warehouse, log)
  } finally {
    await stats.end()
  }
}

const measure = async (stats: Pool, warehouse: Warehouse, log: (message: string) => void): Promise<GuardResults> => {
  const { pool, projectId } = warehouse
  const acs = warehouse.acs()
  log("a sync with nothing due (the CPU it costs without the guard's work)")
  const quiet = await syncOnce(acs, pool, projectId, log)
  // The pass runs after the sync's end: wait until acs is idle again (its CPU stops moving) before reading it.
  await new Promise((resolve) => setTimeout(resolve, 3_000))
  const quietCpu = processCpuSeconds(acs.pid)
  const quietSync = { wallMs: Date.now() - quiet.startedAt - 3_000, cpuMs: quietCpu === null || quiet.cpuBefore === null ? null : (quietCpu - quiet.cpuBefore) * 1000 }

  log(`seeding ${fmt(WATCHES)} applied keyword bid changes, applied 3 days ago`)
  await seed(pool, projectId, WATCHES)
  const before = await statementSnapshot(stats, WAREHOUSE_DATABASE)
  log("a sync whose pass opens and reviews them")
  const busy = await syncOnce(acs, pool, projectId, log)
  const done = await reviewsDone(pool, projectId, 300_000)
  // The pass's own time: from the first watch it opened (the statement's start) to the last review recorded.
  const { rows: span } = await pool.query<{ ms: number }>(
    `SELECT (extract(epoch FROM max((w.record #>> '{reviews,0,reviewedAt}')::timestamptz) - min(w.created_at)) * 1000)::float8 AS ms
     FROM watches w WHERE w.project_id = $1`,
    [projectId]
  )
  await new Promise((resolve) => setTimeout(resolve, 3_000))
  const busyCpu = processCpuSeconds(acs.pid)
  const after = await statementSnapshot(stats, WAREHOUSE_DATABASE)
  const busySync = { wallMs: Date.now() - busy.startedAt - 3_000, cpuMs: busyCpu === null || busy.cpuBefore === null ? null : (busyCpu - busy.cpuBefore) * 1000 }
  const delta = statementDelta(before, after)

  const proposalRounds: Array<ProposalRound> = []
  for (let round = 1; round <= ROUNDS; round++) {
    log(`round ${round} of ${ROUNDS}: ${fmt(WATCHES)} more changes, key proposals at ${PROPOSAL_CLIENTS} clients through the sync whose pass reviews them, then through a sync with nothing due`)
    proposalRounds.push(await proposalRound(acs, pool, projectId, round * WATCHES, log))
  }
  const guardTop = delta.top.filter((s) => /\bwatches\b/.test(s.query))
  const guardStatements = guardTop.reduce((n, s) => n + s.calls, 0)
  const { opened, reviewed } = done
  return {
    watches: WATCHES,
    opened,
    reviewed,
    passMs: span[0]?.ms ?? Number.NaN,
    guardStatements,
    // The opening statements and one per review batch, plus the last batch that finds nothing due.
    batches: Math.ceil(opened / BATCH) + Math.ceil(reviewed / BATCH) + 1,
    passCpuMs: busySync.cpuMs === null || quietSync.cpuMs === null ? null : busySync.cpuMs - quietSync.cpuMs,
    proposalRounds,
    quietSync,
    busySync,
    top: guardTop.map((s) => ({ query: s.query, calls: s.calls, meanMs: s.meanMs }))
  }
}

/** The median over the pairs of the rate while the pass ran against the same span with nothing due. */
const proposalShare = (r: GuardResults): number => {
  const shares = r.proposalRounds.map((p) => p.withPass / p.quiet).toSorted((a, b) => a - b)
  return shares[Math.floor(shares.length / 2)] ?? Number.NaN
}

export const guardTargets = (r: GuardResults): Array<TargetRow> => [
  {
    name: `guard: review pass over ${fmt(r.reviewed)} due watches (opened ${fmt(r.opened)}), 100,000-keyword account`,
    target: `≤ ${fmt(TARGET_PASS_MS)} ms`,
    measured: `${fmt(r.passMs)} ms`,
    value: r.passMs,
    pass: r.reviewed >= r.watches && r.passMs <= TARGET_PASS_MS
  },
  {
    name: "guard: statements on watches per batch (of 1,000)",
    target: "set-based: ≤ 3",
    measured: fmt(r.guardStatements / r.batches, 1),
    value: r.guardStatements / r.batches,
    pass: r.guardStatements / r.batches <= 3
  },
  {
    name: `guard: key proposals at ${PROPOSAL_CLIENTS} clients while the pass runs, against the same span after a sync with nothing due`,
    target: `≥ ${fmt(TARGET_PROPOSALS_SHARE * 100, 0)} %`,
    measured: `${fmt(proposalShare(r) * 100, 1)} % (median of ${r.proposalRounds.length} pairs)`,
    value: proposalShare(r),
    pass: proposalShare(r) >= TARGET_PROPOSALS_SHARE
  },
  {
    name: "guard: acs CPU per watch (the sync with the pass less the sync without)",
    target: "informational",
    measured: r.passCpuMs === null ? "n/a" : `${fmt(r.passCpuMs / Math.max(1, r.reviewed), 3)} ms`,
    value: r.passCpuMs === null ? null : r.passCpuMs / Math.max(1, r.reviewed),
    pass: null
  }
]

export const guardDetails = (r: GuardResults): Array<string> => [
  `key proposals per second (${PROPOSAL_CLIENTS} clients) while the pass ran / over the same span after a sync with nothing due: ` +
  r.proposalRounds.map((p) => `${fmt(p.withPass, 0)} / ${fmt(p.quiet, 0)} (${fmt(p.passMs)} ms)`).join(", "),
  `sync without anything due: ${fmt(r.quietSync.wallMs)} ms, acs CPU ${r.quietSync.cpuMs === null ? "n/a" : `${fmt(r.quietSync.cpuMs)} ms`}; ` +
  `with the pass: ${fmt(r.busySync.wallMs)} ms, acs CPU ${r.busySync.cpuMs === null ? "n/a" : `${fmt(r.busySync.cpuMs)} ms`}`,
  `statements on watches (${fmt(r.guardStatements)} in ${r.batches} batches):`,
  ...r.top.map((s) => `  ${fmt(s.calls)} × ${fmt(s.meanMs, 1)} ms  ${s.query}`),
  ""
]
