/**
 * The apply queue: one `jobs` row per approved action or approved changeset, claimed with `FOR UPDATE SKIP LOCKED` under a lease.
 * A heartbeat extends the lease while the apply runs; a lease that ran out (its instance died) makes the job
 * claimable again, which is the rescue. `NOTIFY acs_jobs` on enqueue wakes idle workers on every instance.
 * `locked_by` is the fence: a worker whose job was rescued can no longer renew, complete or give it back.
 */
import { SqlClient, type Statement } from "@effect/sql"
import { Data, Effect, Schema } from "effect"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { newId } from "../db/Ids.ts"
import { currentTraceparent } from "../telemetry/TraceContext.ts"

export const JOBS_CHANNEL = "acs_jobs"

/** What every claimed job carries, whatever it applies. */
const claimedFields = {
  jobId: Schema.String,
  projectId: Schema.String,
  attempts: Schema.Number,
  /** The traceparent of what queued the apply (a proposal, an approval, a revert), and of the proposal. */
  jobTraceParent: Schema.NullOr(Schema.String),
  actionTraceParent: Schema.NullOr(Schema.String)
}

/**
 * A claimed job as `claimNext` answers it: one action's apply, or an approved changeset's (its members applied
 * in plan order under this one job's lease); exactly one of the two ids is set.
 */
export const ClaimedJob = Schema.Union(
  Schema.Struct({ ...claimedFields, actionId: Schema.String, changesetId: Schema.Null }),
  Schema.Struct({ ...claimedFields, actionId: Schema.Null, changesetId: Schema.String })
)
export type ClaimedJob = typeof ClaimedJob.Type
const decodeClaimed = Schema.decodeUnknown(Schema.Array(ClaimedJob))

/** The job is no longer this worker's: its lease ran out and another worker claimed it (or it was re-enqueued). */
export class LeaseLost extends Data.TaggedError("LeaseLost")<{ readonly jobId: string }> {}

/**
 * The jobs of the approved rows of `source` (a CTE answering `actions` rows), for a data-modifying CTE answering
 * their action ids: a proposal that auto-applies is queued in its own statement (actions/pipeline/ProposalStatement.ts).
 */
export const enqueueApproved = (sql: SqlClient.SqlClient, source: string) =>
  sql`INSERT INTO jobs (job_id, action_id, project_id, trace_parent)
    SELECT ${newId("job")}, action_id, project_id, trace_parent FROM ${sql.unsafe(source)} WHERE status = 'approved'
    RETURNING action_id`

/** The wake of every instance's workers for each job of `queued` (a CTE answering action ids), as a CTE. */
export const notifyQueued = (sql: SqlClient.SqlClient, queued: string) =>
  sql`SELECT pg_notify(${JOBS_CHANNEL}, action_id) FROM ${sql.unsafe(queued)}`

/**
 * The claim of the next due job (`FOR UPDATE SKIP LOCKED`) under a lease, as a data-modifying statement answering
 * the job's columns: `claim` alone, or the CTE of worker/ClaimStatement.ts.
 */
export const claimNext = (sql: SqlClient.SqlClient, workerId: string, leaseMs: number) =>
  sql`UPDATE jobs SET locked_by = ${workerId}, lease_until = clock_timestamp() + make_interval(secs => ${leaseMs / 1000}),
      attempts = attempts + 1
    WHERE job_id = (
      SELECT job_id FROM jobs
      WHERE run_at <= clock_timestamp() AND (lease_until IS NULL OR lease_until < clock_timestamp())
      ORDER BY run_at
      LIMIT 1
      FOR UPDATE SKIP LOCKED)
    RETURNING job_id, action_id, changeset_id, project_id, attempts, trace_parent AS job_trace_parent,
      (SELECT a.trace_parent FROM actions a WHERE a.action_id = jobs.action_id) AS action_trace_parent`

/** When the next job is due, in ms from now (null for none), as a scalar subquery. */
export const nextDueInMs = (sql: SqlClient.SqlClient) =>
  sql`(SELECT (extract(epoch FROM min(GREATEST(run_at, COALESCE(lease_until, run_at))) - clock_timestamp()) * 1000)::int8 FROM jobs)`

/** Whether a job other than `jobId` (a column) is claimable now, as a condition. */
export const otherDue = (sql: SqlClient.SqlClient, jobId: Statement.Fragment) =>
  sql`EXISTS (SELECT 1 FROM jobs other WHERE other.job_id <> ${jobId} AND other.run_at <= clock_timestamp()
    AND (other.lease_until IS NULL OR other.lease_until < clock_timestamp()))`

