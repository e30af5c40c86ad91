/**
 * The apply queue: one `jobs` row per approved action or approved changeset, claimed with `FOR UPDATE SKIP LOCKED` under a lease.
 * A heartbeat extends the lease while the apply runs; a lease that ran out (its instance died) makes the job
 * claimable again, which is the rescue. `NOTIFY acs_jobs` on enqueue, with the job's account, wakes idle workers on
 * every instance. `locked_by` is the fence: a worker whose job was rescued can no longer renew, complete or give it back.
 *
 * Claimed per account (docs/decisions/pipeline.md "Jobs are claimed per account, in turn"): every statement on a
 * job names its account, so a cluster runs it where the account's rows are and no lock spans accounts; which
 * accounts have work is one read across them (`readyAccounts`), taken when a worker has no account in hand.
 */
import { SqlClient, type Statement } from "@effect/sql"
import { Data, Effect, Schema } from "effect"
import { newId } from "../db/Ids.ts"
import { currentTraceparent } from "../telemetry/TraceContext.ts"
import type { Wake } from "../db/Wakes.ts"

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

/** A job as its statements find it: by its id within its account. */
export interface JobRef {
  readonly jobId: string
  readonly projectId: string
}

/** The job is no longer this worker's: its lease ran out and another worker claimed it (or it was re-enqueued). */
export class LeaseLost extends Data.TaggedError("LeaseLost")<{ readonly jobId: string }> {}

/**
 * The jobs of the approved rows of `source` (a CTE answering `actions` rows), for a data-modifying CTE answering
 * their action ids: a proposal that auto-applies is queued in its own statement (actions/pipeline/ProposalStatement.ts).
 */
export const enqueueApproved = (sql: SqlClient.SqlClient, source: string) =>
  sql`INSERT INTO jobs (job_id, action_id, project_id, trace_parent)
    SELECT ${newId("job")}, action_id, project_id, trace_parent FROM ${sql.unsafe(source)} WHERE status = 'approved'
    RETURNING action_id, project_id`

/** The wake of every instance's workers after a statement that queued a job of the account (db/Wakes.ts). */
export const jobQueued = (projectId: string): Wake => [JOBS_CHANNEL, projectId]

/** When a job is due: its run time, or the end of the lease it is under. */
const DUE = "GREATEST(run_at, COALESCE(lease_until, run_at))"

/**
 * The claim of the account's next due job (`FOR UPDATE SKIP LOCKED`) under a lease, as a data-modifying statement
 * answering the job's columns: the CTE of worker/ClaimStatement.ts.
 */
export const claimNext = (sql: SqlClient.SqlClient, workerId: string, projectId: string, leaseMs: number) =>
  sql`UPDATE jobs SET locked_by = ${workerId}, lease_until = statement_timestamp() + make_interval(secs => ${leaseMs / 1000}),
      attempts = attempts + 1
    WHERE project_id = ${projectId} AND job_id = (
      SELECT job_id FROM jobs
      WHERE project_id = ${projectId} AND run_at <= statement_timestamp() AND (lease_until IS NULL OR lease_until < statement_timestamp())
      ORDER BY run_at
      LIMIT 1
      FOR UPDATE SKIP LOCKED)
    RETURNING job_id, action_id, changeset_id, project_id, attempts, trace_parent AS job_trace_parent,
      (SELECT a.trace_parent FROM actions a WHERE a.project_id = ${projectId} AND a.action_id = jobs.action_id) AS action_trace_parent`

/** When the account's next job is due, in ms from now (null for none), as a scalar subquery. */
export const nextDueInMs = (sql: SqlClient.SqlClient, projectId: string) =>
  sql`(SELECT (extract(epoch FROM min(${sql.unsafe(DUE)}) - statement_timestamp()) * 1000)::int8 FROM jobs WHERE project_id = ${projectId})`

/** Whether a job of the account other than `jobId` (a column) is claimable now, as a condition. */
export const otherDue = (sql: SqlClient.SqlClient, projectId: string, jobId: Statement.Fragment) =>
  sql`EXISTS (SELECT 1 FROM jobs other WHERE other.project_id = ${projectId} AND other.job_id <> ${jobId}
    AND other.run_at <= statement_timestamp() AND (other.lease_until IS NULL OR other.lease_until < statement_timestamp()))`

/** Each account with jobs, and when its first is due (ms from now; 0 or less: claimable now). */
const AccountDue = Schema.Struct({ projectId: Schema.String, dueInMs: Schema.NumberFromString })
const decodeAccountsDue = Schema.decodeUnknown(Schema.Array(AccountDue))

/** The accounts with a job claimable now, the longest waiting first, and when the next other job is due (null: none). */
export interface ReadyAccounts {
  readonly ready: ReadonlyArray<string>
  readonly nextDueInMs: number | null
}

/**
 * Which accounts have work: the one statement on `jobs` across accounts, a read that locks nothing, taken by a
 * worker with no account in hand (docs/decisions/pipeline.md "Jobs are claimed per account, in turn").
 */
