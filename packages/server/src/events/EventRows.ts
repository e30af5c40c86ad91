/** An `events` row as readers select it, and the event body (docs/contract.md 6) made from it. */
import { type Event, EventType } from "@acs/domain/Events"
import type { SqlClient } from "@effect/sql"
import { Schema } from "effect"
import { columnsOf, decodeRows } from "../db/Rows.ts"

/** The columns read as they are. */
const EventColumns = Schema.Struct({
  position: Schema.String,
  eventId: Schema.String,
  type: EventType,
  orgId: Schema.String,
  projectId: Schema.NullOr(Schema.String)
})

export const EventRow = Schema.Struct({
  ...EventColumns.fields,
  /** As text: the SQL client would rename the keys of a JSON value it decodes (`created_at` of an action). */
  dataText: Schema.String,
  /** ISO 8601 with milliseconds. */
  createdAtIso: Schema.String
})
export type EventRow = typeof EventRow.Type

export const decodeEvents = decodeRows(EventRow)

const plainColumns = columnsOf(EventColumns, "e")

/** The select list of an event (alias `e`): `EventRow`'s fields, the data as text and the time as ISO 8601. */
export const eventColumns = (sql: SqlClient.SqlClient) =>
  sql`${sql.unsafe(plainColumns)}, e.data::text AS data_text,
    to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at_iso`

export const toEvent = (row: EventRow): Event => ({
  eventId: row.eventId,
  type: row.type,
  createdAt: row.createdAtIso,
  orgId: row.orgId,
  projectId: row.projectId,
  data: JSON.parse(row.dataText) as Readonly<Record<string, unknown>>
})
