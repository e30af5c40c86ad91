/**
 * OAuth 2.1 for remote MCP clients (docs/contract.md 5.5): registered clients, one-time authorization codes and
 * rotating refresh tokens, each stored by its secret's SHA-256 only. An OAuth grant is one API key of kind
 * `oauth` (its access token is the key's current secret, rotated on refresh); `oauth_client_id` names the
 * client it was issued to.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE api_keys
      ADD COLUMN kind text NOT NULL DEFAULT 'api' CHECK (kind IN ('api', 'oauth')),
      ADD COLUMN oauth_client_id text`
  yield* sql`
    CREATE TABLE oauth_clients (
      client_id text PRIMARY KEY,
      client_name text NOT NULL,
      redirect_uris jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE oauth_codes (
      code_hash text PRIMARY KEY,
      client_id text NOT NULL REFERENCES oauth_clients (client_id),
      org_id text NOT NULL REFERENCES orgs (org_id),
      person_id text NOT NULL REFERENCES people (person_id),
      redirect_uri text NOT NULL,
      code_challenge text NOT NULL,
      resource text NOT NULL,
      scope text NOT NULL CHECK (scope IN ('read', 'write')),
      project_ids jsonb,
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      key_id text REFERENCES api_keys (key_id),
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE oauth_refresh_tokens (
      token_hash text PRIMARY KEY,
      key_id text NOT NULL REFERENCES api_keys (key_id),
      client_id text NOT NULL REFERENCES oauth_clients (client_id),
      resource text NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX oauth_refresh_tokens_key ON oauth_refresh_tokens (key_id)`
  yield* sql`CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at)`
})
