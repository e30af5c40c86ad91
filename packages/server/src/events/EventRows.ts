/** An `events` row as readers select it, and the event body (docs/contract.md 6) made from it. */
import type { Event } from "@acs/domain/Events"
import type { SqlClient } from "@effect/sql"

export interface EventRow {
  readonly position: string
  readonly eventId: string
  readonly type: Event["type"]
  readonly orgId: string
  readonly projectId: string | null
  /** As text: the SQL client would rename the keys of a JSON value it decodes (`created_at` of an action). */
  readonly dataText: string
  readonly createdAtIso: string
}

/** The select list of an event (alias `e`); the time as ISO 8601 with milliseconds. */
export const eventColumns = (sql: SqlClient.SqlClient) =>
  sql`e.position, e.event_id, e.type, e.org_id, e.project_id, e.data::text AS data_text,
    to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at_iso`

export const toEvent = (row: EventRow): Event => ({
  eventId: row.eventId,
  type: row.type,
  createdAt: row.createdAtIso,
  orgId: row.orgId,
  projectId: row.projectId,
  data: JSON.parse(row.dataText) as Readonly<Record<string, unknown>>
})
