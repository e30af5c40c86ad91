/**
 * A changeset's `members` call recorded as ONE statement, assembled from its tables' owners as a single proposal's
 * is (actions/pipeline/ProposalStatement.ts): the account's lock and next ledger time (`acs_lock_account_window`),
 * the changeset held `FOR SHARE` while it is open, and every prepared row (members, and the failed rows of the
 * proposals that failed validation) inserted at once (Transitions.ts `insertMany`). Members record no event and
 * no job: they wait for their changeset.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ACCOUNT_LOCK_NAMESPACE } from "../../policy/AutoApplyWindow.ts"
import { currentTraceparent } from "../../telemetry/TraceContext.ts"
import { decodeActionIds } from "../pipeline/ActionRow.ts"
import type { Recording } from "../pipeline/ProposalStatement.ts"
import { insertMany, type ManyRow, markCooldowns } from "../pipeline/Transitions.ts"

/** A prepared member (or failed row) as `insertMany` takes it, `i` its place in the call. */
const manyRow = (recording: Recording, i: number): ManyRow => ({
  action_id: recording.actionId,
  kind: recording.row.kind,
  mode: recording.decision.mode,
  status: recording.decision.status,
  risk_tier: recording.decision.riskTier,
  policy_reasons: recording.decision.reasons,
  summary: recording.row.summary,
  reason: recording.row.reason,
  payload: recording.row.payload,
  failure: recording.row.failure ?? null,
  proposed_by: recording.row.proposedBy,
  changeset_id: recording.member?.changesetId ?? null,
  depends_on: recording.member?.dependsOn ?? [],
  i
})

/**
 * Records the prepared rows of one account in one statement; answers the ids of the rows recorded (a member is
 * missing when its changeset closed meanwhile). Only the ids come back: the caller has every row it recorded.
 */
export const recordMembers = (
  sql: SqlClient.SqlClient,
  account: { readonly orgId: string; readonly projectId: string },
  changesetId: string,
  recordings: ReadonlyArray<Recording>
) =>
  recordings.length === 0 ? Effect.succeed(new Set<string>()) : Effect.flatMap(currentTraceparent, (traceParent) =>
    sql`
      WITH w AS (SELECT next_created_at FROM acs_lock_account_window(${ACCOUNT_LOCK_NAMESPACE}, ${account.projectId})),
      cs AS (SELECT changeset_id FROM changesets
        WHERE changeset_id = ${changesetId} AND project_id = ${account.projectId} AND status = 'open' FOR SHARE),
      recorded AS (${
      insertMany(
        sql,
        recordings.map(manyRow),
        { orgId: account.orgId, projectId: account.projectId, traceParent },
        sql`(SELECT next_created_at FROM w)`,
        sql`EXISTS (SELECT 1 FROM cs)`
      )
    }),
      marked AS (${markCooldowns(sql, "recorded")})
      SELECT action_id FROM recorded`).pipe(
    Effect.flatMap(decodeActionIds),
    Effect.map((rows) => new Set(rows.map((row) => row.actionId))),
    Effect.orDie,
    Effect.withSpan("Changesets.recordMembers")
  )
