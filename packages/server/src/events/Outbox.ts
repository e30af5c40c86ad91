/**
 * The outbox (docs/decisions/events-and-webhooks.md): one `events` row per change, written by the statement that follows the change in
 * the change's own transaction, so an event exists if and only if its change committed. The sequencer of every
 * instance is woken by a statement of its own after the write (`eventsWritten`, db/Wakes.ts): on Citus a
 * notification sent inside a statement on a distributed table would be sent from the worker holding the shard.
 *
 * The functions take the SQL client of the caller: inside `sql.withTransaction` the client's statements run
 * on the transaction's connection, so the event commits or rolls back with the change.
 */
import { ActionRecord } from "@acs/domain/Actions"
import type { EventType } from "@acs/domain/Events"
import type { SqlClient, Statement } from "@effect/sql"
import { Effect, Schema } from "effect"
import { newId } from "../db/Ids.ts"
import type { Wake } from "../db/Wakes.ts"
import { currentTraceparent } from "../telemetry/TraceContext.ts"

/**
 * Notified (payload: the org id) when an event was written: a sequencer should give it its position. Every
 * notification of the events' channels carries a non-empty payload: @effect/sql-pg's `listen` drops a
 * notification whose payload is empty, and the sequencer and the deliveries would then wait for their poll.
 */
export const EVENTS_WRITTEN_CHANNEL = "acs_events_written"

export interface NewEvent {
  readonly orgId: string
  readonly projectId: string | null
  readonly type: EventType
  readonly data: Readonly<Record<string, unknown>>
}

const encodeAction = Schema.encodeSync(ActionRecord)

/** Writes one event in the caller's transaction. */
export const writeEvent = (sql: SqlClient.SqlClient, event: NewEvent): Effect.Effect<void> =>
  // The writer's trace context rides with the event: its webhook deliveries link back to it.
  Effect.flatMap(currentTraceparent, (traceParent) =>
    sql`
    WITH written AS (
      INSERT INTO events (event_id, org_id, project_id, type, data, trace_parent)
      VALUES (${newId("evt")}, ${event.orgId}, ${event.projectId}, ${event.type}, ${JSON.stringify(event.data)}::jsonb, ${traceParent})
      RETURNING seq)
    SELECT pg_notify(${EVENTS_WRITTEN_CHANNEL}, ${event.orgId}) FROM written`).pipe(Effect.asVoid, Effect.orDie, Effect.withSpan("Outbox.write"))

/** Writes many events in the caller's transaction with one statement (a batch of the guard's verdicts). */
export const writeEvents = (sql: SqlClient.SqlClient, events: ReadonlyArray<NewEvent>): Effect.Effect<void> =>
  events.length === 0 ? Effect.void : Effect.flatMap(currentTraceparent, (traceParent) =>
    sql`
    WITH written AS (
      INSERT INTO events (event_id, org_id, project_id, type, data, trace_parent)
      SELECT e.event_id, e.org_id, e.project_id, e.type, e.data, ${traceParent}
      FROM jsonb_to_recordset(${JSON.stringify(events.map((event) => ({
      event_id: newId("evt"),
      org_id: event.orgId,
      project_id: event.projectId,
      type: event.type,
      data: event.data
    })))}::jsonb) AS e(event_id text, org_id text, project_id text, type text, data jsonb)
      RETURNING org_id)
    SELECT pg_notify(${EVENTS_WRITTEN_CHANNEL}, org_id) FROM (SELECT DISTINCT org_id FROM written) orgs`).pipe(Effect.asVoid, Effect.orDie, Effect.withSpan("Outbox.writeMany"))

/**
 * An event as webhooks, the stream and GET /events show it, from the columns of `e` (`events` or rows with its
 * columns): an expression of the statement, not a function of the row (a cluster renames the table a row type names).
 */
export const eventBody = (sql: SqlClient.SqlClient, e: string) =>
  sql.unsafe(`jsonb_build_object('eventId', ${e}.event_id, 'type', ${e}.type,
    'createdAt', to_char(${e}.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'orgId', ${e}.org_id, 'projectId', ${e}.project_id, 'data', ${e}.data)`)

/** An action event: the action as the API shows it (GET …/actions/{actionId}), and what else the type carries. */
export const writeActionEvent = (
  sql: SqlClient.SqlClient,
  orgId: string,
  type: Extract<EventType, `action.${string}`>,
  action: ActionRecord,
  extra: Readonly<Record<string, unknown>> = {}
): Effect.Effect<void> => writeEvent(sql, { orgId, projectId: action.projectId, type, data: { action: encodeAction(action), ...extra } })

