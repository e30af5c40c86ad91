/**
 * An account's guardrails (docs/contract.md 3.3), the owner of the `guardrails` table: what an admin set (else the
 * defaults, which are on) and whether the circuit breaker paused the account's auto-apply (`tripCircuitBreaker`,
 * run by the apply worker when an upstream write fails). Every change is an
 * event (`guardrails.changed`, `account.paused`, `account.resumed`) written in its transaction. The proposal path
 * reads them on every proposal: cached, dropped on every instance when the row changes (db/Invalidation.ts,
 * migration 0031). The envelope's numbers are read under the account's lock from the table itself
 * (`acs_account_envelope`), never from the cache.
 */
import type { Failure } from "@acs/domain/Actions"
import { DEFAULT_GUARDRAILS, type Guardrails as Document, GuardrailsSettings } from "@acs/domain/Guardrails"
import { SqlClient, type Statement } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { Granted } from "../auth/Access.ts"
import { invalidateKey, invalidating, Invalidation } from "../db/Invalidation.ts"
import { decodeRows } from "../db/Rows.ts"
import { writeEvent } from "../events/Outbox.ts"
import { lockAccount } from "./AutoApplyWindow.ts"

const GuardrailsRow = Schema.Struct({
  settings: Schema.NullOr(GuardrailsSettings),
  pausedReason: Schema.NullOr(Schema.String),
  pausedSinceIso: Schema.NullOr(Schema.String),
  updatedAtIso: Schema.NullOr(Schema.String),
  updatedBy: Schema.NullOr(Schema.String)
})
type GuardrailsRow = typeof GuardrailsRow.Type
const decodeGuardrails = decodeRows(GuardrailsRow)

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
const COLUMNS = `settings, paused_reason, ${iso("paused_since")} AS paused_since_iso, ${iso("updated_at")} AS updated_at_iso, updated_by`

/**
 * For the `RETURNING` of every statement that writes guardrails (run with `invalidating`): the account whose guardrails
 * every instance drops at commit (after an insert too: an account without a row is cached with the defaults).
 */
const invalidated = (sql: SqlClient.SqlClient) => invalidateKey(sql, sql`written.project_id`)

/**
 * A statement that writes guardrails (`INSERT … RETURNING *` or `UPDATE … RETURNING *`) as the CTE `written`, answering
 * the row's columns and the key to invalidate: its times are formatted by a stable function, which Citus refuses in a
 * modification's own `RETURNING`.
 */
const returningWritten = (sql: SqlClient.SqlClient, write: Statement.Fragment, extra: Statement.Fragment = sql``) =>
  sql`written AS (${write} RETURNING *)
    SELECT ${sql.unsafe(COLUMNS)}, ${invalidated(sql)}${extra} FROM written`

const toDocument = (row: GuardrailsRow | undefined): Document => ({
  ...(row?.settings ?? DEFAULT_GUARDRAILS),
  autoApplyPaused: row?.pausedReason == null || row.pausedSinceIso === null ? null : { reason: row.pausedReason, since: row.pausedSinceIso },
  isDefault: row?.settings == null,
  updatedAt: row?.updatedAtIso ?? null,
  updatedBy: row?.updatedBy ?? null
})

/** The account's guardrails, read now (the defaults when nobody set them). */
export const readGuardrails = (sql: SqlClient.SqlClient, projectId: string) =>
  sql`SELECT ${sql.unsafe(COLUMNS)} FROM guardrails WHERE project_id = ${projectId}`.pipe(
    Effect.orDie,
    Effect.flatMap(decodeGuardrails),
    Effect.map((rows) => toDocument(rows[0]))
  )

/**
 * Whether a failure counts toward the circuit breaker: a write step failed, the upstream answered it with an
 * error (its request id), or the connection failed, not a re-check or a drift.
 */
export const isUpstreamWriteFailure = (failure: Failure): boolean =>
  failure.stepName !== null || failure.upstreamRequestId !== null || failure.message.startsWith("connection_error:")

/**
 * The circuit breaker (docs/contract.md 3.3), in the transaction that failed an action: when the account's upstream
 * write failures within the window reach the threshold (the account's guardrails, else the defaults), its
 * auto-apply pauses, with an `account.paused` event. A paused account stays paused (and keeps its first reason)
 * until an admin resumes it. Answers whether it paused now.
 */
export const tripCircuitBreaker = (sql: SqlClient.SqlClient, projectId: string) =>
  Effect.gen(function*() {
    const { failures, windowMinutes } = DEFAULT_GUARDRAILS.circuitBreaker
    // Under the account's lock, failures committing together count each other: the count below is read after it.
    yield* lockAccount(projectId).pipe(Effect.provideService(SqlClient.SqlClient, sql))
    const rows = yield* invalidating(sql, "g", sql`
      WITH limits AS (
        SELECT COALESCE((g.settings #>> '{circuitBreaker,failures}')::int, ${failures}) AS failures,
          COALESCE((g.settings #>> '{circuitBreaker,windowMinutes}')::int, ${windowMinutes}) AS window_minutes
        FROM (SELECT 1) one LEFT JOIN guardrails g ON g.project_id = ${projectId}),
      failing AS (
        SELECT count(a.action_id) AS n, limits.failures, limits.window_minutes
        FROM limits LEFT JOIN actions a ON a.project_id = ${projectId} AND a.status = 'failed'
          AND a.updated_at > statement_timestamp() - make_interval(mins => limits.window_minutes)
          AND (a.failure ->> 'stepName' IS NOT NULL OR a.failure ->> 'upstreamRequestId' IS NOT NULL
            OR starts_with(a.failure ->> 'message', 'connection_error:'))
        GROUP BY limits.failures, limits.window_minutes),
      ${
  returningWritten(
    sql,
    sql`INSERT INTO guardrails (project_id, paused_reason, paused_since)
      SELECT ${projectId}, format('%s upstream write failures in %s minutes', n, window_minutes), now()
      FROM failing WHERE n >= failures
      ON CONFLICT (project_id) DO UPDATE SET paused_reason = EXCLUDED.paused_reason, paused_since = EXCLUDED.paused_since
        WHERE guardrails.paused_since IS NULL`,
    sql`, (SELECT org_id FROM accounts WHERE project_id = ${projectId}) AS org_id`
  )
}`).pipe(
      Effect.orDie
    )
    const row = rows[0]
    if (row === undefined) return false
    const { orgId } = yield* Schema.decodeUnknown(Schema.Struct({ orgId: Schema.String }))(row).pipe(Effect.orDie)
    return yield* announcePause(sql, orgId, projectId, rows, "circuit breaker")
  })

