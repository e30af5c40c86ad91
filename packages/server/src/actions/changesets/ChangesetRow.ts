/**
 * A `changesets` row as read back from Postgres, declared once (docs/decisions/architecture.md "One owner per
 * table"), with its members' counts read beside it; the API's Changeset is made from it.
 */
import { Actor, Approval } from "@acs/domain/Actions"
import {
  type Changeset,
  ChangesetDecision,
  ChangesetImpact,
  ChangesetPlan,
  ChangesetStatus,
  OnFailure
} from "@acs/domain/Changesets"
import type { SqlClient } from "@effect/sql"
import { Schema } from "effect"
import { decodeRows, selectList } from "../../db/Rows.ts"

export const ChangesetRow = Schema.Struct({
  changesetId: Schema.String,
  orgId: Schema.String,
  projectId: Schema.String,
  title: Schema.String,
  reason: Schema.NullOr(Schema.String),
  onFailure: OnFailure,
  status: ChangesetStatus,
  openedBy: Actor,
  planHash: Schema.NullOr(Schema.String),
  plan: Schema.NullOr(ChangesetPlan),
  /** Read as text: the client's nested name transform would rename its `byKind` keys (`budget_change`). */
  impact: Schema.NullOr(Schema.parseJson(ChangesetImpact)),
  decision: Schema.NullOr(ChangesetDecision),
  decidedBy: Schema.NullOr(Actor),
  approvals: Schema.Array(Approval),
  decisionReason: Schema.NullOr(Schema.String),
  revertOf: Schema.NullOr(Schema.String),
  revertedBy: Schema.NullOr(Schema.String),
  createdAtIso: Schema.String,
  submittedAtIso: Schema.NullOr(Schema.String),
  decidedAtIso: Schema.NullOr(Schema.String),
  appliedAtIso: Schema.NullOr(Schema.String),
  /** Members by status, counted in the same statement (`memberCounts`). */
  total: Schema.Number,
  applied: Schema.Number,
  failed: Schema.Number,
  skipped: Schema.Number,
  reverted: Schema.Number,
  pending: Schema.Number
})
export type ChangesetRow = typeof ChangesetRow.Type

const iso = (column: string) => `to_char(c.${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

/**
 * The members of `c` (a changesets row) by outcome, as `n`: one scan of its members, which names the account by value
 * (not `c`'s column) so that Citus finds the shard of the subquery too (docs/scale.md).
 */
export const memberCounts = (sql: SqlClient.SqlClient, projectId: string) =>
  sql`CROSS JOIN LATERAL (SELECT count(*)::int AS total,
      count(*) FILTER (WHERE m.status = 'applied')::int AS applied,
      count(*) FILTER (WHERE m.status = 'reverted')::int AS reverted,
      count(*) FILTER (WHERE m.status = 'failed')::int AS failed,
      count(*) FILTER (WHERE m.status = 'skipped')::int AS skipped,
      count(*) FILTER (WHERE m.status IN ('proposed', 'approved', 'applying'))::int AS pending
    FROM actions m WHERE m.project_id = ${projectId} AND m.changeset_id = c.changeset_id) n`

/** The select list over `changesets c` and its `memberCounts`. */
export const CHANGESET_COLUMNS = selectList(ChangesetRow.fields, {
  changesetId: "c.changeset_id",
  orgId: "c.org_id",
  projectId: "c.project_id",
  title: "c.title",
  reason: "c.reason",
  onFailure: "c.on_failure",
  status: "c.status",
  openedBy: "c.opened_by",
  planHash: "c.plan_hash",
  plan: "c.plan",
  impact: "c.impact::text",
  decision: "c.decision",
  decidedBy: "c.decided_by",
  approvals: "c.approvals",
  decisionReason: "c.decision_reason",
  revertOf: "c.revert_of",
  revertedBy: "c.reverted_by",
  createdAtIso: iso("created_at"),
  submittedAtIso: iso("submitted_at"),
  decidedAtIso: iso("decided_at"),
  appliedAtIso: iso("applied_at"),
  total: "n.total",
  applied: "n.applied",
  reverted: "n.reverted",
  failed: "n.failed",
  skipped: "n.skipped",
  pending: "n.pending"
})

export const decodeChangesetRows = decodeRows(ChangesetRow)

export const toChangeset = (row: ChangesetRow): Changeset => ({
  changesetId: row.changesetId,
  projectId: row.projectId,
  title: row.title,
  reason: row.reason,
  onFailure: row.onFailure,
  status: row.status,
  openedBy: row.openedBy,
  createdAt: row.createdAtIso,
  submittedAt: row.submittedAtIso,
  decidedBy: row.decidedBy,
  decidedAt: row.decidedAtIso,
  approvals: row.approvals,
  decisionReason: row.decisionReason,
  appliedAt: row.appliedAtIso,
  planHash: row.planHash,
  plan: row.plan,
  impact: row.impact,
  decision: row.decision,
  members: {
    total: row.total,
    applied: row.applied,
    failed: row.failed,
    skipped: row.skipped,
    reverted: row.reverted,
    pending: row.pending
  },
  revertOf: row.revertOf,
  revertedBy: row.revertedBy
})
