/**
 * Reads of the append-only action ledger. Rows are inserted once and then only move through their status
 * (`Transitions.ts` is the only writer); nothing is deleted. `created_at` is strictly increasing per account
 * (inserts happen under the account's proposal lock), so the `before` cursor, in microseconds, never skips or
 * repeats a row.
 */
import type { ActionRecord, ActionStatus, ProposalResponse } from "@acs/domain/Actions"
import { type Verdict, Watch } from "@acs/domain/Guard"
import type { ActionKindName } from "@acs/domain/ProposalKinds"
import { NotFound } from "@acs/domain/Errors"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { Granted } from "../../accounts/Granted.ts"
import { HOT_SPAN } from "../../db/HotSpan.ts"
import {
  actionColumns,
  decodeActionRows,
  decodeMemberRows,
  MEMBER_COLUMNS,
  type RawActionRow,
  toEncodedRecord,
  toMemberRecord,
  toRecord
} from "./ActionRow.ts"

/** The proposal endpoints' answer for a recorded action (docs/contract.md 4). */
export const toProposalResponse = (record: ActionRecord): ProposalResponse => ({
  actionId: record.actionId,
  kind: record.kind,
  mode: record.mode ?? "queued",
  status: record.status,
  riskTier: record.riskTier,
  policyReasons: record.policyReasons,
  summary: record.summary
})

export interface LedgerQuery {
  readonly limit: number
  readonly before: string | undefined
  readonly status: ActionStatus | undefined
  readonly kind: ActionKindName | undefined
  /** acs: proposed through acs; external: changes made outside acs. */
  readonly origin: "acs" | "external" | undefined
  /** Only this proposer's actions: `proposedBy.id` (a keyId, a personId, an outside change's modifier). */
  readonly proposedBy: string | undefined
  /** Only changes whose watch has this verdict (docs/contract.md 3.4). */
  readonly verdict: Verdict | undefined
}

/**
 * The guard's watch of an action (docs/contract.md 3.4): its own, or its changeset's, whose members are judged
 * together. One primary-key lookup per row; the account by value, not the outer row's column, so Citus finds the
 * subquery's shard (docs/scale.md).
 */
const watchColumn = (sql: SqlClient.SqlClient, projectId: string) =>
  sql`(SELECT w.record FROM watches w
    WHERE w.project_id = ${projectId} AND w.watch_id = COALESCE(actions.changeset_id, actions.action_id)) AS watch`

const decodeWatch = Schema.decodeUnknown(Schema.NullOr(Watch))
const WatchField = Schema.Struct({ watch: Schema.Unknown })

/** Rows of `ACTION_COLUMNS` and the watch, as records. */
const decodeWatched = (rows: ReadonlyArray<unknown>) =>
  Effect.flatMap(Effect.all([decodeActionRows(rows), Schema.decodeUnknown(Schema.Array(WatchField))(rows)]), ([decoded, watches]) =>
    Effect.forEach(decoded, (row, i) =>
      Effect.map(decodeWatch(watches[i]?.watch ?? null), (watch): ActionRecord => watch === null ? toRecord(row) : { ...toRecord(row), watch })))

/** A raw row with its watch, in the encoded form (the watch's JSON is its own encoding). */
const withWatch = (row: RawActionRow & { readonly watch: Watch | null }): ActionRecord =>
  row.watch === null ? toEncodedRecord(row) : { ...toEncodedRecord(row), watch: row.watch }

/** `count(*)`, an int8 (text, db/Database.ts). */
const decodeCount = Schema.decodeUnknown(Schema.Array(Schema.Struct({ total: Schema.String })))
const decodeRefs = Schema.decodeUnknown(Schema.Array(Schema.Struct({ upstreamRef: Schema.String })))