/** After a pause was written (`rows`: its `RETURNING`), the `account.paused` event and the log line; false without one. */
const announcePause = (sql: SqlClient.SqlClient, orgId: string, projectId: string, rows: ReadonlyArray<unknown>, pausedBy: string) =>
  Effect.gen(function*() {
    if (rows.length === 0) return false
    const [paused] = yield* decodeGuardrails(rows)
    yield* writeEvent(sql, { orgId, projectId, type: "account.paused", data: { guardrails: toDocument(paused), by: pausedBy } })
    yield* Effect.logWarning(`auto-apply paused by the ${pausedBy}`).pipe(Effect.annotateLogs({ projectId, reason: paused?.pausedReason }))
    return true
  })

/**
 * Pauses the account's auto-apply for `reason` (the spend-anomaly breaker, docs/contract.md 3.3), with an
 * `account.paused` event, in one transaction. A paused account keeps its first reason. Answers whether it paused now.
 */
export const pauseAutoApply = (sql: SqlClient.SqlClient, orgId: string, projectId: string, reason: string, pausedBy: string) =>
  sql.withTransaction(Effect.gen(function*() {
    const rows = yield* invalidating(sql, "g", sql`WITH ${
      returningWritten(
        sql,
        sql`INSERT INTO guardrails (project_id, paused_reason, paused_since) VALUES (${projectId}, ${reason}, now())
      ON CONFLICT (project_id) DO UPDATE SET paused_reason = EXCLUDED.paused_reason, paused_since = EXCLUDED.paused_since
        WHERE guardrails.paused_since IS NULL`
      )
    }`)
    return yield* announcePause(sql, orgId, projectId, rows, pausedBy)
  })).pipe(Effect.orDie)

const by = (grant: Granted<"updateGuardrails" | "resumeAutoApply">) => `${grant.principal.kind}:${grant.principal.id}`

export class Guardrails extends Effect.Service<Guardrails>()("acs/Guardrails", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cached = (yield* Invalidation).cache<Document>("g")

    const load = (projectId: string) => readGuardrails(sql, projectId)

    /** The account's guardrails as the policy reads them on every proposal (cached across requests). */
    const read = (projectId: string) =>
      Effect.map(cached.get(projectId, Effect.map(load(projectId), Option.some)), Option.getOrElse(() => toDocument(undefined)))

    const get = (grant: Granted<"getGuardrails">) => load(grant.account.projectId).pipe(Effect.withSpan("Guardrails.get"))

    const changed = (grant: Granted<"updateGuardrails" | "resumeAutoApply">, type: "guardrails.changed" | "account.resumed", rows: ReadonlyArray<unknown>) =>
      Effect.gen(function*() {
        const document = toDocument((yield* decodeGuardrails(rows))[0])
        yield* writeEvent(sql, {
          orgId: grant.orgId,
          projectId: grant.account.projectId,
          type,
          data: { guardrails: document, by: by(grant) }
        })
        cached.invalidate(grant.account.projectId)
        return document
      })

    const put = (grant: Granted<"updateGuardrails">, settings: GuardrailsSettings) =>
      invalidating(sql, "g", sql`WITH ${
        returningWritten(
          sql,
          sql`INSERT INTO guardrails (project_id, settings, updated_at, updated_by)
        VALUES (${grant.account.projectId}, ${JSON.stringify(settings)}::jsonb, now(), ${by(grant)})
        ON CONFLICT (project_id) DO UPDATE SET settings = EXCLUDED.settings, updated_at = EXCLUDED.updated_at,
          updated_by = EXCLUDED.updated_by`
        )
      }`).pipe(
        Effect.orDie,
        Effect.flatMap((rows) => changed(grant, "guardrails.changed", rows)),
        sql.withTransaction,
        Effect.orDie,
        Effect.tap(() => Effect.logInfo("guardrails changed").pipe(Effect.annotateLogs({ projectId: grant.account.projectId }))),
        Effect.withSpan("Guardrails.put")
      )

    /** An admin clears the circuit breaker (`DELETE …/guardrails/pause`); clearing what is not paused changes nothing. */
    const resume = (grant: Granted<"resumeAutoApply">) =>
      Effect.gen(function*() {
        const rows = yield* invalidating(sql, "g", sql`WITH ${
          returningWritten(
            sql,
            sql`UPDATE guardrails SET paused_reason = NULL, paused_since = NULL
          WHERE project_id = ${grant.account.projectId} AND paused_since IS NOT NULL`
          )
        }`).pipe(Effect.orDie)
        if (rows.length === 0) return yield* load(grant.account.projectId)
        return yield* changed(grant, "account.resumed", rows)
      }).pipe(sql.withTransaction, Effect.orDie, Effect.withSpan("Guardrails.resume"))

    return { read, get, put, resume } as const
  }),
  dependencies: [Invalidation.Default]
}) {}
