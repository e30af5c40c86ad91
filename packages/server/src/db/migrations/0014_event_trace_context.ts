/**
 * The trace context a webhook delivery links back to (docs/decisions/operations.md): `events.trace_parent` is the W3C
 * traceparent of the span that wrote the event (the request or the apply whose change it describes). Null
 * when unknown (events from before this migration).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE events ADD COLUMN trace_parent text`
})
