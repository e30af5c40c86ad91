/**
 * Audits (each run kept with its findings, newest first per account) and the operator's brief per account.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE audits (
      audit_id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (org_id),
      project_id text NOT NULL REFERENCES accounts (project_id),
      findings jsonb NOT NULL,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX audits_history ON audits (project_id, created_at DESC)`
  yield* sql`
    CREATE TABLE briefs (
      project_id text PRIMARY KEY REFERENCES accounts (project_id),
      text text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      updated_by text NOT NULL
    )`
})