/** An ISO 8601 UTC timestamp with microseconds, as ActionRow.ts reads them. */
const isoSql = (sql: SqlClient.SqlClient, column: string) =>
  sql.unsafe(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)

/**
 * An action event as one more CTE of a statement that changes actions: `name AS (${actionEventCte(sql, "changed",
 * type)})`, where `changed` is the CTE whose `RETURNING *` holds the changed rows. It writes one `type` event
 * per row (each row for which `where` holds: a fragment over the row, evaluated with it), with the action as
 * ActionRow.toRecord shows it (events.test.ts compares it with GET …/actions/{actionId}) and `extra` beside it,
 * answering each event's `org_id` (a data-modifying CTE runs whether or not the statement reads it); being part of
 * the statement, it commits exactly when the change does. The event carries `traceParent`, the writer's trace
 * context, or by default the row's own. The statement's caller wakes the sequencers after it (`eventsWritten`).
 */
export const actionEventCte = (
  sql: SqlClient.SqlClient,
  changed: string,
  type: Extract<EventType, `action.${string}`>,
  options: {
    readonly where?: (column: (name: string) => Statement.Fragment) => Statement.Fragment
    readonly extra?: Readonly<Record<string, unknown>>
    /** Beside the action, by key: another column of the changed row (a reverted original: `reverted_by`). */
    readonly extraColumns?: Readonly<Record<string, string>>
    readonly traceParent?: string | null
  } = {}
) => {
  const r = (column: string) => sql.unsafe(`${changed}.${column}`)
  const action = sql`jsonb_build_object('action', jsonb_build_object(
        'actionId', ${r("action_id")}, 'projectId', ${r("project_id")}, 'kind', ${r("kind")}, 'mode', ${r("mode")},
        'status', ${r("status")}, 'riskTier', ${r("risk_tier")}, 'policyReasons', ${r("policy_reasons")},
        'summary', ${r("summary")}, 'reason', ${r("reason")}, 'payload', ${r("payload")}, 'result', ${r("result")},
        'warnings', coalesce(${r("warnings")}, '[]'::jsonb), 'failure', ${r("failure")}, 'proposedBy', ${r("proposed_by")},
        'decidedBy', ${r("decided_by")}, 'decisionReason', ${r("decision_reason")}, 'approvals', ${r("approvals")},
        'created_at', ${isoSql(sql, `${changed}.created_at`)}, 'decidedAt', ${isoSql(sql, `${changed}.decided_at`)},
        'appliedAt', ${isoSql(sql, `${changed}.applied_at`)}, 'revertOf', ${r("revert_of")},
        'revertedBy', ${r("reverted_by")}, 'supersededBy', ${r("superseded_by")}, 'changesetId', ${r("changeset_id")},
        'dependsOn', to_jsonb(${r("depends_on")})))`
  return sql`
    INSERT INTO events (event_id, org_id, project_id, type, trace_parent, data)
    SELECT 'evt_' || replace(gen_random_uuid()::text, '-', ''), ${r("org_id")}, ${r("project_id")}, ${type},
      ${options.traceParent === undefined ? r("trace_parent") : sql`${options.traceParent}`},
      ${action}${options.extra === undefined ? sql`` : sql` || ${JSON.stringify(options.extra)}::jsonb`}${
    options.extraColumns === undefined ? sql`` : sql` || jsonb_build_object(${
      sql.join(", ", false)(Object.entries(options.extraColumns).map(([key, column]) => sql`${key}::text, ${r(column)}`))
    })`
  }
    FROM ${sql.unsafe(changed)}
    WHERE ${options.where?.(r) ?? sql`true`}
    RETURNING org_id`
}

/** The sequencers' wake after a statement whose `actionEventCte` wrote events of `orgId` (db/Wakes.ts). */
export const eventsWritten = (orgId: string): Wake => [EVENTS_WRITTEN_CHANNEL, orgId]

/**
 * `action.proposed` for each row of `recorded` queued for a human (Proposals' one-statement proposal): a row
 * that auto-applies speaks when it applies, a changeset's member with its changeset (`changeset.submitted`).
 */
export const proposedEventCte = (sql: SqlClient.SqlClient, recorded: string) =>
  actionEventCte(sql, recorded, "action.proposed", {
    where: (r) => sql`${r("status")} = 'proposed' AND ${r("changeset_id")} IS NULL`
  })
