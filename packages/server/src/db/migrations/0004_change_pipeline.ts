/**
 * The change pipeline: the append-only action ledger, idempotency keys, the apply job queue, the recorded
 * apply steps, and the operator's CPA target band per account.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // `created_at` is strictly increasing per account (taken under the account's proposal lock), so the ledger
  // cursor `before` (microseconds) never skips or repeats a row. Rows are never deleted.
  yield* sql`
    CREATE TABLE actions (
      action_id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (org_id),
      project_id text NOT NULL REFERENCES accounts (project_id),
      kind text NOT NULL,
      mode text CHECK (mode IN ('auto_applied', 'queued')),
      status text NOT NULL
        CHECK (status IN ('proposed', 'approved', 'applying', 'applied', 'failed', 'rejected', 'reverted')),
      risk_tier text NOT NULL CHECK (risk_tier IN ('safe', 'review', 'high')),
      policy_reasons jsonb NOT NULL DEFAULT '[]',
      summary text NOT NULL,
      reason text NOT NULL,
      payload jsonb NOT NULL,
      result jsonb,
      warnings jsonb,
      failure jsonb,
      proposed_by jsonb NOT NULL,
      decided_by jsonb,
      decision_reason text,
      decided_at timestamptz,
      applied_at timestamptz,
      revert_of text REFERENCES actions (action_id),
      reverted_by text REFERENCES actions (action_id),
      counts_toward_cap boolean NOT NULL DEFAULT false,
      apply_run int NOT NULL DEFAULT 1,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      UNIQUE (project_id, created_at)
    )`
  yield* sql`CREATE INDEX actions_ledger ON actions (project_id, created_at DESC, action_id DESC)`
  yield* sql`CREATE INDEX actions_pending ON actions (project_id, created_at) WHERE status = 'proposed'`
  yield* sql`CREATE INDEX actions_auto_window ON actions (project_id, created_at) WHERE counts_toward_cap`
  // One stored answer per (principal, key) for 24 hours; the row is inserted first in the proposal
  // transaction, so a concurrent twin blocks on it and replays once the first commits.
  yield* sql`
    CREATE TABLE idempotency_keys (
      principal text NOT NULL,
      idempotency_key text NOT NULL,
      request_hash text NOT NULL,
      status int NOT NULL DEFAULT 0,
      response jsonb,
      action_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (principal, idempotency_key)
    )`
  yield* sql`CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at)`
  // One apply job per approved action; a claim holds a lease that heartbeats extend; an expired lease is
  // claimable again (the rescue of a crashed instance's job).
  yield* sql`
    CREATE TABLE jobs (
      job_id text PRIMARY KEY,
      action_id text NOT NULL REFERENCES actions (action_id),
      project_id text NOT NULL,
      run_at timestamptz NOT NULL DEFAULT now(),
      attempts int NOT NULL DEFAULT 0,
      locked_by text,
      lease_until timestamptz,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX jobs_one_per_action ON jobs (action_id)`
  yield* sql`CREATE INDEX jobs_due ON jobs (run_at)`
  // Every upstream step of an apply, written before and after its call; `run` counts the action's approvals
  // (a demoted action approved again starts a fresh run).
  yield* sql`
    CREATE TABLE action_steps (
      action_id text NOT NULL REFERENCES actions (action_id),
      run int NOT NULL,
      phase text NOT NULL CHECK (phase IN ('apply', 'rollback')),
      step int NOT NULL,
      name text NOT NULL,
      status text NOT NULL CHECK (status IN ('started', 'succeeded', 'failed')),
      output jsonb,
      error text,
      started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      finished_at timestamptz,
      PRIMARY KEY (action_id, run, phase, step)
    )`
  yield* sql`
    CREATE TABLE targets (
      project_id text PRIMARY KEY REFERENCES accounts (project_id),
      cpa_band jsonb,
      campaigns jsonb NOT NULL DEFAULT '{}',
      updated_at timestamptz NOT NULL DEFAULT now(),
      updated_by text
    )`
})
