/**
 * The locked part of a proposal as ONE statement (docs/decisions/pipeline.md "Reads first, the locked part one
 * statement"), assembled from its tables' owners: `acs_lock_account_window` (migration 0012) takes the account's
 * lock and reads the 24-hour count and the next `created_at` with a snapshot taken after the lock; the ledger
 * row (Transitions.ts) takes its decision from the count; the job and its NOTIFY (queue/Jobs.ts) follow an
 * auto-applied row; `action.proposed` (events/Outbox.ts) a queued one. Another write of the proposal's
 * transaction joins as one more CTE reading `recorded`.
 */
import type { NewAction } from "./Transitions.ts"
import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { HOT_SPAN } from "../../db/HotSpan.ts"
import { proposedEventCte } from "../../events/Outbox.ts"
import { ACCOUNT_LOCK_NAMESPACE } from "../../policy/AutoApplyWindow.ts"
import { AUTO_APPLY_LIMIT_PER_24H } from "../../policy/Policy.ts"
import { enqueueApproved, notifyQueued } from "../../queue/Jobs.ts"
import { currentTraceparent } from "../../telemetry/TraceContext.ts"
import { actionColumns, actionRowWith, toRecord } from "./ActionRow.ts"
import { insertProposed } from "./Transitions.ts"

/** The ledger row a proposal writes; its decision may still depend on the count read under the lock. */
export interface Recording {
  readonly actionId: string
  readonly row: Omit<NewAction, "mode" | "status" | "policyReasons" | "countsTowardCap" | "riskTier">
  /** The decision under the cap; `capped` replaces it when the 24-hour count has reached the cap. */
  readonly decision: { readonly mode: NewAction["mode"]; readonly status: NewAction["status"]; readonly riskTier: NewAction["riskTier"]; readonly reasons: ReadonlyArray<string> }
  readonly capped: { readonly reasonTemplate: string; readonly otherReasons: ReadonlyArray<string> } | undefined
  /** A changeset's member: recorded only while its changeset is open (the row's share lock makes submit wait for it). */
  readonly member: { readonly changesetId: string; readonly dependsOn: ReadonlyArray<string> } | undefined
}

/** Placeholder of the count in the cap's reason; `format()` in the statement fills it in. */
export const COUNT_PLACEHOLDER = "%s"

const RecordedRow = actionRowWith({ notified: Schema.Number })
const decodeRecorded = Schema.decodeUnknown(Schema.Array(RecordedRow))

const json = (value: unknown) => JSON.stringify(value)

/** Records the proposal in one statement; answers the ledger row as the API shows it, or undefined for a member whose changeset is no longer open. */
export const recordProposal = (sql: SqlClient.SqlClient, recording: Recording) => {
  const { actionId, capped, decision, member, row } = recording
  const auto = capped !== undefined
  const under = sql`w.used < ${AUTO_APPLY_LIMIT_PER_24H}`
  return Effect.flatMap(currentTraceparent, (traceParent) =>
    sql`/* prepared */
      WITH w AS (SELECT used, next_created_at FROM acs_lock_account_window(${ACCOUNT_LOCK_NAMESPACE}, ${row.projectId})),
      ${
      member === undefined ? sql`` : sql`cs AS (SELECT changeset_id FROM changesets
        WHERE changeset_id = ${member.changesetId} AND project_id = ${row.projectId} AND status = 'open' FOR SHARE),`
    }
      recorded AS (${
      insertProposed(sql, {
        actionId,
        orgId: row.orgId,
        projectId: row.projectId,
        kind: row.kind,
        summary: row.summary,
        reason: row.reason,
        payload: row.payload,
        proposedBy: row.proposedBy,
        failure: row.failure,
        riskTier: decision.riskTier,
        mode: auto ? sql`CASE WHEN ${under} THEN 'auto_applied' ELSE 'queued' END` : sql`${decision.mode}`,
        status: auto ? sql`CASE WHEN ${under} THEN 'approved' ELSE 'proposed' END` : sql`${decision.status}`,
        policyReasons: auto
          ? sql`CASE WHEN ${under} THEN ${json(decision.reasons)}::jsonb
              ELSE jsonb_build_array(format(${capped.reasonTemplate}, w.used)) || ${json(capped.otherReasons)}::jsonb END`
          : sql`${json(decision.reasons)}::jsonb`,
        countsTowardCap: auto ? under : sql`false`,
        createdAt: sql`w.next_created_at`,
        traceParent,
        changesetId: member?.changesetId ?? null,
        dependsOn: member?.dependsOn ?? []
      }, member === undefined ? "w" : "w, cs")
    }),
      job AS (${enqueueApproved(sql, "recorded")}),
      notified AS (${notifyQueued(sql, "job")}),
      proposed_event AS (${proposedEventCte(sql, "recorded")})
      SELECT ${actionColumns(sql)}, (SELECT count(*) FROM notified)::int AS notified FROM recorded`).pipe(
      Effect.flatMap((rows) => Effect.orDie(decodeRecorded(rows))),
      Effect.map((rows) => rows[0] === undefined ? undefined : toRecord(rows[0])),
      Effect.withSpan("Proposals.recordStatement", HOT_SPAN)
    )
}
