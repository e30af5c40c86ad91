/**
 * `acs_event_body(events)` dropped: the statements build an event's body from its columns (events/Outbox.ts
 * `eventBody`). A function of a table's row type breaks on Citus, which renames the table the type names when it
 * distributes it (docs/scale.md).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP FUNCTION IF EXISTS acs_event_body(events)`
})
