/**
 * A person's session joins the lookup caches (docs/decisions/database.md): the session cookie was looked up with a statement on
 * every request. The cached entry is the session joined with its person, so it changes with either row, and
 * both tables' triggers NOTIFY `acs_invalidate` on any update or delete, whoever makes it (sign-out, a password
 * change, an admin, an operator on the database), as 0012's do for keys.
 *
 * A session's change names the session (`s:<token hash>`). A person's change drops every cached session
 * (`s:*`): naming only their sessions would need the trigger to list them, and a session its snapshot cannot
 * see yet (a sign-in committing meanwhile) could be cached by another instance with the person as it was. People
 * change rarely (a role, a disabling, a password), so the cost is one reload per active session. A new session
 * needs no notification: the cache stores only sessions found.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE FUNCTION acs_notify_session_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('acs_invalidate', 's:' || OLD.token_hash);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER sessions_invalidate AFTER UPDATE OR DELETE ON sessions FOR EACH ROW
    EXECUTE FUNCTION acs_notify_session_change()`
  yield* sql`
    CREATE FUNCTION acs_notify_person_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('acs_invalidate', 's:*');
      RETURN NULL;
    END $$`
  // Per row, not per statement: an update that changes no row notifies nobody (a transaction's repeats of one
  // notification are sent once).
  yield* sql`
    CREATE TRIGGER people_invalidate AFTER UPDATE OR DELETE ON people FOR EACH ROW
    EXECUTE FUNCTION acs_notify_person_change()`
})
