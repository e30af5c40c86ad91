/**
 * The 24-hour auto-apply count of an account (docs/contract.md 8: global, database-derived). Proposals read it under the
 * account's lock inside their transaction, so concurrent proposals on any instance see each other's rows.
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

/** The count (int8 as text) and the oldest counted proposal's time, null when none counts. */
const WindowCount = Schema.Struct({ used: Schema.String, oldest: Schema.NullOr(Schema.String) })
const decodeWindowCount = decodeRows(WindowCount)

export const autoAppliesLast24h = (projectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`
      SELECT count(*) AS used,
        to_char(min(created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS oldest
      FROM actions
      WHERE project_id = ${projectId} AND counts_toward_cap AND created_at > clock_timestamp() - interval '24 hours'`.pipe(
      Effect.orDie,
      Effect.flatMap(decodeWindowCount),
      Effect.map((rows) => ({ used: Number(rows[0]?.used ?? 0), oldestInWindowAt: rows[0]?.oldest ?? null }))
    ))