export class Ledger extends Effect.Service<Ledger>()("acs/Ledger", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = actionColumns(sql)
    const raw = sql.withoutTransforms()
    const decode = decodeActionRows

    const find = (projectId: string, actionId: string) =>
      sql`/* prepared */ SELECT ${columns}, ${watchColumn(sql, projectId)} FROM actions WHERE project_id = ${projectId} AND action_id = ${actionId}`.pipe(
        Effect.flatMap(decodeWatched),
        Effect.map((rows) => rows[0]),
        Effect.orDie,
        Effect.withSpan("Ledger.find", HOT_SPAN)
      )

    /**
     * These actions of the account in their encoded form (as the ledger page answers them, without their watches):
     * what a batch of events carries, read without decoding and encoding each record again.
     */
    const findManyEncoded = (projectId: string, actionIds: ReadonlyArray<string>) =>
      actionIds.length === 0
        ? Effect.succeed<ReadonlyArray<ActionRecord>>([])
        : raw<RawActionRow>`SELECT ${columns} FROM actions WHERE project_id = ${projectId} AND ${sql.in("action_id", actionIds)}`.pipe(
          Effect.map((rows) => rows.map(toEncodedRecord)),
          Effect.orDie
        )

    /** One action of the granted account, for its reader; NotFound names the id asked for. */
    const get = ({ account: { projectId } }: Granted<"getAction">, actionId: string) =>
      Effect.flatMap(find(projectId, actionId), (action) =>
        action === undefined ? Effect.fail(new NotFound({ message: `no action ${actionId} in this account` })) : Effect.succeed(action))

    /** Locks the row for a status change in the caller's transaction. */
    const lock = (projectId: string, actionId: string) =>
      sql`SELECT ${columns} FROM actions WHERE project_id = ${projectId} AND action_id = ${actionId} FOR UPDATE`
        .pipe(Effect.flatMap(decode), Effect.map((rows) => rows[0] === undefined ? undefined : toRecord(rows[0])), Effect.orDie)

    /**
     * Newest first; `nextBefore` is the last row's `created_at` when more rows may follow. The rows are read
     * without the client's name transform and answered in their encoded form (`toEncodedRecord`).
     */
    const list = ({ account: { projectId } }: Granted<"listActions">, query: LedgerQuery) => {
      // The queue through its own index (`pending`, migration 0024), not a walk of the whole ledger.
      const status = query.status === undefined ? sql`` : query.status === "proposed" ? sql`AND pending` : sql`AND status = ${query.status}`
      const origin = query.origin === undefined
        ? sql``
        : query.origin === "external"
        ? sql`AND kind = 'external_change'`
        : sql`AND kind <> 'external_change'`
      return raw<RawActionRow & { readonly watch: Watch | null }>`/* prepared */
        SELECT ${columns}, ${watchColumn(sql, projectId)} FROM actions
        WHERE project_id = ${projectId}
          ${query.before === undefined ? sql`` : sql`AND created_at < ${query.before}::timestamptz`}
          ${status}
          ${query.kind === undefined ? sql`` : sql`AND kind = ${query.kind}`}
          ${query.proposedBy === undefined ? sql`` : sql`AND proposed_by->>'id' = ${query.proposedBy}`}
          ${origin}
          ${query.verdict === undefined ? sql`` : sql`AND action_id IN (
            SELECT unnest(w.action_ids) FROM watches w WHERE w.project_id = ${projectId} AND w.verdict = ${query.verdict})`}
        ORDER BY created_at DESC
        LIMIT ${query.limit + 1}`.pipe(
        Effect.map((rows) => {
          const page = rows.slice(0, query.limit).map(withWatch)
          return { actions: page, nextBefore: rows.length > query.limit ? page[page.length - 1]!.created_at : null }
        }),
        Effect.orDie,
        Effect.withSpan("Ledger.list", HOT_SPAN)
      )
    }

    /** Actions waiting for a human, oldest first, with their count (`pending`: status proposed, migration 0024). */
    const pending = ({ account: { projectId } }: Granted<"listApprovals">, limit: number) =>
      Effect.all([
        sql`SELECT ${columns} FROM actions WHERE project_id = ${projectId} AND pending
          ORDER BY created_at LIMIT ${limit}`.pipe(Effect.flatMap(decode)),
        sql`SELECT count(*) AS total FROM actions WHERE project_id = ${projectId} AND pending`.pipe(Effect.flatMap(decodeCount))
      ]).pipe(
        Effect.map(([rows, count]) => ({ rows: rows.map(toRecord), total: Number(count[0]?.total ?? 0) })),
        Effect.orDie,
        Effect.withSpan("Ledger.pending")
      )

    /** Which of these change-history details the account's ledger already holds. */
    const recordedOutsideChanges = (projectId: string, detailIds: ReadonlyArray<string>) =>
      (detailIds.length === 0
        ? Effect.succeed<ReadonlyArray<{ readonly upstreamRef: string }>>([])
        : sql`SELECT upstream_ref FROM actions
            WHERE project_id = ${projectId} AND ${sql.in("upstream_ref", detailIds)}`.pipe(Effect.flatMap(decodeRefs))).pipe(
          Effect.map((rows): ReadonlySet<string> => new Set(rows.map((row) => row.upstreamRef))),
          Effect.orDie
        )

    /**
     * Applied acs actions (not yet superseded) applied before `beforeIso`: the candidates an outside change at
     * that time may have overwritten.
     */
    const appliedBefore = (projectId: string, beforeIso: string) =>
      sql`
        SELECT ${columns} FROM actions
        WHERE project_id = ${projectId} AND status = 'applied' AND kind <> 'external_change' AND superseded_by IS NULL
          AND applied_at < ${beforeIso}::timestamptz
        ORDER BY created_at`.pipe(Effect.flatMap(decode), Effect.map((rows) => rows.map(toRecord)), Effect.orDie)

    /** A changeset's members, as they were added (oldest first). */
    const members = ({ changesetId, projectId }: { readonly changesetId: string; readonly projectId: string }) =>
      sql`SELECT ${columns} FROM actions WHERE project_id = ${projectId} AND changeset_id = ${changesetId} ORDER BY created_at`.pipe(
        Effect.flatMap(decode),
        Effect.map((rows) => rows.map(toRecord)),
        Effect.orDie
      )

    /** A changeset's members as its apply reads them (`MemberRow`: not the whole record), as they were added. */
    const memberRuns = ({ changesetId, projectId }: { readonly changesetId: string; readonly projectId: string }) =>
      sql`SELECT ${sql.unsafe(MEMBER_COLUMNS)} FROM actions WHERE project_id = ${projectId} AND changeset_id = ${changesetId}
        ORDER BY created_at`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeMemberRows),
        Effect.map((rows) => rows.map(toMemberRecord))
      )

    return { find, findManyEncoded, get, lock, list, pending, recordedOutsideChanges, appliedBefore, members, memberRuns } as const
  })
}) {}
