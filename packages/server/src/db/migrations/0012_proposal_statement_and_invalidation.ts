/**
 * The proposal's locked part as one statement, and the cache invalidation feed (docs/decisions/pipeline.md, docs/decisions/database.md).
 *
 * `acs_lock_account_window` takes the account's proposal lock and then reads the 24-hour auto-apply count
 * and the next `created_at`. It is a VOLATILE function on purpose: in READ COMMITTED each of its statements
 * takes a fresh snapshot, so the count it reads after waiting for the lock includes the proposal that held
 * the lock before (a plain CTE of the proposal's statement would read with the snapshot taken before the
 * wait and miss it). The proposal's single statement calls it and inserts the ledger row and the job.
 *
 * The triggers NOTIFY `acs_invalidate` when a key or an account changes, whoever changes it (the API, the
 * CLI on the database, a sync). A notification is delivered at commit, so every instance drops its cached
 * copy as soon as the change is visible. The minute-resolution `last_used_at` write notifies nobody.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE FUNCTION acs_lock_account_window(lock_namespace int, account text)
    RETURNS TABLE (used bigint, next_created_at timestamptz)
    LANGUAGE sql VOLATILE AS $$
      SELECT pg_advisory_xact_lock(lock_namespace, hashtext(account));
      SELECT
        (SELECT count(*) FROM actions
          WHERE project_id = account AND counts_toward_cap AND created_at > clock_timestamp() - interval '24 hours'),
        GREATEST(clock_timestamp(),
          (SELECT max(created_at) + interval '1 microsecond' FROM actions WHERE project_id = account));
    $$`
  yield* sql`
    CREATE FUNCTION acs_notify_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('acs_invalidate', 'k:' || OLD.secret_hash);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER api_keys_invalidate AFTER UPDATE ON api_keys FOR EACH ROW
    WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
      OR OLD.scope IS DISTINCT FROM NEW.scope OR OLD.can_approve IS DISTINCT FROM NEW.can_approve
      OR OLD.binding_kind IS DISTINCT FROM NEW.binding_kind OR OLD.project_ids IS DISTINCT FROM NEW.project_ids
      OR OLD.org_id IS DISTINCT FROM NEW.org_id OR OLD.name IS DISTINCT FROM NEW.name
      OR OLD.secret_hash IS DISTINCT FROM NEW.secret_hash)
    EXECUTE FUNCTION acs_notify_key_change()`
  yield* sql`
    CREATE TRIGGER api_keys_invalidate_deleted AFTER DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION acs_notify_key_change()`
  yield* sql`
    CREATE FUNCTION acs_notify_account_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('acs_invalidate', 'a:' || OLD.project_id);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER accounts_invalidate AFTER UPDATE OR DELETE ON accounts FOR EACH ROW
    EXECUTE FUNCTION acs_notify_account_change()`
})
