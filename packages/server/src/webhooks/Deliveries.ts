/**
 * The webhook delivery queue: the apply queue's machinery (queue/Jobs.ts) over `webhook_deliveries` and
 * `webhook_batches` (migration 0025). A claim leases, in one statement, the due queued deliveries (retries,
 * pings) and a batch of first attempts: the events an endpoint wants past its claimed position, the range
 * leased as one batch row. Both are taken with `FOR UPDATE SKIP LOCKED` under a lease longer than an attempt
 * can take; a lease that ran out (its instance died mid-delivery) makes a queued delivery claimable again and
 * turns a batch into queued deliveries, so a delivery is made at least once whatever stops. `locked_by` fences
 * the outcome: a worker whose delivery or batch was rescued records nothing. Deliveries of disabled or deleted
 * endpoints wait (disabled) or are dropped (deleted). A claim is of one org, and every statement of a delivery
 * names its org (one shard on Citus); which orgs have deliveries due is `readyOrgs`, the one read across them.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { columnsOf, decodeRows } from "../db/Rows.ts"
import { eventBody } from "../events/Outbox.ts"
import { EventsConfig } from "../events/Sequencer.ts"
import { endpointFragments, endpointStatements } from "./Endpoints.ts"
import type { AttemptResult } from "./WebhookSender.ts"

/** What every row of a claim says: whether more waits, and the next due time (int8 as text). */
const claimTail = { more: Schema.Boolean, nextDueInMs: Schema.NullOr(Schema.NumberFromString) }

/** A claimed delivery as the claim's row carries it. */
const ClaimedDeliveryRow = Schema.Struct({
  deliveryId: Schema.String,
  webhookId: Schema.String,
  /** Its endpoint's org: every statement of the delivery names it (one shard on Citus). */
  orgId: Schema.String,
  eventId: Schema.String,
  eventType: Schema.String,
  attempts: Schema.Number,
  url: Schema.String,
  format: Schema.Literal("json", "slack", "slack_app"),
  secretSealed: Schema.String,
  /** Milliseconds left until the delivery gives up (int8 as text). */
  windowLeftMs: Schema.NumberFromString,
  /** The traceparent of what wrote the event (telemetry: the delivery's span links to it). */
  traceParent: Schema.NullOr(Schema.String),
  /** A first attempt's batch (its row is inserted when the attempt ended); null for a queued delivery. */
  batchId: Schema.NullOr(Schema.String),
  /** Its endpoint's last attempts got no answer (migration 0029): this is a probe, one of its kind at a time. */
  endpointFailing: Schema.Boolean,
  /** As text: the SQL client would rename the keys of a JSON value it decodes. Null when the event is gone. */
  bodyText: Schema.NullOr(Schema.String),
  ...claimTail
})

/**
 * A claim's row: a claimed delivery, or the one row of a claim that claimed none (its delivery's columns all
 * null). The null id tells them apart: a literal, which the union looks up instead of trying the other member first.
 */
const ClaimRow = Schema.Union(ClaimedDeliveryRow, Schema.Struct({ deliveryId: Schema.Null, ...claimTail }))
const decodeClaimRows = decodeRows(ClaimRow)

export interface ClaimedDelivery extends Omit<typeof ClaimedDeliveryRow.Type, "bodyText" | "more" | "nextDueInMs"> {
  readonly body: Readonly<Record<string, unknown>>
}

/** What the recording of a batch's first attempts answers: a recorded delivery, and whether its endpoint has more. */
const RecordedAttempt = Schema.Struct({ deliveryId: Schema.String, more: Schema.Boolean })
const decodeRecordedAttempts = decodeRows(RecordedAttempt)

/** What one claim answers. */
export interface Claimed {
  readonly batch: ReadonlyArray<ClaimedDelivery>
  /** More is claimable now (the queued part was full, another endpoint has first attempts, a batch was rescued). */
  readonly more: boolean
  /** When the next queued delivery is due, in ms from the claim (≤ 0: already; null: none waits). */
  readonly nextDueInMs: number | null
}

/** A first attempt made, or not made: its delivery's row is inserted as it ended. */
export interface FirstAttempt {
  readonly delivery: ClaimedDelivery
  /** Null: not sent (its endpoint backs off, or its batch's time ran out), so not counted as an attempt. */
  readonly result: AttemptResult | null
  /** Not delivered: the wait before the next attempt. */
  readonly delayMs: number
}

