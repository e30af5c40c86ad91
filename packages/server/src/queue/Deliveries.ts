/**
 * The webhook delivery queue: the apply queue's machinery (queue/Jobs.ts) over `webhook_deliveries`. A
 * delivery is claimed with `FOR UPDATE SKIP LOCKED` under a lease longer than an attempt can take; a lease
 * that ran out (its instance died mid-delivery) makes it claimable again, so a delivery is made at least once
 * whatever stops. `locked_by` fences the outcome: a worker whose delivery was rescued records nothing.
 * Deliveries of disabled or deleted endpoints wait (disabled) or are dropped (deleted).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { HOT_SPAN } from "../db/HotSpan.ts"
import type { AttemptResult } from "../events/WebhookSender.ts"

export interface ClaimedDelivery {
  readonly deliveryId: string
  readonly webhookId: string
  readonly eventId: string
  readonly body: Readonly<Record<string, unknown>>
  readonly attempts: number
  readonly url: string
  readonly format: "json" | "slack"
  readonly secretSealed: string
  /** Milliseconds left until the delivery gives up. */
  readonly windowLeftMs: number
  /** The traceparent of what wrote the event (telemetry: the delivery's span links to it). */
  readonly traceParent: string | null
}

/** A claim's row: a claimed delivery's columns (all null when none was claimed) and the next due time. */
type ClaimRow = { readonly [K in keyof Omit<ClaimedDelivery, "body" | "windowLeftMs">]: ClaimedDelivery[K] | null } & {
  readonly bodyText: string | null
  readonly windowLeftMs: string | null
  readonly nextDueInMs: string | null
}

/** What one claim answers. */
export interface Claimed {
  readonly batch: ReadonlyArray<ClaimedDelivery>
  /** When the next unclaimed delivery is due, in ms from the claim (≤ 0: already, or maybe after a full batch; null: none waits). */
  readonly nextDueInMs: number | null
}

