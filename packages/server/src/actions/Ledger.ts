/**
 * The append-only action ledger. Rows are inserted once and then only move through their status; nothing is
 * deleted. `created_at` is strictly increasing per account (inserts happen under the account's proposal
 * lock), so the `before` cursor, in microseconds, never skips or repeats a row.
 */
import type { ActionRecord, ActionStatus, Actor, ExternalChangePayload, Failure, Mode, ProposalResponse, RiskTier } from "@acs/domain/Actions"
import type { ActionKindName, KindName } from "@acs/domain/ProposalKinds"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { newId } from "../db/Ids.ts"

export interface NewAction {
  readonly orgId: string
  readonly projectId: string
  readonly kind: KindName
  readonly mode: Mode | null
  readonly status: ActionStatus
  readonly riskTier: RiskTier
  readonly policyReasons: ReadonlyArray<string>
  readonly summary: string
  readonly reason: string
  readonly payload: unknown
  readonly proposedBy: Actor
  readonly failure?: Failure
  readonly revertOf?: string
  readonly countsTowardCap: boolean
}

interface ActionRow {
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

/** The proposal endpoints' answer for a recorded action (SPEC 4). */
export const toProposalResponse = (record: ActionRecord): ProposalResponse => ({
  actionId: record.actionId,
  kind: record.kind,
  mode: record.mode ?? "queued",
  status: record.status,
  riskTier: record.riskTier,
  policyReasons: record.policyReasons,
  summary: record.summary
})

export const LEDGER_DEFAULT_LIMIT = 50
export const LEDGER_MAX_LIMIT = 500

export interface LedgerQuery {
  readonly limit: number
  readonly before: string | undefined
  readonly status: ActionStatus | undefined
  readonly kind: ActionKindName | undefined
  /** acs: proposed through acs; external: changes made outside acs. */
  readonly origin: "acs" | "external" | undefined
}

/** One change made outside acs, as the platform's change history recorded it. */
export interface NewOutsideChange {
  readonly orgId: string
  readonly projectId: string
  readonly summary: string
  readonly proposedBy: Actor
  readonly payload: ExternalChangePayload
}

export class Ledger extends Effect.Service<Ledger>()("acs/Ledger", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const iso = (column: string) => sql.unsafe(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)
    const columns = sql`action_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason, payload, result,
      warnings, failure, proposed_by, decided_by, decision_reason, ${iso("created_at")} AS created_at_iso,
      ${iso("decided_at")} AS decided_at_iso, ${iso("applied_at")} AS applied_at_iso, revert_of, reverted_by, superseded_by`

    /** Appends a row; the caller holds the account's proposal lock (strictly increasing `created_at`). */
    const append = (action: NewAction) =>
      sql<ActionRow>`
        INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason,
          payload, failure, proposed_by, revert_of, counts_toward_cap, created_at)
        VALUES (${newId("act")}, ${action.orgId}, ${action.projectId}, ${action.kind}, ${action.mode}, ${action.status},
          ${action.riskTier}, ${JSON.stringify(action.policyReasons)}::jsonb, ${action.summary}, ${action.reason},
          ${JSON.stringify(action.payload)}::jsonb, ${action.failure === undefined ? null : JSON.stringify(action.failure)}::jsonb,
          ${JSON.stringify(action.proposedBy)}::jsonb, ${action.revertOf ?? null}, ${action.countsTowardCap},
          GREATEST(clock_timestamp(),
            (SELECT max(created_at) + interval '1 microsecond' FROM actions WHERE project_id = ${action.projectId})))
        RETURNING ${columns}`.pipe(Effect.map((rows) => toRecord(rows[0]!)), Effect.orDie, Effect.withSpan("Ledger.append"))

    const find = (projectId: string, actionId: string) =>
      sql<ActionRow>`SELECT ${columns} FROM actions WHERE project_id = ${projectId} AND action_id = ${actionId}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toRecord(rows[0])),
        Effect.orDie,
        Effect.withSpan("Ledger.find")
      )

    /** The action with its apply run (how many times it was approved): what the worker starts from. */
    const forApply = (projectId: string, actionId: string) =>
      sql<ActionRow & { readonly applyRun: number }>`
        SELECT ${columns}, apply_run FROM actions WHERE project_id = ${projectId} AND action_id = ${actionId}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : { action: toRecord(rows[0]), run: rows[0].applyRun }),
        Effect.orDie
      )

    /** Locks the row for a status change in the caller's transaction. */
    const lock = (projectId: string, actionId: string) =>
      sql<ActionRow>`SELECT ${columns} FROM actions WHERE project_id = ${projectId} AND action_id = ${actionId} FOR UPDATE`
        .pipe(Effect.map((rows) => rows[0] === undefined ? undefined : toRecord(rows[0])), Effect.orDie)

    /** Newest first; `nextBefore` is the last row's `created_at` when more rows may follow. */
    const list = (projectId: string, query: LedgerQuery) =>
      sql<ActionRow>`
        SELECT ${columns} FROM actions
        WHERE project_id = ${projectId}
          ${query.before === undefined ? sql`` : sql`AND created_at < ${query.before}::timestamptz`}
          ${query.status === undefined ? sql`` : sql`AND status = ${query.status}`}
          ${query.kind === undefined ? sql`` : sql`AND kind = ${query.kind}`}
          ${
  query.origin === undefined
    ? sql``
    : query.origin === "external"
    ? sql`AND kind = 'external_change'`
    : sql`AND kind <> 'external_change'`
}
        ORDER BY created_at DESC
        LIMIT ${query.limit + 1}`.pipe(
        Effect.map((rows) => {
          const page = rows.slice(0, query.limit).map(toRecord)
          return { actions: page, nextBefore: rows.length > query.limit ? page[page.length - 1]!.created_at : null }
        }),
        Effect.orDie,
        Effect.withSpan("Ledger.list")
      )

    /** Actions waiting for a human, oldest first, with their count. */
    const pending = (projectId: string, limit: number) =>
      Effect.all([
        sql<ActionRow>`SELECT ${columns} FROM actions WHERE project_id = ${projectId} AND status = 'proposed'
          ORDER BY created_at LIMIT ${limit}`,
        sql<{ total: string }>`SELECT count(*) AS total FROM actions WHERE project_id = ${projectId} AND status = 'proposed'`
      ]).pipe(
        Effect.map(([rows, count]) => ({ rows: rows.map(toRecord), total: Number(count[0]?.total ?? 0) })),
        Effect.orDie,
        Effect.withSpan("Ledger.pending")
      )

    /**
     * Appends an outside change as an applied row (applied when the platform says it happened), once per
     * change-history detail: a detail already recorded (another poll, another instance) answers undefined.
     * The caller holds the account's proposal lock, as for `append`.
     */
    const appendOutsideChange = (change: NewOutsideChange) =>
      sql<ActionRow>`
        INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason,
          payload, proposed_by, counts_toward_cap, upstream_ref, applied_at, created_at)
        VALUES (${newId("act")}, ${change.orgId}, ${change.projectId}, 'external_change', NULL, 'applied', 'review', '[]'::jsonb,
          ${change.summary}, ${"changed outside acs"}, ${JSON.stringify(change.payload)}::jsonb,
          ${JSON.stringify(change.proposedBy)}::jsonb, false, ${change.payload.upstream.detailId},
          ${change.payload.upstream.eventTime}::timestamptz,
          GREATEST(clock_timestamp(),
            (SELECT max(created_at) + interval '1 microsecond' FROM actions WHERE project_id = ${change.projectId})))
        ON CONFLICT (project_id, upstream_ref) WHERE upstream_ref IS NOT NULL DO NOTHING
        RETURNING ${columns}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toRecord(rows[0])),
        Effect.orDie,
        Effect.withSpan("Ledger.appendOutsideChange")
      )

    /** Which of these change-history details the account's ledger already holds. */
    const recordedOutsideChanges = (projectId: string, detailIds: ReadonlyArray<string>) =>
      (detailIds.length === 0
        ? Effect.succeed<ReadonlyArray<{ readonly upstreamRef: string }>>([])
        : sql<{ readonly upstreamRef: string }>`SELECT upstream_ref FROM actions
            WHERE project_id = ${projectId} AND ${sql.in("upstream_ref", detailIds)}`).pipe(
          Effect.map((rows): ReadonlySet<string> => new Set(rows.map((row) => row.upstreamRef))),
          Effect.orDie
        )

    /**
     * Applied acs actions (not yet superseded) applied before `beforeIso`: the candidates an outside change at
     * that time may have overwritten.
     */
    const appliedBefore = (projectId: string, beforeIso: string) =>
      sql<ActionRow>`
        SELECT ${columns} FROM actions
        WHERE project_id = ${projectId} AND status = 'applied' AND kind <> 'external_change' AND superseded_by IS NULL
          AND applied_at < ${beforeIso}::timestamptz
        ORDER BY created_at`.pipe(Effect.map((rows) => rows.map(toRecord)), Effect.orDie)

    /** Marks applied actions as overwritten by an outside change; the first outside change after the apply wins. */
    const supersede = (projectId: string, actionIds: ReadonlyArray<string>, externalActionId: string) =>
      actionIds.length === 0 ? Effect.void : sql`
        UPDATE actions SET superseded_by = ${externalActionId}, updated_at = clock_timestamp()
        WHERE project_id = ${projectId} AND superseded_by IS NULL AND ${sql.in("action_id", actionIds)}`.pipe(
          Effect.asVoid,
          Effect.orDie
        )

    return { append, find, forApply, lock, list, pending, appendOutsideChange, recordedOutsideChanges, appliedBefore, supersede } as const
  })
}) {}
