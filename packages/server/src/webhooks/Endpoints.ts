/**
 * The `webhooks` table's owner (docs/decisions/architecture.md "One owner per table"): an endpoint's row as the
 * API shows it, and every write of it. The admin's statements (create, delete, enable) are run by Webhooks.ts;
 * the delivery queue's state on the row (claimed position, held retries, back-off, disabling) is written by the
 * fragments below, which the queue's composite statements in Deliveries.ts assemble (one round trip each). The
 * positions the sequencer queues are written by db/functions/acs_sequence_events.sql.
 */
import { Webhook } from "@acs/domain/Webhooks"
import type { SqlClient, Statement } from "@effect/sql"
import { Effect, Schema } from "effect"
import { columnsOf, decodeRows } from "../db/Rows.ts"

/** An endpoint as the API shows it (its secret and the queue's columns aside). */
export const WebhookRow = Schema.Struct(Webhook.fields)
export type WebhookRow = typeof WebhookRow.Type

export const webhookColumns = columnsOf(WebhookRow)
export const decodeWebhooks = decodeRows(WebhookRow)

export interface NewEndpoint {
  readonly webhookId: string
  readonly orgId: string
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly description: string | null
  readonly format: "json" | "slack" | "slack_app"
  readonly secretSealed: string
  readonly createdBy: string
}

export const endpointStatements = (sql: SqlClient.SqlClient) => {
  const columns = sql.unsafe(webhookColumns)
  return {
    create: (endpoint: NewEndpoint) =>
      sql`
        INSERT INTO webhooks (webhook_id, org_id, url, events, description, format, secret_sealed, created_by)
        VALUES (${endpoint.webhookId}, ${endpoint.orgId}, ${endpoint.url}, ${JSON.stringify(endpoint.events)}::jsonb,
          ${endpoint.description}, ${endpoint.format}, ${endpoint.secretSealed}, ${endpoint.createdBy})
        RETURNING ${columns}`.pipe(Effect.flatMap(decodeWebhooks)),

    /** Deleted: no further deliveries. Answers whether it was there. */
    remove: (orgId: string, webhookId: string) =>
      sql`UPDATE webhooks SET deleted_at = statement_timestamp()
        WHERE org_id = ${orgId} AND webhook_id = ${webhookId} AND deleted_at IS NULL RETURNING webhook_id`.pipe(
        Effect.map((rows) => rows.length > 0)
      ),

    /**
     * Back on, its back-off forgotten. Once disabled, it starts at the current position: the events of its
     * disabled time are not sent (migration 0025).
     */
    enable: (orgId: string, webhookId: string) =>
      sql`UPDATE webhooks SET disabled_at = NULL, disabled_reason = NULL, unanswered = 0, backoff_until = NULL,
          claimed_through = CASE WHEN disabled_at IS NULL THEN claimed_through ELSE acs_last_position() END,
          queued_through = CASE WHEN disabled_at IS NULL THEN queued_through ELSE acs_last_position() END
        WHERE org_id = ${orgId} AND webhook_id = ${webhookId} AND deleted_at IS NULL
        RETURNING ${columns}`.pipe(Effect.flatMap(decodeWebhooks)),

    /** An attempt to an endpoint that was backing off was answered: it is claimed in full again. */
    recovered: (orgId: string, webhookId: string) =>
      sql`UPDATE webhooks SET unanswered = 0, backoff_until = NULL WHERE org_id = ${orgId} AND webhook_id = ${webhookId} AND unanswered > 0`,

    /** The endpoint's group of queued deliveries is recorded: the next may be claimed. */
    releaseRetries: (orgId: string, webhookId: string, workerId: string) =>
      sql`UPDATE webhooks SET retries_held_until = NULL, retries_held_by = NULL
        WHERE org_id = ${orgId} AND webhook_id = ${webhookId} AND retries_held_by = ${workerId}`
  }
}

/**
 * The endpoint writes of the delivery queue's composite statements (Deliveries.ts), each the body of one of
 * their CTEs; the relations they name (`ids`, `from`) are the composite's.
 */
export const endpointFragments = (sql: SqlClient.SqlClient) => ({
  /** The org's endpoints `ids` select hold their queued deliveries for `workerId` for a lease (until `releaseRetries`). */
  holdRetries: (orgId: string, ids: Statement.Fragment, workerId: string, leaseMs: number) =>
    sql`UPDATE webhooks w SET retries_held_until = statement_timestamp() + make_interval(secs => ${leaseMs / 1000}), retries_held_by = ${workerId}
          WHERE w.org_id = ${orgId} AND w.webhook_id IN (${ids})
          RETURNING 1`,

  /**
   * The endpoint `from` names (as `endpoint`) is claimed through `through`; its position never moves back.
   * Returns the claimed range: `after_position`, `through_position`.
   */
  advanceClaimed: (orgId: string, through: Statement.Fragment, from: Statement.Fragment) =>
    sql`UPDATE webhooks w SET claimed_through = GREATEST(w.claimed_through, ${through})
          FROM ${from} WHERE w.org_id = ${orgId} AND w.webhook_id = endpoint.webhook_id
          RETURNING endpoint.claimed_through AS after_position, w.claimed_through AS through_position`,

  /**
   * The endpoint is disabled until an admin enables it, claimed through the last position (its events not yet
   * claimed become queued deliveries, by the composite). Returns `webhook_id`, `org_id`, `events` and the range.
   */
  disable: (orgId: string, webhookId: string, reason: string) =>
    // Through the org's last event this statement can see, not the sequencer's counter (on the coordinator under Citus).
    sql`UPDATE webhooks w SET disabled_at = statement_timestamp(),
              claimed_through = GREATEST(w.claimed_through, (SELECT max(e.position) FROM events e
                WHERE e.org_id = ${orgId} AND e.position > w.claimed_through AND e.position <= w.queued_through)),
              disabled_reason = ${reason}
            FROM (SELECT webhook_id, claimed_through FROM webhooks WHERE org_id = ${orgId} AND webhook_id = ${webhookId} FOR NO KEY UPDATE) before
            WHERE w.org_id = ${orgId} AND w.webhook_id = before.webhook_id AND w.disabled_at IS NULL
            RETURNING w.webhook_id, w.org_id, w.events, before.claimed_through AS after_position, w.claimed_through AS through_position`,

  /**
   * An attempt got no answer: the endpoint backs off for `baseMs` doubling with each such group in a row, at
   * most `maxMs`. Returns `backoff_until`.
   */
  backOff: (orgId: string, webhookId: string, baseMs: number, maxMs: number) =>
    // From the epoch, not the statement's time plus an interval: Citus refuses a stable function (the sum) of a column in an UPDATE.
    sql`UPDATE webhooks SET unanswered = unanswered + 1,
            backoff_until = to_timestamp(extract(epoch FROM statement_timestamp())::float8
              + LEAST(${maxMs}::float8, ${baseMs}::float8 * 2 ^ LEAST(unanswered, 32)) / 1000)
          WHERE org_id = ${orgId} AND webhook_id = ${webhookId} AND deleted_at IS NULL
          RETURNING backoff_until`
})
