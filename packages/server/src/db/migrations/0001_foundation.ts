/** Orgs, people and sessions, API keys, accounts and the upstream connection. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE orgs (
      org_id text PRIMARY KEY,
      name text NOT NULL,
      platform_auto_apply boolean NOT NULL DEFAULT true,
      settings_updated_at timestamptz,
      settings_updated_by text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE people (
      person_id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (org_id),
      email text NOT NULL,
      name text NOT NULL,
      role text NOT NULL CHECK (role IN ('viewer', 'editor', 'approver', 'admin')),
      password_hash text NOT NULL,
      disabled_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX people_email ON people (lower(email))`
  yield* sql`
    CREATE TABLE sessions (
      token_hash text PRIMARY KEY,
      person_id text NOT NULL REFERENCES people (person_id),
      org_id text NOT NULL REFERENCES orgs (org_id),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      ended_at timestamptz
    )`
  yield* sql`
    CREATE TABLE accounts (
      project_id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (org_id),
      upstream_account_id text NOT NULL,
      name text NOT NULL,
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'disconnected')),
      currency text NOT NULL,
      time_zone text NOT NULL,
      read_only boolean NOT NULL DEFAULT false,
      last_synced_at timestamptz,
      first_synced_day date,
      last_synced_day date,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (org_id, upstream_account_id)
    )`
  yield* sql`
    CREATE TABLE api_keys (
      key_id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (org_id),
      name text NOT NULL,
      secret_hash text NOT NULL UNIQUE,
      scope text NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
      can_approve boolean NOT NULL DEFAULT false,
      binding_kind text NOT NULL CHECK (binding_kind IN ('org', 'subset', 'account')),
      project_ids jsonb NOT NULL DEFAULT '[]',
      expires_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      created_by text,
      last_used_at timestamptz,
      revoked_at timestamptz
    )`
  yield* sql`CREATE INDEX api_keys_org ON api_keys (org_id, created_at DESC)`
  yield* sql`
    CREATE TABLE connections (
      org_id text PRIMARY KEY REFERENCES orgs (org_id),
      provider text NOT NULL CHECK (provider IN ('apple', 'simulator')),
      credentials_encrypted text,
      upstream_org_id text,
      status text NOT NULL CHECK (status IN ('ok', 'error')),
      error text,
      checked_at timestamptz,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})
