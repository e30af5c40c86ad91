/**
 * The apply path's updates of `actions` as heap-only tuple (HOT) updates (docs/decisions/database.md). PostgreSQL treats every
 * column an index names, its predicate's included, as indexed: `actions_pending`'s `WHERE status = 'proposed'`
 * made every status change (approved → applying → applied, two per auto-applied proposal) insert a new entry
 * into each of the table's seven indexes. The queue's index now names `pending`, a stored generated column
 * true exactly while the action is proposed: PostgreSQL derives it from `status` on every write, so no writer
 * can break it, and an apply's changes leave it false (unchanged), so no index sees them. Queue reads say
 * `pending` (the planner cannot prove it from `status = 'proposed'`).
 *
 * A HOT update also needs room on the row's page; at fillfactor 100 new rows fill the last page, and 1 to 5 %
 * of apply updates found none (measured with one and eight clients). New pages keep 10 % free, room for one more
 * version of a row of about 600 bytes until pruning reclaims the dead ones; existing pages stay as they are (their
 * rows rarely change). Adding a stored column rewrites the table once (about 20 s at 1,000,000 rows on a busy
 * two-core machine).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE actions ADD COLUMN pending boolean NOT NULL GENERATED ALWAYS AS (status = 'proposed') STORED`
  yield* sql`DROP INDEX actions_pending`
  yield* sql`CREATE INDEX actions_pending ON actions (project_id, created_at) WHERE pending`
  // After the rewrite, so only new pages keep the room.
  yield* sql`ALTER TABLE actions SET (fillfactor = 90)`
})
