/**
 * The org's settings and an account's target band join the lookup caches (docs/decisions/database.md): the proposal path
 * reads both on every proposal. Their triggers NOTIFY `acs_invalidate` on any change, whoever makes it (the
 * API, or an operator flipping the kill switch on the database), as 0012's do for keys and accounts.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE FUNCTION acs_notify_org_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('acs_invalidate', 'o:' || OLD.org_id);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER orgs_invalidate AFTER UPDATE OR DELETE ON orgs FOR EACH ROW
    EXECUTE FUNCTION acs_notify_org_change()`
  yield* sql`
    CREATE FUNCTION acs_notify_targets_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      -- An insert matters too: an account without a band is cached as such.
      IF TG_OP <> 'INSERT' THEN PERFORM pg_notify('acs_invalidate', 't:' || OLD.project_id); END IF;
      IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.project_id <> OLD.project_id) THEN
        PERFORM pg_notify('acs_invalidate', 't:' || NEW.project_id);
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER targets_invalidate AFTER INSERT OR UPDATE OR DELETE ON targets FOR EACH ROW
    EXECUTE FUNCTION acs_notify_targets_change()`
})
