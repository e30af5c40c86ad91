/**
 * Approval expiry (docs/contract.md 3.2): an action queued for a human expires once its org's
 * `approvalTtlHours` (default 72) have passed since it was queued, with status `expired`, a reason, and its
 * `action.expired` event. A sweep every APPROVAL_EXPIRY_SWEEP_SECONDS expires what is due on every instance
 * (the guarded transition makes a second sweeper's attempt a no-op); an approval of an action that is due
 * expires it first (Approvals.ts), so nothing past its time is approved because the sweep had not come yet.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Config, Duration, Effect, Layer, Schedule, Schema } from "effect"
import { Transitions } from "./Transitions.ts"

export const ExpiryConfig = Config.integer("APPROVAL_EXPIRY_SWEEP_SECONDS").pipe(Config.withDefault(60))

const reasonFor = (ttlHours: number) => `expired: nobody approved or rejected it within ${ttlHours} hours (the org's approvalTtlHours)`

const decodeTtl = Schema.decodeUnknown(Schema.Array(Schema.Struct({ approvalTtlHours: Schema.Number })))
const decodeAccounts = Schema.decodeUnknown(Schema.Array(Schema.Struct({ projectId: Schema.String })))
const decodeDue = Schema.decodeUnknown(Schema.Array(Schema.Struct({ projectId: Schema.String, actionId: Schema.String, approvalTtlHours: Schema.Number })))

export class ApprovalExpiry extends Effect.Service<ApprovalExpiry>()("acs/ApprovalExpiry", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const transitions = yield* Transitions

    /** Expires `actionId` when it is due now; answers whether it did. */
    const expireIfDue = (projectId: string, actionId: string) =>
      Effect.gen(function*() {
        const now = new Date(yield* Clock.currentTimeMillis)
        const ttl = yield* sql`
          SELECT o.approval_ttl_hours FROM actions a JOIN orgs o ON o.org_id = a.org_id
          WHERE a.project_id = ${projectId} AND a.action_id = ${actionId}`.pipe(Effect.flatMap(decodeTtl), Effect.orDie)
        if (ttl[0] === undefined) return false
        return yield* transitions.expire({ projectId, actionId }, reasonFor(ttl[0].approvalTtlHours), now)
      })

    /** One pass: every queued action past its org's TTL (a bounded batch; the next pass takes the rest). */
    const sweep = Effect.gen(function*() {
      const now = new Date(yield* Clock.currentTimeMillis)
      // Per account through the queue's partial index (actions_pending: project_id, created_at WHERE pending), bounded
      // by the shortest TTL of any org: queued_at is never before created_at, so nothing created later can be due. A
      // scan of the whole ledger (a 1,000,000-row account took 0.85 s) is never needed.
      // One statement per account, each naming it: on Citus a statement stays on the account's shard (a lateral
      // join from the accounts with a LIMIT is one Citus cannot push down).
      const accounts = yield* sql`SELECT project_id FROM accounts ORDER BY project_id`.pipe(Effect.flatMap(decodeAccounts), Effect.orDie)
      let expired = 0
      for (const { projectId } of accounts) {
        const due = yield* sql`
          WITH bound AS (SELECT ${now}::timestamptz - make_interval(hours => min(approval_ttl_hours)) AS created_by FROM orgs)
          SELECT a.project_id, a.action_id, o.approval_ttl_hours
          FROM bound CROSS JOIN LATERAL (
            SELECT project_id, action_id, org_id, queued_at, created_at FROM actions
            WHERE project_id = ${projectId} AND pending AND created_at <= bound.created_by
            ORDER BY created_at LIMIT 500) a
          JOIN orgs o ON o.org_id = a.org_id
          WHERE COALESCE(a.queued_at, a.created_at) + make_interval(hours => o.approval_ttl_hours) <= ${now}
          ORDER BY COALESCE(a.queued_at, a.created_at) LIMIT 500`.pipe(Effect.flatMap(decodeDue), Effect.orDie)
        for (const row of due) {
          if (yield* transitions.expire(row, reasonFor(row.approvalTtlHours), now)) expired++
        }
      }
      if (expired > 0) yield* Effect.logInfo("queued actions expired").pipe(Effect.annotateLogs({ expired }))
      return expired
    }).pipe(Effect.withSpan("ApprovalExpiry.sweep"))

    return { expireIfDue, sweep } as const
  }),
  dependencies: [Transitions.Default]
}) {}

export const ApprovalExpiryLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const seconds = yield* ExpiryConfig
    if (seconds <= 0) return
    const expiry = yield* ApprovalExpiry
    yield* expiry.sweep.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("approval expiry sweep failed", cause)),
      Effect.repeat(Schedule.spaced(Duration.seconds(seconds))),
      Effect.forkScoped
    )
  })
)