/** A delivery of the queue as its log shows it. The order of the fields is the log's select list (Webhooks.ts). */
export const DeliveryRow = Schema.Struct({
  deliveryId: Schema.String,
  eventId: Schema.String,
  eventType: Schema.String,
  status: Schema.Literal("pending", "delivered", "failed"),
  attempts: Schema.Number,
  lastStatusCode: Schema.NullOr(Schema.Number),
  lastDurationMs: Schema.NullOr(Schema.Number),
  lastError: Schema.NullOr(Schema.String),
  lastResponse: Schema.NullOr(Schema.String),
  lastAttemptAt: Schema.NullOr(Schema.String),
  runAt: Schema.String,
  deliveredAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String
})
export type DeliveryRow = typeof DeliveryRow.Type

export const deliveryColumns = columnsOf(DeliveryRow)
export const decodeDeliveries = decodeRows(DeliveryRow)
const decodeDeliveryIds = decodeRows(DeliveryRow.pick("deliveryId"))

/** An endpoint's back-off, in ms from now (int8 as text). */
const decodeBackoff = decodeRows(Schema.Struct({ backoffMs: Schema.NumberFromString }))

/** The admin's writes of the queue (Webhooks.ts): a ping, and an endpoint's waiting deliveries when it is deleted or enabled. */
export const deliveryStatements = (sql: SqlClient.SqlClient, retryWindowSeconds: number) => ({
  /** A `ping` event for one endpoint, delivered and logged like any other. */
  ping: (ping: { readonly deliveryId: string; readonly webhookId: string; readonly orgId: string; readonly eventId: string; readonly body: unknown }) =>
    sql`
      INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, body, give_up_at)
      VALUES (${ping.deliveryId}, ${ping.webhookId}, ${ping.orgId}, ${ping.eventId}, 'ping', ${JSON.stringify(ping.body)}::jsonb,
        statement_timestamp() + make_interval(secs => ${retryWindowSeconds}))
      RETURNING ${sql.unsafe(deliveryColumns)}`.pipe(Effect.flatMap(decodeDeliveries)),

  /** The endpoint was deleted: its pending deliveries end as failed. */
  failPendingOf: (orgId: string, webhookId: string) =>
    sql`UPDATE webhook_deliveries SET status = 'failed', last_error = 'the endpoint was deleted'
      WHERE org_id = ${orgId} AND webhook_id = ${webhookId} AND status = 'pending'`,

  /** The endpoint was enabled: its waiting deliveries are due now, with a fresh retry window. */
  retryNowOf: (orgId: string, webhookId: string) =>
    sql`UPDATE webhook_deliveries SET run_at = statement_timestamp(),
        give_up_at = statement_timestamp() + make_interval(secs => ${retryWindowSeconds})
      WHERE org_id = ${orgId} AND webhook_id = ${webhookId} AND status = 'pending'`
})

/**
 * Before a day's partition of the events is dropped (retention, db/TimePartitions.ts): a pending delivery of one of
 * its events keeps the event's body, as the API shows it, in its own row, since the event will no longer carry it.
 * The bodies are made apart from the update: Citus refuses a function of the rows in an UPDATE's `SET`.
 */
export const keepPendingBodies = (sql: SqlClient.SqlClient, partition: string): Effect.Effect<void> =>
  sql`
    WITH gone_bodies AS MATERIALIZED (
      SELECT e.org_id, e.event_id, ${eventBody(sql, "e")} AS body
      FROM webhook_deliveries d JOIN ${sql(partition)} e ON e.org_id = d.org_id AND e.event_id = d.event_id
      WHERE d.status = 'pending' AND d.body IS NULL)
    UPDATE webhook_deliveries d SET body = b.body FROM gone_bodies b
    WHERE d.org_id = b.org_id AND d.event_id = b.event_id AND d.status = 'pending' AND d.body IS NULL`.pipe(
    Effect.asVoid,
    Effect.orDie,
    Effect.withSpan("Deliveries.keepPendingBodies")
  )

