/** An `actions` row as read back from Postgres, the columns that read it, and the record the API shows. */
import type { ActionRecord, ActionStatus, Actor, Failure, Mode, RiskTier } from "@acs/domain/Actions"
import type { ActionKindName } from "@acs/domain/ProposalKinds"
import type { SqlClient } from "@effect/sql"

export interface ActionRow {
  readonly actionId: string
  readonly projectId: string
  readonly kind: ActionKindName
  readonly mode: Mode | null
  readonly status: ActionStatus
  readonly riskTier: RiskTier
  readonly policyReasons: ReadonlyArray<string>
  readonly summary: string
  readonly reason: string
  readonly payload: Record<string, unknown>
  readonly result: Record<string, unknown> | null
  readonly warnings: ReadonlyArray<string> | null
  readonly failure: Failure | null
  readonly proposedBy: Actor
  readonly decidedBy: Actor | null
  readonly decisionReason: string | null
  readonly createdAtIso: string
  readonly decidedAtIso: string | null
  readonly appliedAtIso: string | null
  readonly revertOf: string | null
  readonly revertedBy: string | null
  readonly supersededBy: string | null
}

/** The select list every reader and `RETURNING` clause uses; timestamps as ISO strings with microseconds. */
export const actionColumns = (sql: SqlClient.SqlClient) => {
  const iso = (column: string) => sql.unsafe(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)
  return sql`action_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason, payload, result,
      warnings, failure, proposed_by, decided_by, decision_reason, ${iso("created_at")} AS created_at_iso,
      ${iso("decided_at")} AS decided_at_iso, ${iso("applied_at")} AS applied_at_iso, revert_of, reverted_by, superseded_by`
}

export const toRecord = (row: ActionRow): ActionRecord => ({
  actionId: row.actionId,
  projectId: row.projectId,
  kind: row.kind,
  mode: row.mode,
  status: row.status,
  riskTier: row.riskTier,
  policyReasons: row.policyReasons,
  summary: row.summary,
  reason: row.reason,
  payload: row.payload,
  result: row.result,
  warnings: row.warnings ?? [],
  failure: row.failure,
  proposedBy: row.proposedBy,
  decidedBy: row.decidedBy,
  decisionReason: row.decisionReason,
  created_at: row.createdAtIso,
  decidedAt: row.decidedAtIso,
  appliedAt: row.appliedAtIso,
  revertOf: row.revertOf,
  revertedBy: row.revertedBy,
  supersededBy: row.supersededBy
})
