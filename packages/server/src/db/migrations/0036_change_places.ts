/**
 * Where each applied change happened, as place keys (guard/ChangePlaces.ts): the confounders' side of the guard's
 * review, read from a change's payload once instead of in every review batch, with what a confounder shows (its kind,
 * summary and what it reverted), so a watch's confounders are one index scan.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE change_places (
      project_id text NOT NULL REFERENCES accounts (project_id),
      action_id text NOT NULL,
      place text NOT NULL,
      applied_at timestamptz NOT NULL,
      kind text NOT NULL,
      summary text NOT NULL,
      revert_of text,
      PRIMARY KEY (project_id, action_id, place)
    )`
  yield* sql`CREATE INDEX change_places_by_place ON change_places (project_id, place, applied_at)`
})