export class Deliveries extends Effect.Service<Deliveries>()("acs/Deliveries", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Up to `limit` due deliveries, leased to `workerId` (oldest due first), and when the next of the others
     * is due (ms from now; null when none waits): a worker that found fewer than `limit` sleeps until then at
     * most, with no second statement to ask. A batch, not one: under a burst of events one statement leases
     * many, so the queue's statements per delivery stay far below one. Deliveries of disabled or deleted
     * endpoints are neither claimed nor counted as due: they would wake the workers at once, again and again.
     * Prepared (its text never varies): planning this statement cost PostgreSQL about 0.7 ms per claim, as much
     * as running it for a batch of twenty.
     */
    const claim = (workerId: string, leaseMs: number, limit: number) =>
      sql<ClaimRow>`/* prepared */
        WITH next AS (
          SELECT d.delivery_id FROM webhook_deliveries d
          JOIN webhooks w ON w.webhook_id = d.webhook_id AND w.disabled_at IS NULL AND w.deleted_at IS NULL
          WHERE d.status = 'pending' AND d.run_at <= clock_timestamp() AND (d.lease_until IS NULL OR d.lease_until < clock_timestamp())
          ORDER BY d.run_at, d.created_at
          LIMIT ${limit}
          FOR UPDATE OF d SKIP LOCKED),
        claimed AS (
          UPDATE webhook_deliveries d SET locked_by = ${workerId}, attempts = d.attempts + 1,
            lease_until = clock_timestamp() + make_interval(secs => ${leaseMs / 1000})
          FROM next, webhooks w
          WHERE d.delivery_id = next.delivery_id AND w.webhook_id = d.webhook_id
          RETURNING d.delivery_id, d.webhook_id, d.event_id, d.body, d.attempts, w.url, w.format, w.secret_sealed,
            (extract(epoch FROM d.give_up_at - clock_timestamp()) * 1000)::int8 AS window_left_ms),
        -- A full batch says 0 (more may be due: the worker claims again at once) without the scan of every
        -- pending row that the due time of a partial batch takes.
        due AS (
          SELECT CASE WHEN (SELECT count(*) FROM claimed) >= ${limit} THEN 0 ELSE (
            SELECT (extract(epoch FROM min(GREATEST(p.run_at, COALESCE(p.lease_until, p.run_at))) - clock_timestamp()) * 1000)::int8
            FROM webhook_deliveries p
            JOIN webhooks pw ON pw.webhook_id = p.webhook_id AND pw.disabled_at IS NULL AND pw.deleted_at IS NULL
            WHERE p.status = 'pending' AND p.delivery_id NOT IN (SELECT delivery_id FROM claimed)) END AS next_due_in_ms)
        -- The body as the event's (migration 0020), unless the row carries its own (a ping, an older row).
        SELECT c.delivery_id, c.webhook_id, c.event_id, c.attempts, c.url, c.format, c.secret_sealed, c.window_left_ms,
          (CASE WHEN c.body IS NOT NULL THEN c.body WHEN e.event_id IS NOT NULL THEN acs_event_body(e) END)::text AS body_text,
          e.trace_parent, due.next_due_in_ms
        FROM due LEFT JOIN claimed c ON true LEFT JOIN events e ON e.event_id = c.event_id`.pipe(
        Effect.map((rows): Claimed => ({
          // One row even when nothing was claimed: it carries the next due time.
          batch: rows.flatMap(({ bodyText, nextDueInMs: _, ...rest }): Array<ClaimedDelivery> =>
            rest.deliveryId === null || bodyText === null ? [] : [{
              ...(rest as Omit<ClaimedDelivery, "body" | "windowLeftMs">),
              // The body as text: the SQL client would rename the keys of a JSON value it decodes.
              body: JSON.parse(bodyText) as Readonly<Record<string, unknown>>,
              windowLeftMs: Number(rest.windowLeftMs)
            }]
          ),
          nextDueInMs: rows[0]?.nextDueInMs === null || rows[0] === undefined ? null : Number(rows[0].nextDueInMs)
        })),
        Effect.orDie,
        Effect.withSpan("Deliveries.claim", HOT_SPAN)
      )

    const attemptColumns = (result: AttemptResult) =>
      sql`last_status_code = ${result.statusCode}, last_duration_ms = ${result.durationMs}, last_error = ${result.error},
        last_response = ${result.response}, last_attempt_at = clock_timestamp(), locked_by = NULL, lease_until = NULL`

    /**
     * Delivered, in one statement for a batch; answers the ids recorded (one missing is no longer this
     * worker's: its new owner records it). Arrays, not a JSON document: the planner knows from an array how
     * many rows it holds, and finds each by its key instead of scanning a table it takes to be small. Prepared,
     * as the claim is (the arrays are parameters: one text whatever the batch's size).
     */
    const delivered = (workerId: string, outcomes: ReadonlyArray<{ readonly deliveryId: string; readonly result: AttemptResult }>) =>
      outcomes.length === 0 ? Effect.succeed(new Set<string>()) : sql<{ readonly deliveryId: string }>`/* prepared */
        UPDATE webhook_deliveries d SET status = 'delivered', delivered_at = clock_timestamp(), last_status_code = o.status_code,
          last_duration_ms = o.duration_ms, last_error = NULL, last_response = o.response, last_attempt_at = clock_timestamp(),
          locked_by = NULL, lease_until = NULL
        FROM unnest(${outcomes.map((o) => o.deliveryId)}::text[], ${outcomes.map((o) => o.result.statusCode)}::int[],
          ${outcomes.map((o) => o.result.durationMs)}::int[], ${outcomes.map((o) => o.result.response)}::text[])
          AS o (delivery_id, status_code, duration_ms, response)
        WHERE d.delivery_id = o.delivery_id AND d.locked_by = ${workerId}
        RETURNING d.delivery_id`.pipe(
        Effect.map((rows) => new Set(rows.map((row) => row.deliveryId))),
        Effect.orDie
      )

    /** Not delivered: tried again after `delayMs`. */
    const retryLater = (deliveryId: string, workerId: string, result: AttemptResult, delayMs: number) =>
      sql`UPDATE webhook_deliveries SET run_at = clock_timestamp() + make_interval(secs => ${delayMs / 1000}), ${attemptColumns(result)}
          WHERE delivery_id = ${deliveryId} AND locked_by = ${workerId} RETURNING delivery_id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /**
     * Not delivered within the retry window: the delivery fails and its endpoint is disabled until an admin
     * enables it (API.md: disabled after repeated failure), in one transaction.
     */
    const giveUp = (delivery: ClaimedDelivery, workerId: string, result: AttemptResult) =>
      sql.withTransaction(Effect.gen(function*() {
        const failed = yield* sql`UPDATE webhook_deliveries SET status = 'failed', ${attemptColumns(result)}
          WHERE delivery_id = ${delivery.deliveryId} AND locked_by = ${workerId} RETURNING delivery_id`
        if (failed.length === 0) return false
        yield* sql`UPDATE webhooks SET disabled_at = clock_timestamp(),
            disabled_reason = ${`delivery of ${delivery.eventId} kept failing for the whole retry window (last: ${result.error ?? "?"})`}
          WHERE webhook_id = ${delivery.webhookId} AND disabled_at IS NULL`
        return true
      })).pipe(Effect.orDie)

    return { claim, delivered, retryLater, giveUp } as const
  })
}) {}
