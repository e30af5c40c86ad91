/**
 * The sync scheduler: keeps every account within its freshness target (SYNC_INTERVAL_MINUTES), fairly across orgs,
 * within SYNC_CONCURRENCY syncs per instance and SYNC_CONCURRENCY_PER_ORG per org, and never on a credential the
 * platform rate-limited (CredentialLimits.ts). Each pass reads every account's place, lets the pure rule pick
 * (SyncQueue.ts) and claims the picked syncs' `syncs` rows, all in one transaction that holds an advisory lock, so
 * instances plan one at a time and the per-org bound holds across them; the claimed syncs then run here. A pass runs
 * when a sync of this instance ends, after an import, and otherwise when the next account falls due or a limit
 * resets (at least every 10 s, for what other instances changed). The same read answers the queue
 * (`getSyncQueue`) and the `acs_sync_queue_accounts` gauge.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Config, Duration, Effect, Queue, Schema } from "effect"
import type { Granted } from "../auth/Access.ts"
import { Accounts } from "../accounts/Accounts.ts"
import { decodeRows } from "../db/Rows.ts"
import { setSyncQueueGauges } from "../telemetry/Metrics.ts"
import { ORG_CREDENTIAL_PREFIX } from "../accounts/CredentialKey.ts"
import { CredentialLimits } from "./CredentialLimits.ts"
import { planSyncs, type QueueBounds, type QueuedAccount, type QueueEntry } from "./SyncQueue.ts"
import { SyncRuns } from "./SyncRuns.ts"
import { SyncInterval, Syncs } from "./Syncs.ts"

export const SyncBounds = Config.all({
  instance: Config.integer("SYNC_CONCURRENCY").pipe(Config.withDefault(4)),
  perOrg: Config.integer("SYNC_CONCURRENCY_PER_ORG").pipe(Config.withDefault(2))
})

/** One instance plans at a time: the lock's key (the migrations' is 4_242_001). */
const PLANNING_LOCK = 4_242_042
/** The longest a pass waits for its next reason to run: other instances' syncs end without waking this one. */
const POLL_MS = 10_000
/** A failed sync is tried again after this long, or after the freshness target when that is shorter. */
const RETRY_AFTER_FAILURE_MS = 5 * 60_000

const Timestamp = Schema.Union(Schema.DateFromSelf, Schema.DateFromString)
const PlaceRow = Schema.Struct({
  projectId: Schema.String,
  orgId: Schema.String,
  credential: Schema.String,
  createdAt: Timestamp,
  lastSyncedAt: Schema.NullOr(Timestamp),
  latestStatus: Schema.NullOr(Schema.String),
  latestStartedAt: Schema.NullOr(Timestamp),
  latestFinishedAt: Schema.NullOr(Timestamp)
})
const decodePlaces = decodeRows(PlaceRow)

const ms = (date: Date | null): number | null => date === null ? null : date.getTime()

/** A queue entry as the API shows it; with scheduled syncs off, an account not running is `off` and never due. */
export const toQueueEntry = (entry: QueueEntry, names: ReadonlyMap<string, string>, scheduled: boolean) => ({
  projectId: entry.projectId,
  name: names.get(entry.projectId) ?? entry.projectId,
  state: scheduled || entry.state === "running" ? entry.state : "off" as const,
  reason: scheduled ? entry.reason : null,
  dueAt: scheduled ? new Date(entry.dueAt).toISOString() : null,
  until: entry.until === null || !scheduled ? null : new Date(entry.until).toISOString(),
  credential: entry.credential
})

