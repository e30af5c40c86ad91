/**
 * The sync queue (warehouse/SyncScheduler.ts): each connection names the upstream credential its calls spend
 * (a hash of its API client id, filled when a client is next made from it), and `credential_limits` holds, per
 * credential, until when the platform said its request budget is spent (RateLimit-Reset, Retry-After).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE connections ADD COLUMN credential_key text`
  yield* sql`
    CREATE TABLE credential_limits (
      credential_key text PRIMARY KEY,
      limited_until timestamptz NOT NULL,
      status integer NOT NULL,
      observed_at timestamptz NOT NULL
    )`
})
