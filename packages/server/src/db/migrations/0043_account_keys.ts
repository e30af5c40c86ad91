/**
 * The change pipeline's tables keyed by their account (docs/decisions/database.md "Every key of an account's row
 * names its account"): `actions`, `changesets`, `jobs` and `action_steps` (and `syncs`, `audits`,
 * `metric_generations`) carry `project_id` in their primary key, unique keys and foreign keys, so a cluster can keep an account's rows on one node and check every key there.
 * The id stays the key's first column, so a lookup by id alone is the same index scan as before. `action_steps`
 * gains its account, copied from its action; the jobs' due index leads with the account, as jobs are claimed per
 * account. Every row is kept.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** The tables rekeyed; the foreign keys between them are dropped whatever their names, and made again with the account. */
const REKEYED = ["actions", "changesets", "jobs", "action_steps"]

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE action_steps ADD COLUMN project_id text`
  yield* sql`UPDATE action_steps s SET project_id = a.project_id FROM actions a WHERE a.action_id = s.action_id`
  yield* sql`ALTER TABLE action_steps ALTER COLUMN project_id SET NOT NULL`

  const constraints = yield* sql<{ table: string; name: string }>`
    SELECT c.conrelid::regclass::text AS table, c.conname AS name FROM pg_constraint c
    WHERE c.contype = 'f' AND c.conrelid::regclass::text = ANY (${REKEYED}::text[])
      AND c.confrelid::regclass::text = ANY (${REKEYED}::text[])`
  for (const { table, name } of constraints) yield* sql`ALTER TABLE ${sql(table)} DROP CONSTRAINT ${sql(name)}`
  yield* sql`DROP INDEX jobs_one_per_action`
  yield* sql`DROP INDEX jobs_one_per_changeset`
  for (const table of REKEYED) yield* sql`ALTER TABLE ${sql(table)} DROP CONSTRAINT ${sql(`${table}_pkey`)}`

  yield* sql`ALTER TABLE actions ADD PRIMARY KEY (action_id, project_id)`
  yield* sql`ALTER TABLE changesets ADD PRIMARY KEY (changeset_id, project_id)`
  yield* sql`ALTER TABLE jobs ADD PRIMARY KEY (job_id, project_id)`
  yield* sql`ALTER TABLE action_steps ADD PRIMARY KEY (action_id, run, phase, step, project_id)`
  yield* sql`CREATE UNIQUE INDEX jobs_one_per_action ON jobs (action_id, project_id)`
  yield* sql`CREATE UNIQUE INDEX jobs_one_per_changeset ON jobs (changeset_id, project_id) WHERE changeset_id IS NOT NULL`
  // The other account-scoped tables whose keys lacked it.
  yield* sql`ALTER TABLE syncs DROP CONSTRAINT syncs_pkey, ADD PRIMARY KEY (sync_id, project_id)`
  yield* sql`ALTER TABLE audits DROP CONSTRAINT audits_pkey, ADD PRIMARY KEY (audit_id, project_id)`
  yield* sql`ALTER TABLE metric_generations DROP CONSTRAINT metric_generations_generation_key, ADD UNIQUE (generation, project_id)`
  // Jobs are claimed per account (queue/Jobs.ts).
  yield* sql`DROP INDEX jobs_due`
  yield* sql`CREATE INDEX jobs_due ON jobs (project_id, run_at)`

  const references = [
    ["actions", "superseded_by", "actions"],
    ["actions", "revert_of", "actions"],
    ["actions", "reverted_by", "actions"],
    ["actions", "changeset_id", "changesets"],
    ["changesets", "revert_of", "changesets"],
    ["changesets", "reverted_by", "changesets"],
    ["jobs", "action_id", "actions"],
    ["jobs", "changeset_id", "changesets"],
    ["action_steps", "action_id", "actions"]
  ] as const
  for (const [table, column, target] of references) {
    const id = target === "actions" ? "action_id" : "changeset_id"
    yield* sql`ALTER TABLE ${sql(table)} ADD CONSTRAINT ${sql(`${table}_${column}_fkey`)}
      FOREIGN KEY (${sql(column)}, project_id) REFERENCES ${sql(target)} (${sql(id)}, project_id)`
  }
})
