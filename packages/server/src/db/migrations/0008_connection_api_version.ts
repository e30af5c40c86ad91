/**
 * Apple Ads Platform API v1 (docs/decisions/upstream.md): each connection says which API it speaks. Connections saved
 * before this spoke v5 and keep doing so until an admin moves them; new ones default to v1. The key pair
 * acs generates for an org's Apple Ads API client is kept here, its private half sealed like credentials.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE connections ADD COLUMN api_version text NOT NULL DEFAULT 'v5' CHECK (api_version IN ('v1', 'v5'))`
  yield* sql`ALTER TABLE connections ALTER COLUMN api_version SET DEFAULT 'v1'`
  yield* sql`
    CREATE TABLE connection_key_pairs (
      org_id text PRIMARY KEY REFERENCES orgs (org_id),
      private_key_sealed text NOT NULL,
      public_key_pem text NOT NULL,
      fingerprint text NOT NULL,
      created_at timestamptz NOT NULL
    )`
})
