/**
 * `acs_lock_account_window` (0012) in PL/pgSQL, same statements, same snapshots. PostgreSQL 15 does not keep
 * the plans of a non-inlined SQL function between calls: every proposal parsed and planned its two statements
 * again (0.31 ms a call against 0.07 ms, measured with pgbench on an empty ledger). PL/pgSQL keeps them per
 * connection. A VOLATILE PL/pgSQL function also takes a fresh snapshot for each statement, so the count read
 * after the lock still includes the proposal that held it before.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE OR REPLACE FUNCTION acs_lock_account_window(lock_namespace int, account text)
    RETURNS TABLE (used bigint, next_created_at timestamptz)
    LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
      PERFORM pg_advisory_xact_lock(lock_namespace, hashtext(account));
      RETURN QUERY SELECT
        (SELECT count(*) FROM actions a
          WHERE a.project_id = account AND a.counts_toward_cap AND a.created_at > clock_timestamp() - interval '24 hours'),
        GREATEST(clock_timestamp(),
          (SELECT max(a.created_at) + interval '1 microsecond' FROM actions a WHERE a.project_id = account));
    END $$`
})
