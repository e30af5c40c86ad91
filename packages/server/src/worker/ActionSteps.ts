/**
 * The owner of `action_steps` (docs/decisions/architecture.md "One owner per table"): the record of each step of
 * an apply's run, written before the step's first upstream write (its start) and after it (its outcome). Each
 * write is a statement answering its row that writes only where the fence it is given holds (the lease's renewal,
 * or the deletion of the job in the statement that ends the run); the steps a run recorded are read with the
 * action when an apply starts (StartingPoint.ts).
 */
import type { SqlClient, Statement } from "@effect/sql"
import { Schema } from "effect"
import type { Touched } from "../actions/kinds/Kind.ts"

export type Phase = "apply" | "rollback"

/** What a step returned, as recorded: written by this module from the step's own result. */
const StepOutput = Schema.Struct({
  ids: Schema.Record({ key: Schema.String, value: Schema.Union(Schema.String, Schema.Array(Schema.String)) }),
  touched: Schema.declare((value: unknown): value is Touched =>
    typeof value === "object" && value !== null && Object.values(value).every(Array.isArray)),
  warnings: Schema.Array(Schema.String)
})

export const RecordedStep = Schema.Struct({
  step: Schema.Number,
  status: Schema.Literal("started", "succeeded", "failed"),
  output: Schema.NullOr(StepOutput)
})
export type RecordedStep = typeof RecordedStep.Type

/**
 * The run's apply steps recorded so far, oldest first, as a JSON array (a scalar subquery over `actions`, aliased
 * `actions`, of the account `projectId`: named by value, so that Citus finds the subquery's shard, docs/scale.md).
 */
export const recordedSteps = (sql: SqlClient.SqlClient, projectId: string | Statement.Fragment) =>
  sql`(SELECT coalesce(json_agg(json_build_object('step', s.step, 'status', s.status, 'output', s.output) ORDER BY s.step), '[]'::json)
    FROM action_steps s WHERE s.project_id = ${projectId} AND s.action_id = actions.action_id AND s.run = actions.apply_run AND s.phase = 'apply')`

/** Which step of which run: the step's 0-based index in its kind's steps. */
export interface StepOf {
  readonly actionId: string
  readonly projectId: string
  readonly run: number
  readonly phase: Phase
  readonly index: number
}

/** The step is under way (recorded before its upstream call), as a statement answering its row, written only where `fence` holds. */
export const stepStart = (sql: SqlClient.SqlClient, of: StepOf, name: string, fence: Statement.Fragment) =>
  sql`INSERT INTO action_steps (action_id, project_id, run, phase, step, name, status)
    SELECT ${of.actionId}, ${of.projectId}, ${of.run}::int, ${of.phase}, ${of.index + 1}::int, ${name}, 'started' WHERE ${fence}
    ON CONFLICT (action_id, run, phase, step, project_id) DO UPDATE SET status = 'started', started_at = EXCLUDED.started_at
    RETURNING step`

export type StepEnd = { readonly output: unknown } | { readonly error: string }

/** The step's outcome as a statement answering its row, written only where `fence` holds. */
export const stepEnd = (sql: SqlClient.SqlClient, of: StepOf, outcome: StepEnd, fence: Statement.Fragment) =>
  sql`UPDATE action_steps SET finished_at = statement_timestamp(),
      status = ${"error" in outcome ? "failed" : "succeeded"},
      output = ${"output" in outcome ? JSON.stringify(outcome.output) : null}::jsonb,
      error = ${"error" in outcome ? outcome.error : null}
    WHERE action_id = ${of.actionId} AND project_id = ${of.projectId} AND run = ${of.run} AND phase = ${of.phase} AND step = ${of.index + 1} AND ${fence}
    RETURNING step`

/** The member runs of one bulk call: one account's. */
export interface MemberRuns<Run> {
  readonly projectId: string
  readonly runs: ReadonlyArray<Run>
}

/** The first step of many runs under way (the members of one bulk call), as a statement answering their rows, written only where `fence` holds. */
export const firstStepStarts = (sql: SqlClient.SqlClient, { projectId, runs }: MemberRuns<{ readonly actionId: string; readonly run: number }>, name: string, fence: Statement.Fragment) =>
  sql`INSERT INTO action_steps (action_id, project_id, run, phase, step, name, status)
    SELECT r.action_id, ${projectId}, r.run, 'apply', 1, ${name}, 'started'
    FROM unnest(${runs.map((r) => r.actionId)}::text[], ${runs.map((r) => r.run)}::int[]) AS r(action_id, run) WHERE ${fence}
    ON CONFLICT (action_id, run, phase, step, project_id) DO UPDATE SET status = 'started', started_at = EXCLUDED.started_at
    RETURNING step`

/** The first step's outcome of many runs (the members of one bulk call), as a statement answering their rows, written only where `fence` holds. */
export const firstStepEnds = (
  sql: SqlClient.SqlClient,
  { projectId, runs: ends }: MemberRuns<{ readonly actionId: string; readonly run: number; readonly outcome: StepEnd }>,
  fence: Statement.Fragment
) =>
  sql`UPDATE action_steps s SET finished_at = statement_timestamp(), status = e.status, output = e.output, error = e.error
    FROM unnest(${ends.map((e) => e.actionId)}::text[], ${ends.map((e) => e.run)}::int[],
      ${ends.map((e) => ("error" in e.outcome ? "failed" : "succeeded"))}::text[],
      ${ends.map((e) => ("output" in e.outcome ? JSON.stringify(e.outcome.output) : null))}::jsonb[],
      ${ends.map((e) => ("error" in e.outcome ? e.outcome.error : null))}::text[]) AS e(action_id, run, status, output, error)
    WHERE s.project_id = ${projectId} AND s.action_id = e.action_id AND s.run = e.run AND s.phase = 'apply' AND s.step = 1 AND ${fence}
    RETURNING s.step`
