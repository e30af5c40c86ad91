/**
 * A worker's claim in one account as ONE statement (docs/decisions/pipeline.md "One read to start an apply,
 * carried by the claim"), assembled from its tables' owners: the claim of the account's next due job
 * (queue/Jobs.ts) carries what the job needs to start (StartingPoint.ts), and when there is nothing to claim it
 * answers when the account's next job is due. With a job, `moreDue` says whether another of the account's was
 * claimable too (read before this claim's own update, hence the exclusion): the account's turn comes again. A changeset's job is claimed by the same statement (one more column); it carries
 * nothing, its members are read by its run (ChangesetRun.ts).
 */
import type { SqlClient } from "@effect/sql"
import { Effect, type ParseResult, Schema } from "effect"
import { claimNext, type ClaimedJob, nextDueInMs, otherDue } from "../queue/Jobs.ts"
import { decodeStartingRow, startingPoint, type StartingRow } from "./StartingPoint.ts"

/** The claim's columns (null when none was claimed), and the carried row's `found` (null when it carried none). */
const ClaimRow = Schema.Struct({
  jobId: Schema.NullOr(Schema.String),
  actionId: Schema.NullOr(Schema.String),
  /** Aliased: the carried action's own `changeset_id` is beside it. */
  jobChangesetId: Schema.NullOr(Schema.String),
  projectId: Schema.NullOr(Schema.String),
  jobAttempts: Schema.NullOr(Schema.Number),
  jobTraceParent: Schema.NullOr(Schema.String),
  actionTraceParent: Schema.NullOr(Schema.String),
  dueInMs: Schema.NullOr(Schema.String),
  moreDue: Schema.NullOr(Schema.Boolean),
  found: Schema.NullOr(Schema.Boolean)
})
const decodeClaimRow = Schema.decodeUnknown(ClaimRow)

export type Claimed =
  | { readonly job: ClaimedJob; readonly carried: StartingRow | undefined; readonly moreDue: boolean }
  | { readonly job: undefined; readonly dueInMs: number | null }

/** The claim's row as the worker uses it: the job with what it carried, or when the next one is due. */
const claimedFrom = (raw: object | undefined): Effect.Effect<Claimed, ParseResult.ParseError> =>
  raw === undefined
    ? Effect.succeed({ job: undefined, dueInMs: null })
    : Effect.flatMap(decodeClaimRow(raw), (row): Effect.Effect<Claimed, ParseResult.ParseError> => {
      if (row.jobId === null || row.projectId === null || row.jobAttempts === null) {
        return Effect.succeed({ job: undefined, dueInMs: row.dueInMs === null ? null : Number(row.dueInMs) })
      }
      const common = {
        jobId: row.jobId,
        projectId: row.projectId,
        attempts: row.jobAttempts,
        jobTraceParent: row.jobTraceParent,
        actionTraceParent: row.actionTraceParent
      }
      // A job names an action or a changeset (never both: the table's check); a changeset's carries no starting point.
      const job: ClaimedJob | undefined = row.actionId !== null
        ? { ...common, actionId: row.actionId, changesetId: null }
        : row.jobChangesetId !== null
        ? { ...common, actionId: null, changesetId: row.jobChangesetId }
        : undefined
      if (job === undefined) return Effect.succeed({ job: undefined, dueInMs: null })
      return Effect.map(
        row.found === true ? decodeStartingRow(raw) : Effect.succeed(undefined),
        (carried) => ({ job, carried, moreDue: row.moreDue === true })
      )
    })

/** The claim in one account (queue/Jobs.ts: jobs are claimed per account). */
export const claimOrNextDue = (sql: SqlClient.SqlClient, workerId: string, projectId: string, leaseMs: number) =>
  sql`/* prepared */
    WITH claimed AS (${claimNext(sql, workerId, projectId, leaseMs)})
    SELECT carried.*, claimed.job_id, claimed.action_id, claimed.changeset_id AS job_changeset_id, claimed.project_id, claimed.attempts AS job_attempts,
      claimed.job_trace_parent, claimed.action_trace_parent,
      -- The scan for the next due time runs only when nothing was claimed (an InitPlan runs when first used).
      CASE WHEN claimed.job_id IS NULL THEN ${nextDueInMs(sql, projectId)} END AS due_in_ms,
      CASE WHEN claimed.job_id IS NOT NULL THEN ${otherDue(sql, projectId, sql`claimed.job_id`)} END AS more_due
    FROM (SELECT) AS one
    LEFT JOIN claimed ON true
    LEFT JOIN (${
    // Not a lateral join on the claimed row: Citus runs a data-modifying CTE first and cannot push down a lateral
    // join from its result to a distributed table; a subquery filtered by the account and the claimed id it can.
    startingPoint(sql, projectId, sql`(SELECT claimed.action_id FROM claimed)`)
  }) AS carried ON true`.pipe(
    Effect.flatMap((rows) => claimedFrom(rows[0])),
    Effect.orDie
  )
