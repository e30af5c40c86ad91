/**
 * The sync history: one row per sync. A partial unique index allows one `running` row per account, so
 * starting a sync is a single INSERT that either wins or answers 409 `sync_in_progress`, on any instance.
 * A running sync whose heartbeat stopped (its instance died) is marked failed before a new one starts.
 */
import { SyncInProgress } from "@acs/domain/Errors"
import { Sync } from "@acs/domain/Warehouse"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { afterCommit } from "../db/AfterCommit.ts"
import { newId } from "../db/Ids.ts"
import { columnsOf, countOf, decodeRows } from "../db/Rows.ts"
import { writeEvent } from "../events/Outbox.ts"
import { countSync } from "../telemetry/Metrics.ts"

export const SyncTrigger = Schema.Literal("manual", "schedule", "import")
export type SyncTrigger = typeof SyncTrigger.Type

/** A `syncs` row, this module being the table's owner (its heartbeat aside): the API's sync with its account. */
export const SyncRow = Schema.Struct({
  ...Sync.fields,
  projectId: Schema.String,
  /** int8, as text. */
  rowsWritten: Schema.String
})
export type SyncRow = typeof SyncRow.Type

/** A finished sync's row, with the org its event goes to. */
export const FinishedSyncRow = Schema.Struct({ ...SyncRow.fields, orgId: Schema.String })
export type FinishedSyncRow = typeof FinishedSyncRow.Type

const syncColumns = columnsOf(SyncRow)
const finishedColumns = columnsOf(FinishedSyncRow)
const decodeSyncs = decodeRows(SyncRow)
const decodeFinished = decodeRows(FinishedSyncRow)

const iso = (value: string | null) => (value === null ? null : new Date(value).toISOString())

/** A sync as the API shows it. */
export const toSync = (row: SyncRow) => ({
  syncId: row.syncId,
  status: row.status,
  trigger: row.trigger,
  startedAt: new Date(row.startedAt).toISOString(),
  finishedAt: iso(row.finishedAt),
  windowStart: row.windowStart,
  windowEnd: row.windowEnd,
  rowsWritten: Number(row.rowsWritten),
  progress: row.progress,
  error: row.error
})


/**
 * `sync.succeeded` or `sync.failed`, in the transaction that finished the sync (events/Outbox.ts); every
 * finished sync passes here, so its metrics (rows, duration) are counted here too, once that transaction committed.
 */
export const writeSyncEvent = (sql: SqlClient.SqlClient, row: FinishedSyncRow) =>
  afterCommit(countSync(
    row.status === "succeeded" ? "succeeded" : "failed",
    Number(row.rowsWritten),
    (new Date(row.finishedAt ?? Date.now()).getTime() - new Date(row.startedAt).getTime()) / 1000
  )).pipe(Effect.zipRight(writeEvent(sql, {
    orgId: row.orgId,
    projectId: row.projectId,
    type: row.status === "succeeded" ? "sync.succeeded" : "sync.failed",
    data: { sync: toSync(row) }
  })))

/** The statements of this module's own that run in another's transaction (the swap's), with its client. */
export const syncWrites = (sql: SqlClient.SqlClient) => ({
  /** The sync's copy is the account's; nothing when it was marked abandoned meanwhile. */
  succeed: (projectId: string, syncId: string, rowsWritten: number) =>
    sql`
      UPDATE syncs SET status = 'succeeded', finished_at = statement_timestamp(), heartbeat_at = now(), rows_written = ${rowsWritten},
        progress = ${JSON.stringify({ step: "done" })}::jsonb
      WHERE project_id = ${projectId} AND sync_id = ${syncId} AND status = 'running' RETURNING ${sql.unsafe(finishedColumns)}`.pipe(
      Effect.flatMap(decodeFinished)
    )
})

/** A running sync that has not beaten for this long belongs to a dead instance. */
export const HEARTBEAT_TIMEOUT_SECONDS = 300

const isUniqueViolation = (error: unknown): boolean => {
  const cause = typeof error === "object" && error !== null && "cause" in error ? error.cause : undefined
  return typeof cause === "object" && cause !== null && "code" in cause && cause.code === "23505"
}

