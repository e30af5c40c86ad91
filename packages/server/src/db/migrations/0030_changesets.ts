/**
 * Changesets (docs/contract.md 4.3, docs/decisions/changesets.md): proposals grouped into one unit.
 *
 * - `changesets`: one row per changeset, its plan, impact and decision frozen by submit (actions/changesets/).
 * - `actions.changeset_id`, `actions.depends_on`: a member is a ledger row naming its changeset, recorded
 *   `proposed` like a queued action; `pending` (the approval queue's column, migration 0024) now leaves members
 *   out: they are decided with their changeset, never one by one. `skipped`: a member whose dependency failed,
 *   or that a stopped apply never reached.
 * - `changesets.counted_members`: an auto-applied changeset's members count in the account's 24-hour window from
 *   its decision (`decided_at`), not from when each was added; `acs_lock_account_window` adds them up.
 * - `jobs.changeset_id`: an approved changeset's apply is one job (its members applied in plan order under its
 *   lease), so `action_id` may be null; a job names exactly one of the two.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { installFunctions } from "../functions/FunctionFiles.ts"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE changesets (
      changeset_id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (org_id),
      project_id text NOT NULL REFERENCES accounts (project_id),
      title text NOT NULL,
      reason text,
      on_failure text NOT NULL CHECK (on_failure IN ('stop', 'continue', 'rollback')),
      status text NOT NULL CHECK (status IN ('open', 'submitted', 'queued', 'approved', 'applying', 'applied',
        'partially_applied', 'failed', 'rejected', 'expired', 'reverted')),
      opened_by jsonb NOT NULL,
      plan_hash text,
      plan jsonb,
      impact jsonb,
      decision jsonb,
      submitted_at timestamptz,
      decided_by jsonb,
      decided_at timestamptz,
      decision_reason text,
      applied_at timestamptz,
      counted_members int NOT NULL DEFAULT 0,
      revert_of text REFERENCES changesets (changeset_id),
      reverted_by text REFERENCES changesets (changeset_id),
      created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`
  yield* sql`CREATE INDEX changesets_by_account ON changesets (project_id, created_at DESC)`
  // The 24-hour auto-apply window's second part (db/functions/acs_lock_account_window.sql).
  yield* sql`CREATE INDEX changesets_auto_window ON changesets (project_id, decided_at) WHERE counted_members > 0`
  // The expiry sweep's walk: changesets still waiting for their decision.
  yield* sql`CREATE INDEX changesets_waiting ON changesets (created_at) WHERE status IN ('open', 'submitted', 'queued')`

  yield* sql`ALTER TABLE actions ADD COLUMN changeset_id text REFERENCES changesets (changeset_id),
    ADD COLUMN depends_on text[] NOT NULL DEFAULT '{}'`
  yield* sql`CREATE INDEX actions_changeset ON actions (changeset_id, created_at) WHERE changeset_id IS NOT NULL`
  yield* sql`ALTER TABLE actions DROP CONSTRAINT actions_status_check`
  yield* sql`ALTER TABLE actions ADD CONSTRAINT actions_status_check
    CHECK (status IN ('proposed', 'approved', 'applying', 'applied', 'failed', 'rejected', 'reverted', 'expired', 'skipped'))`
  // Dropping the column drops its index; both come back with members left out.
  yield* sql`ALTER TABLE actions DROP COLUMN pending`
  yield* sql`ALTER TABLE actions ADD COLUMN pending boolean NOT NULL
    GENERATED ALWAYS AS (status = 'proposed' AND changeset_id IS NULL) STORED`
  yield* sql`CREATE INDEX actions_pending ON actions (project_id, created_at) WHERE pending`

  yield* sql`ALTER TABLE jobs ALTER COLUMN action_id DROP NOT NULL,
    ADD COLUMN changeset_id text REFERENCES changesets (changeset_id),
    ADD CONSTRAINT jobs_one_subject CHECK ((action_id IS NULL) <> (changeset_id IS NULL))`
  yield* sql`CREATE UNIQUE INDEX jobs_one_per_changeset ON jobs (changeset_id) WHERE changeset_id IS NOT NULL`
  yield* installFunctions(["acs_lock_account_window"])
})