/** Up to `limit` ended deliveries (not pending) made before `cutoff` deleted (retention); answers how many. */
export const pruneDeliveries = (sql: SqlClient.SqlClient, cutoff: Date, limit: number): Effect.Effect<number> =>
  sql`DELETE FROM webhook_deliveries WHERE delivery_id IN (
    SELECT delivery_id FROM webhook_deliveries WHERE created_at < ${cutoff} AND status <> 'pending' LIMIT ${limit}) RETURNING delivery_id`.pipe(
    Effect.map((rows) => rows.length),
    Effect.orDie
  )


/** Each org with deliveries to make, and when its first is due (ms from now; 0 or less: claimable now). */
const decodeOrgsDue = decodeRows(Schema.Struct({ orgId: Schema.String, dueInMs: Schema.NumberFromString }))

/** The orgs with a delivery claimable now, the longest waiting first, and when the next other one is due (null: none). */
export interface ReadyOrgs {
  readonly ready: ReadonlyArray<string>
  readonly nextDueInMs: number | null
}

/**
 * Which orgs have deliveries to make: the one statement of the queue across orgs, a read that locks nothing, taken
 * by a worker whose pass over the orgs has ended (docs/decisions/events-and-webhooks.md "Deliveries are claimed per org, in
 * turn"). An org is due with the claim's own conditions: an enabled endpoint with events past its claimed position
 * and no batch out (when its back-off ends), a queued delivery (when it, its lease, its endpoint's back-off and
 * its endpoint's held group allow; an admin's ping at once), a batch (when its lease runs out: the claim rescues it).
 */
const readyOrgs = (sql: SqlClient.SqlClient): Effect.Effect<ReadyOrgs> =>
  sql`/* prepared */ SELECT org_id, (extract(epoch FROM min(due) - statement_timestamp()) * 1000)::int8 AS due_in_ms FROM (
      SELECT w.org_id, COALESCE(w.backoff_until, statement_timestamp()) AS due FROM webhooks w
      WHERE w.claimed_through < w.queued_through AND w.disabled_at IS NULL AND w.deleted_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM webhook_batches b WHERE b.org_id = w.org_id AND b.webhook_id = w.webhook_id)
      UNION ALL
      SELECT b.org_id, b.lease_until FROM webhook_batches b
      UNION ALL
      SELECT p.org_id, CASE WHEN p.event_type = 'ping' AND p.attempts = 0 THEN GREATEST(p.run_at, COALESCE(p.lease_until, p.run_at))
          ELSE GREATEST(p.run_at, COALESCE(p.lease_until, p.run_at), COALESCE(w.backoff_until, p.run_at), COALESCE(w.retries_held_until, p.run_at)) END
      FROM webhook_deliveries p
      JOIN webhooks w ON w.org_id = p.org_id AND w.webhook_id = p.webhook_id AND w.disabled_at IS NULL AND w.deleted_at IS NULL
      WHERE p.status = 'pending') due
    GROUP BY org_id ORDER BY 2`.pipe(
    Effect.flatMap(decodeOrgsDue),
    Effect.map((orgs): ReadyOrgs => {
      const later = orgs.find((org) => org.dueInMs > 0)
      return { ready: orgs.filter((org) => org.dueInMs <= 0).map((org) => org.orgId), nextDueInMs: later === undefined ? null : later.dueInMs }
    }),
    Effect.orDie,
    Effect.withSpan("Deliveries.readyOrgs", HOT_SPAN)
  )