export class SyncRuns extends Effect.Service<SyncRuns>()("acs/SyncRuns", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const start = (orgId: string, projectId: string, trigger: SyncTrigger) =>
      Effect.gen(function*() {
        yield* sql.withTransaction(Effect.gen(function*() {
          const abandoned = yield* sql`
            UPDATE syncs SET status = 'failed', finished_at = now(),
              error = 'abandoned: the instance running it stopped beating'
            WHERE project_id = ${projectId} AND status = 'running'
              AND heartbeat_at < now() - make_interval(secs => ${HEARTBEAT_TIMEOUT_SECONDS})
            RETURNING ${sql.unsafe(finishedColumns)}`.pipe(Effect.flatMap(decodeFinished))
          for (const row of abandoned) yield* writeSyncEvent(sql, row)
        }))
        const syncId = newId("syn")
        const rows = yield* sql`
          INSERT INTO syncs (sync_id, project_id, org_id, status, trigger)
          VALUES (${syncId}, ${projectId}, ${orgId}, 'running', ${trigger})
          RETURNING ${sql.unsafe(syncColumns)}`.pipe(
          Effect.flatMap(decodeSyncs),
          Effect.catchIf(isUniqueViolation, () =>
            Effect.fail(new SyncInProgress({ message: `a sync of ${projectId} is already running; try again when it ends` })))
        )
        return rows[0]!
      }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("SyncRuns.start"))

    /**
     * Claims the account's sync slot for the scheduler, inside its planning transaction (SyncScheduler.ts): the row,
     * or nothing when a sync of the account started meanwhile (by hand, on another instance).
     */
    const claim = (orgId: string, projectId: string, trigger: SyncTrigger) =>
      sql`
        INSERT INTO syncs (sync_id, project_id, org_id, status, trigger)
        VALUES (${newId("syn")}, ${projectId}, ${orgId}, 'running', ${trigger})
        ON CONFLICT (project_id) WHERE status = 'running' DO NOTHING
        RETURNING ${sql.unsafe(syncColumns)}`.pipe(Effect.flatMap(decodeSyncs), Effect.map((rows) => rows[0]), Effect.orDie)

    /** Every running sync whose instance stopped beating is failed, with its event (the scheduler's pass). */
    const failAbandoned = sql`
      UPDATE syncs SET status = 'failed', finished_at = now(), error = 'abandoned: the instance running it stopped beating'
      WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => ${HEARTBEAT_TIMEOUT_SECONDS})
      RETURNING ${sql.unsafe(finishedColumns)}`.pipe(
      Effect.flatMap(decodeFinished),
      Effect.flatMap((rows) => Effect.forEach(rows, (row) => writeSyncEvent(sql, row), { discard: true })),
      Effect.orDie
    )

    const beat = (projectId: string, syncId: string, progress: SyncRow["progress"], rowsWritten: number) =>
      sql`
        UPDATE syncs SET heartbeat_at = now(), progress = ${JSON.stringify(progress)}::jsonb, rows_written = ${rowsWritten}
        WHERE project_id = ${projectId} AND sync_id = ${syncId} AND status = 'running'`.pipe(Effect.asVoid, Effect.orDie)

    const setWindow = (projectId: string, syncId: string, windowStart: string, windowEnd: string) =>
      sql`UPDATE syncs SET window_start = ${windowStart}, window_end = ${windowEnd} WHERE project_id = ${projectId} AND sync_id = ${syncId}`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    const fail = (projectId: string, syncId: string, error: string) =>
      sql.withTransaction(Effect.gen(function*() {
        const failed = yield* sql`
          UPDATE syncs SET status = 'failed', finished_at = now(), error = ${error.slice(0, 2000)}
          WHERE project_id = ${projectId} AND sync_id = ${syncId} AND status = 'running'
          RETURNING ${sql.unsafe(finishedColumns)}`.pipe(Effect.flatMap(decodeFinished))
        for (const row of failed) yield* writeSyncEvent(sql, row)
      })).pipe(Effect.orDie)

    const history = (projectId: string, limit: number) =>
      Effect.all({
        rows: sql`SELECT ${sql.unsafe(syncColumns)} FROM syncs WHERE project_id = ${projectId} ORDER BY started_at DESC, sync_id LIMIT ${limit}`
          .pipe(Effect.flatMap(decodeSyncs)),
        total: sql`SELECT count(*)::int AS n FROM syncs WHERE project_id = ${projectId}`.pipe(Effect.flatMap(countOf))
      }).pipe(Effect.orDie, Effect.withSpan("SyncRuns.history"))

    const find = (projectId: string, syncId: string) =>
      sql`SELECT ${sql.unsafe(syncColumns)} FROM syncs WHERE project_id = ${projectId} AND sync_id = ${syncId}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeSyncs),
        Effect.map((rows) => rows[0])
      )

    return { start, claim, failAbandoned, beat, setWindow, fail, history, find } as const
  })
}) {}
