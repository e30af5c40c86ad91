/**
 * The 24-hour auto-apply count of an account (docs/contract.md 8: global, database-derived) and its spend envelope
 * (docs/contract.md 3.3). Proposals read both under the account's lock inside their transaction, so concurrent
 * proposals on any instance see each other's rows.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { decodeRows } from "../db/Rows.ts"

/** Namespace of the per-account proposal lock (`pg_advisory_xact_lock(namespace, hashtext(projectId))`). */
export const ACCOUNT_LOCK_NAMESPACE = 4_242_002

export const lockAccount = (projectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`SELECT pg_advisory_xact_lock(${ACCOUNT_LOCK_NAMESPACE}, hashtext(${projectId}))`.pipe(Effect.asVoid, Effect.orDie))

/** The same lock in its shared form, for a preview: it waits for a proposal being recorded, not for other previews. */
export const lockAccountShared = (projectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`SELECT pg_advisory_xact_lock_shared(${ACCOUNT_LOCK_NAMESPACE}, hashtext(${projectId}))`.pipe(Effect.asVoid, Effect.orDie))

const WindowRow = Schema.Struct({ used: Schema.NumberFromString, oldest: Schema.NullOr(Schema.String) })
const decodeWindow = decodeRows(WindowRow)

/**
 * The count as `acs_lock_account_window` reads it (db/functions/): actions that auto-applied alone by their time,
 * members of auto-applied changesets by the changeset's decision; with the oldest of them.
 */
export const autoAppliesLast24h = (projectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`
      WITH counted AS (
        SELECT count(*) AS n, min(created_at) AS oldest FROM actions
        WHERE project_id = ${projectId} AND counts_toward_cap AND created_at > statement_timestamp() - interval '24 hours'
        UNION ALL
        SELECT COALESCE(sum(counted_members), 0), min(decided_at) FROM changesets
        WHERE project_id = ${projectId} AND counted_members > 0 AND decided_at > statement_timestamp() - interval '24 hours')
      SELECT sum(n)::text AS used, to_char(min(oldest) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS oldest
      FROM counted`.pipe(
      Effect.flatMap(decodeWindow),
      Effect.map((rows) => ({ used: rows[0]?.used ?? 0, oldestInWindowAt: rows[0]?.oldest ?? null })),
      Effect.orDie
    ))

const EnvelopeRow = Schema.Struct({
  raise: Schema.NumberFromString,
  used: Schema.NumberFromString,
  reserved: Schema.NumberFromString,
  committed: Schema.NumberFromString,
  total: Schema.NumberFromString,
  maxIncrease: Schema.NumberFromString,
  maxTotal: Schema.NullOr(Schema.NumberFromString)
})
const decodeEnvelope = decodeRows(EnvelopeRow)

/**
 * The account's spend envelope as `acs_account_envelope` reads it (docs/contract.md 3.3), with what a change
 * would raise daily budgets by (`acs_budget_delta`): one of `kind` with `payload`, or a changeset's proposed
 * members together (their raises, already among the reserved). Under the account's lock (shared for a preview)
 * it is what a proposal recorded now would read.
 */
export const accountEnvelope = (
  projectId: string,
  change?: { readonly of: "change"; readonly kind: string; readonly payload: unknown } | { readonly of: "changeset"; readonly changesetId: string }
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`
      SELECT ${
      change === undefined
        ? sql`0`
        : change.of === "changeset"
        ? sql`(SELECT COALESCE(sum(budget_delta_micros), 0) FROM actions
            WHERE project_id = ${projectId} AND changeset_id = ${change.changesetId} AND status = 'proposed' AND budget_delta_micros > 0)`
        : sql`acs_budget_delta(${change.kind}, ${JSON.stringify(change.payload)}::jsonb)`
    }::text AS raise,
        used::text, reserved::text, committed::text, total::text, max_increase::text, max_total::text
      FROM acs_account_envelope(${projectId})`.pipe(
      Effect.flatMap(decodeEnvelope),
      Effect.flatMap((rows) => rows[0] === undefined ? Effect.dieMessage("acs_account_envelope answered no row") : Effect.succeed(rows[0])),
      Effect.map(({ raise, ...state }) => ({ raise, state })),
      Effect.orDie
    ))