export const readyAccounts = (sql: SqlClient.SqlClient) =>
  sql`/* prepared */ SELECT project_id,
      (extract(epoch FROM min(${sql.unsafe(DUE)}) - statement_timestamp()) * 1000)::int8 AS due_in_ms
    FROM jobs GROUP BY project_id ORDER BY 2`.pipe(
    Effect.flatMap(decodeAccountsDue),
    Effect.map((accounts): ReadyAccounts => {
      const later = accounts.find((account) => account.dueInMs > 0)
      return {
        ready: accounts.filter((account) => account.dueInMs <= 0).map((account) => account.projectId),
        nextDueInMs: later === undefined ? null : later.dueInMs
      }
    }),
    Effect.orDie
  )

export class Jobs extends Effect.Service<Jobs>()("acs/Jobs", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Inside the caller's transaction: the job and the notification commit with the action. */
    const enqueue = (actionId: string, projectId: string) =>
      Effect.flatMap(currentTraceparent, (traceParent) =>
        Effect.all([
          sql`INSERT INTO jobs (job_id, action_id, project_id, trace_parent) VALUES (${newId("job")}, ${actionId}, ${projectId}, ${traceParent})
              ON CONFLICT (action_id, project_id) DO UPDATE SET run_at = EXCLUDED.run_at, locked_by = NULL, lease_until = NULL, trace_parent = EXCLUDED.trace_parent`,
          sql`SELECT pg_notify(${JOBS_CHANNEL}, ${projectId})`
        ])).pipe(Effect.asVoid, Effect.orDie, Effect.withSpan("Jobs.enqueue"))

    /** An approved changeset's one apply job (its members apply in plan order under its lease), in the caller's transaction. */
    const enqueueChangeset = (changesetId: string, projectId: string) =>
      Effect.flatMap(currentTraceparent, (traceParent) =>
        Effect.all([
          sql`INSERT INTO jobs (job_id, changeset_id, project_id, trace_parent)
              VALUES (${newId("job")}, ${changesetId}, ${projectId}, ${traceParent})
              ON CONFLICT (changeset_id, project_id) WHERE changeset_id IS NOT NULL DO NOTHING`,
          sql`SELECT pg_notify(${JOBS_CHANNEL}, ${projectId})`
        ])).pipe(Effect.asVoid, Effect.orDie, Effect.withSpan("Jobs.enqueueChangeset"))

    /**
     * The renewal as a fragment for a data-modifying CTE (`WITH lease AS (...)`): a write that happens only
     * `WHERE EXISTS (SELECT 1 FROM lease)` is fenced and renews the lease in one statement, holding the job's
     * row lock until its transaction ends, as a `heartbeat` before it in the same transaction would.
     */
    const renewal = (job: JobRef, workerId: string, leaseMs: number) =>
      sql`UPDATE jobs SET lease_until = statement_timestamp() + make_interval(secs => ${leaseMs / 1000})
        WHERE project_id = ${job.projectId} AND job_id = ${job.jobId} AND locked_by = ${workerId} RETURNING job_id`

    /**
     * Extends the lease; false when the job is no longer ours (it was rescued by another worker). Also the
     * ownership check before a write: `locked_by` still ours means nobody claimed the job, even past its lease.
     */
    const heartbeat = (job: JobRef, workerId: string, leaseMs: number) =>
      sql`/* prepared */ ${renewal(job, workerId, leaseMs)}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /** The finished job's removal as a fragment for a data-modifying CTE, as `renewal` is. */
    const settlement = (job: JobRef, workerId: string) =>
      sql`DELETE FROM jobs WHERE project_id = ${job.projectId} AND job_id = ${job.jobId} AND locked_by = ${workerId} RETURNING job_id`

    /** Removes the finished job; false (and nothing done) when it is no longer this worker's. */
    const complete = (job: JobRef, workerId: string) =>
      sql`/* prepared */ ${settlement(job, workerId)}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /**
     * Gives the job back to run again after `delayMs` (a retryable upstream failure, or a graceful stop);
     * false (and nothing done) when it is no longer this worker's. `progressed`: the attempt got somewhere (a
     * changeset's run applied members before the upstream went away), so its attempts count afresh: they bound
     * the attempts that achieve nothing, not the length of a long run.
     */
    const retryLater = (job: JobRef, workerId: string, delayMs: number, error: string | null, progressed = false) =>
      sql`UPDATE jobs SET locked_by = NULL, lease_until = NULL, last_error = ${error},
            run_at = statement_timestamp() + make_interval(secs => ${delayMs / 1000})${progressed ? sql`, attempts = 0` : sql``}
          WHERE project_id = ${job.projectId} AND job_id = ${job.jobId} AND locked_by = ${workerId} RETURNING job_id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    return { enqueue, enqueueChangeset, heartbeat, renewal, settlement, complete, retryLater } as const
  })
}) {}
