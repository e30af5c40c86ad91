/**
 * The guard's watches (docs/contract.md 3.4): one row per applied change it judges, keyed by the action (or by the
 * changeset whose members it judges together). `baseline` and the scope (level, entity ids, their campaigns and ad
 * groups) are taken once, at the first sync after the apply; `record` is the watch as the action record shows it.
 * `accounts.watched_since`: only changes applied after the guard began watching the account are watched, so an
 * upgrade does not judge (and propose to undo) months of history at once.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE watches (
      project_id text NOT NULL REFERENCES accounts (project_id),
      watch_id text NOT NULL,
      action_ids text[] NOT NULL,
      changeset_id text,
      level text NOT NULL CHECK (level IN ('campaigns', 'adGroups', 'keywords')),
      entity_keys text[] NOT NULL,
      campaign_ids text[] NOT NULL,
      ad_group_ids text[] NOT NULL,
      applied_day date NOT NULL,
      baseline jsonb NOT NULL,
      reviews_done int NOT NULL DEFAULT 0,
      next_review_day date,
      verdict text NOT NULL DEFAULT 'pending' CHECK (verdict IN ('pending', 'passed', 'failed', 'inconclusive')),
      record jsonb NOT NULL,
      revert_action_id text,
      revert_pending boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, watch_id)
    )`
  yield* sql`CREATE INDEX watches_due ON watches (project_id, next_review_day) WHERE next_review_day IS NOT NULL`
  yield* sql`CREATE INDEX watches_revert_pending ON watches (project_id) WHERE revert_pending`
  yield* sql`CREATE INDEX watches_verdict ON watches (project_id, verdict)`
  yield* sql`ALTER TABLE accounts ADD COLUMN watched_since timestamptz NOT NULL DEFAULT now()`
})