export class Deliveries extends Effect.Service<Deliveries>()("acs/Deliveries", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const endpoints = endpointFragments(sql)
    const endpointRows = endpointStatements(sql)

    const { retryWindowSeconds } = yield* EventsConfig

    /**
     * Up to `limit` due queued deliveries of the org (oldest due first) and up to `limit` first attempts of its
     * enabled endpoint furthest behind that has no batch out, leased to `workerId`, with whether more of the org's
     * is claimable now and when its next queued delivery is due (ms from now; null when none waits). Every table
     * it touches is named with the org (docs/decisions/events-and-webhooks.md "Deliveries are claimed per org, in turn"): on
     * Citus it runs on the org's shard, its row locks there; which orgs have work is `readyOrgs`, one read across
     * them. Batches, not one: under a burst of events one statement leases many, so the queue's statements per
     * delivery stay far below one. Deliveries of disabled or deleted endpoints are neither claimed nor counted as
     * due: they would wake the workers at once, again and again. A batch whose lease ran out becomes queued
     * deliveries, claimable by the next claim. Prepared (its text never varies): planning it cost PostgreSQL
     * about as much as running it for a batch of twenty.
     *
     * Isolation (migration 0029): nothing of an endpoint backing off is claimed; an endpoint whose last attempts
     * got no answer gives one delivery of each kind at a time (a probe); an endpoint's queued deliveries go out as
     * one group, held on its row until recorded (`releaseRetries`); a claim takes first attempts and queued
     * deliveries of different endpoints. An admin's ping is sent at once whatever its endpoint's state.
     */
    const claim = (workerId: string, orgId: string, leaseMs: number, limit: number) =>
      sql`/* prepared */
        WITH rescued AS (
          DELETE FROM webhook_batches b WHERE b.org_id = ${orgId} AND b.batch_id IN (
            SELECT batch_id FROM webhook_batches WHERE org_id = ${orgId} AND lease_until < statement_timestamp() ORDER BY lease_until LIMIT ${limit}
            FOR UPDATE SKIP LOCKED)
          RETURNING b.webhook_id, b.after_position, b.through_position),
        -- Attempted or not, its instance died: counted as attempted once, due at once.
        requeued AS (
          INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, attempts, give_up_at)
          SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), w.webhook_id, e.org_id, e.event_id, e.type, 1,
            statement_timestamp() + make_interval(secs => ${retryWindowSeconds})
          FROM rescued r
          JOIN webhooks w ON w.org_id = ${orgId} AND w.webhook_id = r.webhook_id AND w.deleted_at IS NULL
          JOIN events e ON e.org_id = ${orgId} AND e.position > r.after_position AND e.position <= r.through_position AND w.events ? e.type
          ON CONFLICT (webhook_id, event_id, org_id) DO NOTHING
          RETURNING 1),
        -- Endpoints with a batch out: one at a time each, so a slow receiver's queue of attempts waiting for one
        -- of its connections stays within a lease (EndpointLanes.ts bounds the batch's time besides).
        sending AS (SELECT webhook_id FROM webhook_batches WHERE org_id = ${orgId} AND lease_until >= statement_timestamp()),
        -- NO KEY UPDATE: a delivery row's insert holds its endpoint FOR KEY SHARE (the foreign key), which must
        -- not hide the endpoint from this claim.
        endpoint AS (
          SELECT w.webhook_id, w.org_id, w.events, w.claimed_through, w.queued_through, w.url, w.format, w.secret_sealed,
            w.unanswered > 0 AS failing, CASE WHEN w.unanswered > 0 THEN 1 ELSE ${limit} END AS take
          FROM webhooks w
          WHERE w.org_id = ${orgId} AND w.claimed_through < w.queued_through AND w.disabled_at IS NULL AND w.deleted_at IS NULL
            AND (w.backoff_until IS NULL OR w.backoff_until <= statement_timestamp())
            AND w.webhook_id NOT IN (SELECT webhook_id FROM sending)
          ORDER BY w.claimed_through
          LIMIT 1
          FOR NO KEY UPDATE SKIP LOCKED),
        -- The endpoints' rows are locked too (skipping a locked one), as the group's hold below writes them: two
        -- claims each holding the endpoint the other wants would otherwise wait for each other.
        next AS (
          SELECT d.delivery_id, d.webhook_id, d.run_at, d.created_at, w.unanswered FROM webhook_deliveries d
          JOIN webhooks w ON w.org_id = ${orgId} AND w.webhook_id = d.webhook_id AND w.disabled_at IS NULL AND w.deleted_at IS NULL
          WHERE d.org_id = ${orgId} AND d.status = 'pending' AND d.run_at <= statement_timestamp()
            AND (d.lease_until IS NULL OR d.lease_until < statement_timestamp())
            AND d.webhook_id NOT IN (SELECT webhook_id FROM endpoint)
            -- An admin's ping goes at once, a probe whatever the endpoint's state (Webhooks.ts).
            AND ((w.backoff_until IS NULL OR w.backoff_until <= statement_timestamp())
                AND (w.retries_held_until IS NULL OR w.retries_held_until < statement_timestamp())
              OR d.event_type = 'ping' AND d.attempts = 0)
          ORDER BY d.run_at, d.created_at
          LIMIT ${limit}
          FOR UPDATE OF d SKIP LOCKED FOR NO KEY UPDATE OF w SKIP LOCKED),
        -- A probe: one of an endpoint whose last attempts got no answer.
        picked AS (
          SELECT r.delivery_id, r.webhook_id FROM (
            SELECT n.delivery_id, n.webhook_id, n.unanswered,
              row_number() OVER (PARTITION BY n.webhook_id ORDER BY n.run_at, n.created_at) AS k
            FROM next n) r
          WHERE r.unanswered = 0 OR r.k = 1),
        claimed AS (
          UPDATE webhook_deliveries d SET locked_by = ${workerId}, attempts = d.attempts + 1,
            lease_until = statement_timestamp() + make_interval(secs => ${leaseMs / 1000})
          FROM picked, webhooks w
          WHERE d.org_id = ${orgId} AND d.delivery_id = picked.delivery_id AND w.org_id = ${orgId} AND w.webhook_id = d.webhook_id
          -- The window left is reckoned below: Citus refuses a stable function (the statement's time) in a RETURNING list.
          RETURNING d.delivery_id, d.webhook_id, d.event_id, d.event_type, d.body, d.attempts, w.url, w.format, w.secret_sealed,
            d.give_up_at, w.unanswered > 0 AS endpoint_failing),
        held AS (${endpoints.holdRetries(orgId, sql`SELECT webhook_id FROM picked`, workerId, leaseMs)}),
        -- The endpoint's row is its latest version (a lock waits for none and reads the newest), which may count
        -- events sequenced after this statement's snapshot: only the events it can see are taken.
        taken AS (
          SELECT e.event_id, e.type, e.position, e.trace_parent, ${eventBody(sql, "e")}::text AS body_text
          FROM endpoint w CROSS JOIN LATERAL (
            SELECT * FROM events e
            WHERE e.org_id = ${orgId} AND e.position > w.claimed_through AND e.position <= w.queued_through AND w.events ? e.type
            ORDER BY e.position
            LIMIT w.take) e),
        -- A part batch took every event it wants that it can see: the endpoint moves past the org's last event it
        -- can see (those sequenced in one pass commit together, after every earlier pass), read only then.
        advanced AS (${
        endpoints.advanceClaimed(
          orgId,
          sql`CASE WHEN (SELECT count(*) FROM taken) >= endpoint.take THEN (SELECT max(position) FROM taken) ELSE (
            SELECT max(e.position) FROM events e
            WHERE e.org_id = ${orgId} AND e.position > endpoint.claimed_through AND e.position <= endpoint.queued_through) END`,
          sql`endpoint`
        )
      }),
        leased AS (
          INSERT INTO webhook_batches (batch_id, webhook_id, org_id, after_position, through_position, locked_by, lease_until)
          SELECT 'bat_' || replace(gen_random_uuid()::text, '-', ''), endpoint.webhook_id, endpoint.org_id, advanced.after_position,
            advanced.through_position, ${workerId}, statement_timestamp() + make_interval(secs => ${leaseMs / 1000})
          FROM endpoint, advanced WHERE EXISTS (SELECT 1 FROM taken)
          RETURNING batch_id),
        -- A full part says 0 (more may be due: the worker claims again at once) without the scan of every
        -- pending row that the due time of a partial batch takes. Endpoints backing off or with a group out are
        -- due when that ends (their record wakes a worker, at once when the group was full): a full batch of
        -- first attempts says no more by itself, as its endpoint is out until it is recorded.
        due AS (
          SELECT (SELECT count(*) FROM next) >= ${limit}
              OR EXISTS (SELECT 1 FROM requeued)
              OR EXISTS (SELECT 1 FROM webhooks o WHERE o.org_id = ${orgId} AND o.claimed_through < o.queued_through AND o.disabled_at IS NULL
                AND o.deleted_at IS NULL AND (o.backoff_until IS NULL OR o.backoff_until <= statement_timestamp())
                AND o.webhook_id NOT IN (SELECT webhook_id FROM endpoint)
                AND o.webhook_id NOT IN (SELECT webhook_id FROM sending)) AS more,
            CASE WHEN (SELECT count(*) FROM next) >= ${limit} THEN 0 ELSE (
              SELECT (extract(epoch FROM min(GREATEST(p.run_at, COALESCE(p.lease_until, p.run_at), COALESCE(pw.backoff_until, p.run_at),
                COALESCE(pw.retries_held_until, p.run_at))) - statement_timestamp()) * 1000)::int8
              FROM webhook_deliveries p
              JOIN webhooks pw ON pw.org_id = ${orgId} AND pw.webhook_id = p.webhook_id AND pw.disabled_at IS NULL AND pw.deleted_at IS NULL
              WHERE p.org_id = ${orgId} AND p.status = 'pending' AND p.webhook_id NOT IN (SELECT webhook_id FROM picked)) END AS next_due_in_ms)
        -- The body as the event's (migration 0020), unless the row carries its own (a ping, an older row).
        SELECT c.delivery_id, c.webhook_id, ${orgId}::text AS org_id, c.event_id, c.event_type, c.attempts, c.url, c.format, c.secret_sealed,
          (extract(epoch FROM c.give_up_at - statement_timestamp()) * 1000)::int8 AS window_left_ms, (CASE WHEN c.body IS NOT NULL THEN c.body WHEN e.event_id IS NOT NULL THEN ${eventBody(sql, "e")} END)::text AS body_text,
          e.trace_parent, NULL::text AS batch_id, c.endpoint_failing, due.more, due.next_due_in_ms
        FROM due LEFT JOIN claimed c ON true LEFT JOIN events e ON e.org_id = ${orgId} AND e.event_id = c.event_id
        UNION ALL
        SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), endpoint.webhook_id, endpoint.org_id, t.event_id, t.type, 1, endpoint.url,
          endpoint.format, endpoint.secret_sealed, ${retryWindowSeconds * 1000}::int8, t.body_text, t.trace_parent, leased.batch_id,
          endpoint.failing, due.more, due.next_due_in_ms
        FROM taken t, endpoint, leased, due`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeClaimRows),
        Effect.map((rows): Claimed => ({
          // One row even when nothing was claimed: it carries whether more waits and the next due time.
          batch: rows.flatMap((row): Array<ClaimedDelivery> => {
            if (row.deliveryId === null || row.bodyText === null) return []
            const { bodyText, more: _, nextDueInMs: __, ...delivery } = row
            return [{ ...delivery, body: JSON.parse(bodyText) as Readonly<Record<string, unknown>> }]
          }),
          more: rows[0]?.more === true,
          nextDueInMs: rows[0]?.nextDueInMs ?? null
        })),
        Effect.withSpan("Deliveries.claim", HOT_SPAN)
      )

    /**
     * The first attempts of a batch, and the batch's lease ended, in one statement: the delivered ones as one row
     * of `webhook_delivered_batches` (migration 0026), each other one inserted as a pending row of the queue,
     * due after its wait (failed when its endpoint was deleted meanwhile; one not sent counts no attempt). Answers the ids recorded (none when the
     * lease ran out and the batch was rescued: its new owner records its deliveries) and whether the endpoint has
     * events past the batch: a claim skipped them while the batch was out, so nothing else may be coming to
     * claim them before the poll. Arrays, as `delivered`.
     */
    const firstAttempts = (batchId: string, orgId: string, workerId: string, attempts: ReadonlyArray<FirstAttempt>) =>
      attempts.length === 0 ? Effect.succeed({ recorded: new Set<string>(), more: false }) : sql`/* prepared */
        WITH ended AS (
          DELETE FROM webhook_batches b WHERE b.org_id = ${orgId} AND b.batch_id = ${batchId} AND b.locked_by = ${workerId}
          RETURNING b.webhook_id),
        endpoint AS (
          SELECT w.webhook_id, w.org_id, w.deleted_at,
            w.claimed_through < w.queued_through AND w.disabled_at IS NULL AND w.deleted_at IS NULL AS more
          FROM ended JOIN webhooks w ON w.org_id = ${orgId} AND w.webhook_id = ended.webhook_id),
        made AS (
          SELECT * FROM unnest(${attempts.map((a) => a.delivery.deliveryId)}::text[], ${attempts.map((a) => a.delivery.eventId)}::text[],
            ${attempts.map((a) => a.delivery.eventType)}::text[], ${attempts.map((a) => a.result !== null)}::bool[],
            ${attempts.map((a) => a.result?.delivered === true)}::bool[],
            ${attempts.map((a) => a.delayMs)}::float8[], ${attempts.map((a) => a.result?.statusCode ?? null)}::int[],
            ${attempts.map((a) => a.result?.durationMs ?? null)}::int[], ${attempts.map((a) => a.result?.error ?? null)}::text[],
            ${attempts.map((a) => a.result?.response ?? null)}::text[])
            AS o (delivery_id, event_id, event_type, attempted, delivered, delay_ms, status_code, duration_ms, error, response)),
        delivered AS (
          INSERT INTO webhook_delivered_batches (batch_id, webhook_id, org_id, delivery_ids, event_ids, event_types, status_codes,
            durations_ms, responses)
          SELECT ${batchId}, e.webhook_id, e.org_id, array_agg(o.delivery_id), array_agg(o.event_id), array_agg(o.event_type),
            array_agg(o.status_code), array_agg(o.duration_ms), array_agg(o.response)
          FROM endpoint e, made o WHERE o.delivered
          GROUP BY e.webhook_id, e.org_id
          RETURNING delivery_ids),
        queued AS (
          INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, status, attempts, run_at, give_up_at,
            last_status_code, last_duration_ms, last_error, last_response, last_attempt_at)
          SELECT o.delivery_id, e.webhook_id, e.org_id, o.event_id, o.event_type, CASE WHEN e.deleted_at IS NOT NULL THEN 'failed' ELSE 'pending' END,
            CASE WHEN o.attempted THEN 1 ELSE 0 END, statement_timestamp() + make_interval(secs => o.delay_ms / 1000.0),
            statement_timestamp() + make_interval(secs => ${retryWindowSeconds}),
            o.status_code, o.duration_ms, o.error, o.response, CASE WHEN o.attempted THEN statement_timestamp() END
          FROM endpoint e, made o WHERE NOT o.delivered
          ON CONFLICT (webhook_id, event_id, org_id) DO NOTHING
          RETURNING delivery_id)
        SELECT recorded.delivery_id, endpoint.more
        FROM (SELECT unnest(delivery_ids) AS delivery_id FROM delivered UNION ALL SELECT delivery_id FROM queued) recorded, endpoint`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeRecordedAttempts),
        Effect.map((rows) => ({ recorded: new Set(rows.map((row) => row.deliveryId)), more: rows[0]?.more === true }))
      )

    const attemptColumns = (result: AttemptResult) =>
      sql`last_status_code = ${result.statusCode}, last_duration_ms = ${result.durationMs}, last_error = ${result.error},
        last_response = ${result.response}, last_attempt_at = statement_timestamp(), locked_by = NULL, lease_until = NULL`

    /**
     * Delivered, in one statement for a batch; answers the ids recorded (one missing is no longer this
     * worker's: its new owner records it). Arrays, not a JSON document: the planner knows from an array how
     * many rows it holds, and finds each by its key instead of scanning a table it takes to be small. Prepared,
     * as the claim is (the arrays are parameters: one text whatever the batch's size).
     */
    const delivered = (workerId: string, orgId: string, outcomes: ReadonlyArray<{ readonly deliveryId: string; readonly result: AttemptResult }>) =>
      outcomes.length === 0 ? Effect.succeed(new Set<string>()) : sql`/* prepared */
        UPDATE webhook_deliveries d SET status = 'delivered', delivered_at = statement_timestamp(), last_status_code = o.status_code,
          last_duration_ms = o.duration_ms, last_error = NULL, last_response = o.response, last_attempt_at = statement_timestamp(),
          locked_by = NULL, lease_until = NULL
        FROM unnest(${outcomes.map((o) => o.deliveryId)}::text[], ${outcomes.map((o) => o.result.statusCode)}::int[],
          ${outcomes.map((o) => o.result.durationMs)}::int[], ${outcomes.map((o) => o.result.response)}::text[])
          AS o (delivery_id, status_code, duration_ms, response)
        WHERE d.org_id = ${orgId} AND d.delivery_id = o.delivery_id AND d.locked_by = ${workerId}
        RETURNING d.delivery_id`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeDeliveryIds),
        Effect.map((rows) => new Set(rows.map((row) => row.deliveryId)))
      )

    /** Not delivered: tried again after `delayMs`. */
    const retryLater = (delivery: ClaimedDelivery, workerId: string, result: AttemptResult, delayMs: number) =>
      sql`UPDATE webhook_deliveries SET run_at = statement_timestamp() + make_interval(secs => ${delayMs / 1000}), ${attemptColumns(result)}
          WHERE org_id = ${delivery.orgId} AND delivery_id = ${delivery.deliveryId} AND locked_by = ${workerId} RETURNING delivery_id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /**
     * Not delivered within the retry window: the delivery fails and its endpoint is disabled until an admin
     * enables it (docs/contract.md 6: disabled after repeated failure), in one transaction.
     */
    const giveUp = (delivery: ClaimedDelivery, workerId: string, result: AttemptResult) =>
      sql.withTransaction(Effect.gen(function*() {
        const failed = yield* sql`UPDATE webhook_deliveries SET status = 'failed', ${attemptColumns(result)}
          WHERE org_id = ${delivery.orgId} AND delivery_id = ${delivery.deliveryId} AND locked_by = ${workerId} RETURNING delivery_id`
        if (failed.length === 0) return false
        // Its events not yet claimed become queued deliveries that wait for it, as the ones queued already do.
        yield* sql`
          WITH disabled AS (${
          endpoints.disable(
            delivery.orgId,
            delivery.webhookId,
            `delivery of ${delivery.eventId} kept failing for the whole retry window (last: ${result.error ?? "?"})`
          )
        })
          INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, give_up_at)
          SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), d.webhook_id, e.org_id, e.event_id, e.type,
            statement_timestamp() + make_interval(secs => ${retryWindowSeconds})
          FROM disabled d
          JOIN events e ON e.org_id = ${delivery.orgId} AND e.position > d.after_position AND e.position <= d.through_position AND d.events ? e.type
          ON CONFLICT (webhook_id, event_id, org_id) DO NOTHING`
        return true
      })).pipe(Effect.orDie)

    /**
     * Claimed but not sent (its endpoint backs off, or its group's time ran out): due again after `delayMs`, the
     * claim's count of attempts taken back. Answers the ids recorded, as `delivered`.
     */
    const notAttempted = (workerId: string, orgId: string, deliveryIds: ReadonlyArray<string>, delayMs: number) =>
      deliveryIds.length === 0 ? Effect.succeed(new Set<string>()) : sql`
        UPDATE webhook_deliveries SET attempts = attempts - 1, run_at = statement_timestamp() + make_interval(secs => ${delayMs / 1000}),
          locked_by = NULL, lease_until = NULL
        WHERE org_id = ${orgId} AND delivery_id = ANY(${deliveryIds}::text[]) AND locked_by = ${workerId}
        RETURNING delivery_id`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeDeliveryIds),
        Effect.map((rows) => new Set(rows.map((row) => row.deliveryId)))
      )

    /**
     * An attempt to the endpoint got no answer: it backs off for `baseMs` doubling with each such group in a row,
     * at most `maxMs`, its waiting deliveries due no earlier than that (the delivery log shows the endpoint's next
     * try). Answers the back-off in ms (null: the endpoint is gone).
     */
    const backOff = (orgId: string, webhookId: string, baseMs: number, maxMs: number) =>
      sql`
        WITH tripped AS (${endpoints.backOff(orgId, webhookId, baseMs, maxMs)}),
        pushed AS (
          UPDATE webhook_deliveries d SET run_at = t.backoff_until FROM tripped t
          WHERE d.org_id = ${orgId} AND d.webhook_id = ${webhookId} AND d.status = 'pending' AND d.run_at < t.backoff_until
            AND (d.lease_until IS NULL OR d.lease_until < statement_timestamp()) AND NOT (d.event_type = 'ping' AND d.attempts = 0))
        SELECT (extract(epoch FROM backoff_until - statement_timestamp()) * 1000)::int8 AS backoff_ms FROM tripped`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeBackoff),
        Effect.map((rows) => rows[0] === undefined ? null : Math.max(0, rows[0].backoffMs))
      )

    /** An attempt to an endpoint that was backing off was answered: it is claimed in full again. */
    const recovered = (orgId: string, webhookId: string) =>
      endpointRows.recovered(orgId, webhookId).pipe(
        Effect.asVoid,
        Effect.orDie
      )

    /** The endpoint's group of queued deliveries is recorded: the next may be claimed. */
    const releaseRetries = (orgId: string, webhookId: string, workerId: string) =>
      endpointRows.releaseRetries(orgId, webhookId, workerId).pipe(Effect.asVoid, Effect.orDie)

    return { readyOrgs: readyOrgs(sql), claim, firstAttempts, delivered, retryLater, giveUp, notAttempted, backOff, recovered, releaseRetries } as const
  })
}) {}