export class Jobs extends Effect.Service<Jobs>()("acs/Jobs", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Inside the caller's transaction: the job and the notification commit with the action. */
    const enqueue = (actionId: string, projectId: string) =>
      Effect.flatMap(currentTraceparent, (traceParent) =>
        Effect.all([
          sql`INSERT INTO jobs (job_id, action_id, project_id, trace_parent) VALUES (${newId("job")}, ${actionId}, ${projectId}, ${traceParent})
              ON CONFLICT (action_id, project_id) DO UPDATE SET run_at = now(), locked_by = NULL, lease_until = NULL, trace_parent = EXCLUDED.trace_parent`,
          sql`SELECT pg_notify(${JOBS_CHANNEL}, ${actionId})`
        ])).pipe(Effect.asVoid, Effect.orDie, Effect.withSpan("Jobs.enqueue"))

    /** An approved changeset's one apply job (its members apply in plan order under its lease), in the caller's transaction. */
    const enqueueChangeset = (changesetId: string, projectId: string) =>
      Effect.flatMap(currentTraceparent, (traceParent) =>
        Effect.all([
          sql`INSERT INTO jobs (job_id, changeset_id, project_id, trace_parent)
              VALUES (${newId("job")}, ${changesetId}, ${projectId}, ${traceParent})
              ON CONFLICT (changeset_id, project_id) WHERE changeset_id IS NOT NULL DO NOTHING`,
          sql`SELECT pg_notify(${JOBS_CHANNEL}, ${changesetId})`
        ])).pipe(Effect.asVoid, Effect.orDie, Effect.withSpan("Jobs.enqueueChangeset"))

    const claim = (workerId: string, leaseMs: number) =>
      sql`/* prepared */ ${claimNext(sql, workerId, leaseMs)}`.pipe(
        Effect.flatMap(decodeClaimed),
        Effect.map((rows) => rows[0]),
        Effect.orDie,
        Effect.withSpan("Jobs.claim", HOT_SPAN)
      )

    /**
     * The renewal as a fragment for a data-modifying CTE (`WITH lease AS (...)`): a write that happens only
     * `WHERE EXISTS (SELECT 1 FROM lease)` is fenced and renews the lease in one statement, holding the job's
     * row lock until its transaction ends, as a `heartbeat` before it in the same transaction would.
     */
    const renewal = (jobId: string, workerId: string, leaseMs: number) =>
      sql`UPDATE jobs SET lease_until = clock_timestamp() + make_interval(secs => ${leaseMs / 1000})
        WHERE job_id = ${jobId} AND locked_by = ${workerId} RETURNING job_id`

    /**
     * Extends the lease; false when the job is no longer ours (it was rescued by another worker). Also the
     * ownership check before a write: `locked_by` still ours means nobody claimed the job, even past its lease.
     */
    const heartbeat = (jobId: string, workerId: string, leaseMs: number) =>
      sql`/* prepared */ ${renewal(jobId, workerId, leaseMs)}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /** The finished job's removal as a fragment for a data-modifying CTE, as `renewal` is. */
    const settlement = (jobId: string, workerId: string) =>
      sql`DELETE FROM jobs WHERE job_id = ${jobId} AND locked_by = ${workerId} RETURNING job_id`

    /** Removes the finished job; false (and nothing done) when it is no longer this worker's. */
    const complete = (jobId: string, workerId: string) =>
      sql`/* prepared */ ${settlement(jobId, workerId)}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /**
     * Gives the job back to run again after `delayMs` (a retryable upstream failure, or a graceful stop);
     * false (and nothing done) when it is no longer this worker's. `progressed`: the attempt got somewhere (a
     * changeset's run applied members before the upstream went away), so its attempts count afresh: they bound
     * the attempts that achieve nothing, not the length of a long run.
     */
    const retryLater = (jobId: string, workerId: string, delayMs: number, error: string | null, progressed = false) =>
      sql`UPDATE jobs SET locked_by = NULL, lease_until = NULL, last_error = ${error},
            run_at = clock_timestamp() + make_interval(secs => ${delayMs / 1000})${progressed ? sql`, attempts = 0` : sql``}
          WHERE job_id = ${jobId} AND locked_by = ${workerId} RETURNING job_id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    return { enqueue, enqueueChangeset, claim, heartbeat, renewal, settlement, complete, retryLater } as const
  })
}) {}
