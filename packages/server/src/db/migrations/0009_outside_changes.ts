/**
 * Outside changes in the ledger (docs/contract.md 4.2): `external_change` rows carry the platform's change-history
 * detail id, unique per account, so the same outside change read twice (two polls, two instances) is one
 * row; an applied acs action names the outside change that overwrote it; each account remembers how far
 * its change history was read. Existing rows stay valid: both new columns are null on them.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE actions ADD COLUMN upstream_ref text`
  yield* sql`ALTER TABLE actions ADD COLUMN superseded_by text REFERENCES actions (action_id)`
  yield* sql`CREATE UNIQUE INDEX actions_upstream_ref ON actions (project_id, upstream_ref) WHERE upstream_ref IS NOT NULL`
  yield* sql`
    CREATE TABLE change_history_marks (
      project_id text PRIMARY KEY REFERENCES accounts (project_id),
      org_id text NOT NULL REFERENCES orgs (org_id),
      marked_at timestamptz NOT NULL,
      polled_at timestamptz NOT NULL
    )`
})