export class SyncScheduler extends Effect.Service<SyncScheduler>()("acs/SyncScheduler", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const syncs = yield* Syncs
    const runs = yield* SyncRuns
    const limits = yield* CredentialLimits
    const accounts = yield* Accounts
    const interval = yield* SyncInterval
    const bounds: QueueBounds = yield* SyncBounds
    const targetMs = interval * 60_000
    const retryAfterFailureMs = Math.min(targetMs, RETRY_AFTER_FAILURE_MS)

    /** Every connected account's place: its credential, last fresh copy and latest sync (the newest row by start). */
    const places = sql`
      SELECT a.project_id, a.org_id, coalesce(c.credential_key, ${ORG_CREDENTIAL_PREFIX} || a.org_id) AS credential, a.created_at,
        a.last_synced_at, l.status AS latest_status, l.started_at AS latest_started_at, l.finished_at AS latest_finished_at
      FROM accounts a
      JOIN connections c ON c.org_id = a.org_id AND c.status = 'ok'
      LEFT JOIN LATERAL (
        SELECT s.status, s.started_at, s.finished_at FROM syncs s WHERE s.project_id = a.project_id ORDER BY s.started_at DESC LIMIT 1
      ) l ON true
      WHERE a.status <> 'disconnected'
      ORDER BY a.org_id, a.project_id`.pipe(Effect.flatMap(decodePlaces), Effect.orDie)

    const toQueued = (row: typeof PlaceRow.Type): QueuedAccount => ({
      projectId: row.projectId,
      orgId: row.orgId,
      credential: row.credential,
      lastFreshAt: ms(row.lastSyncedAt),
      createdAt: row.createdAt.getTime(),
      freshnessTargetMs: targetMs,
      failedAt: row.latestStatus === "failed" ? ms(row.latestFinishedAt) : null,
      running: row.latestStatus === "running",
      lastStartedAt: ms(row.latestStartedAt)
    })

    /** The rule over what the database holds now, with this instance's running syncs. */
    const plan = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* places
      const input = {
        now,
        accounts: rows.map(toQueued),
        runningHere: yield* syncs.runningHere,
        limitedUntil: yield* limits.limitedAt(now),
        bounds,
        retryAfterFailureMs
      }
      return { now, rows, input, plan: planSyncs(input) }
    })

    /** When the next pass has something to do: the next account due, limit reset or retry, within POLL_MS. */
    const nextPassIn = (now: number, entries: ReadonlyArray<QueueEntry>): number => {
      let next = now + POLL_MS
      for (const entry of entries) {
        if (entry.state === "fresh" && entry.dueAt < next) next = entry.dueAt
        if (entry.until !== null && entry.until < next) next = entry.until
      }
      return Math.max(50, next - now)
    }

    /**
     * One pass: plan and claim under the planning lock, then run what was claimed. Answers how long until the next
     * pass; a pass another instance holds the lock for is tried again a moment later.
     */
    const pass = Effect.gen(function*() {
      const planned = yield* sql.withTransaction(Effect.gen(function*() {
        const locked = yield* sql<{ readonly locked: boolean }>`SELECT pg_try_advisory_xact_lock(${PLANNING_LOCK}) AS locked`.pipe(Effect.orDie)
        if (locked[0]?.locked !== true) return undefined
        yield* runs.failAbandoned
        const result = yield* plan
        const claimed = yield* Effect.forEach(result.plan.start, (account) =>
          runs.claim(account.orgId, account.projectId, account.lastFreshAt === null ? "import" : "schedule").pipe(
            Effect.map((row) => row === undefined ? undefined : { account, row })
          ))
        return { ...result, claimed: claimed.filter((c) => c !== undefined) }
      })).pipe(Effect.orDie)
      if (planned === undefined) return 1_000
      const started = new Set(planned.claimed.map((c) => c.account.projectId))
      yield* setSyncQueueGauges(planned.plan.entries.map((e) => started.has(e.projectId) ? "running" : e.state))
      for (const { account, row } of planned.claimed) {
        const record = yield* accounts.find(account.projectId)
        if (record._tag === "Some") yield* syncs.runClaimed(record.value, row)
      }
      if (planned.claimed.length > 0) {
        yield* Effect.logInfo("scheduled syncs started").pipe(Effect.annotateLogs({ started: planned.claimed.length }))
      }
      return nextPassIn(planned.now, planned.plan.entries)
    }).pipe(Effect.withSpan("SyncScheduler.pass"))

    if (interval > 0) {
      yield* Effect.gen(function*() {
        for (;;) {
          const waitMs = yield* pass.pipe(
            Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("sync schedule pass failed", cause), POLL_MS))
          )
          // Woken early by a sync's end or an import; a wake that came during the pass runs the next one at once.
          yield* Effect.raceFirst(Queue.take(syncs.wakes), Effect.sleep(Duration.millis(waitMs)))
        }
      }).pipe(Effect.forkScoped)
    }

    /** The org's accounts in the queue: fresh, due, running or waiting and why, as this instance would plan now (getSyncQueue). */
    const queue = (grant: Granted<"getSyncQueue">) =>
      Effect.gen(function*() {
        const { input, plan: planned } = yield* plan
        const reachable = yield* accounts.listReachable(grant)
        const names = new Map(reachable.map((a) => [a.projectId, a.name]))
        const entries = planned.entries.filter((e) => names.has(e.projectId)).map((e) => toQueueEntry(e, names, interval > 0))
        return {
          scheduled: interval > 0,
          freshnessTargetMinutes: interval,
          bounds: { instance: bounds.instance, perOrg: bounds.perOrg, runningHere: input.runningHere },
          accounts: entries,
          total: entries.length,
          truncated: false
        }
      }).pipe(Effect.withSpan("SyncScheduler.queue"))

    return { pass, queue } as const
  })
}) {}
