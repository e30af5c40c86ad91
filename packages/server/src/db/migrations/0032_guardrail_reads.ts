/**
 * What a proposal reads for its guardrails, made cheap and exact (docs/decisions/pipeline.md "Set-returning
 * functions declare their rows", docs/decisions/guardrails.md "A cooldown counts the change on its way"):
 *
 * - `acs_lock_account_window` and `acs_account_envelope` answer one row and say so (`ROWS 1`). At the default of
 *   1,000 rows the proposal statement was estimated at a million, past `jit_above_cost`: each proposal paid about
 *   580 ms of JIT compilation.
 * - A raise that queues anyway reads only the ceiling's numbers, and those only when the account has a ceiling
 *   (`may_auto_apply`, `whole`).
 * - `acs_account_envelope`, `acs_budget_delta` and `acs_cooldown_keys` become PL/pgSQL, whose plans are kept per
 *   connection: as SQL functions, each call was planned again (the last two at every insert and update of an
 *   action, for its generated columns).
 * - Cooldown marks: `cooldown_marks` holds one row per cooldown key (`actions.cooldown_keys`) of each action when it
 *   is approved and when it is applied (an outside change is inserted applied), written by the trigger
 *   `acs_mark_cooldowns`. `acs_recent_change` reads the latest mark of each key of a raise whose action is on its way
 *   or applied, and the proposal statement reads it after the account's lock (`acs_lock_account_window`), so two
 *   raises of one entity are never both let through. The marks replace the GIN index over `actions.cooldown_keys`,
 *   which every budget and bid proposal paid for at insert, whose pending list each lookup scanned, and which found
 *   every change an entity ever had before filtering by time.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { installFunctions } from "../functions/FunctionFiles.ts"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE cooldown_marks (
      project_id text NOT NULL,
      cooldown_key text NOT NULL,
      marked_at timestamptz NOT NULL,
      action_id text NOT NULL,
      kind text NOT NULL
    )`
  yield* sql`CREATE INDEX cooldown_marks_latest ON cooldown_marks (project_id, cooldown_key, marked_at DESC)`
  yield* sql`
    INSERT INTO cooldown_marks (project_id, cooldown_key, marked_at, action_id, kind)
    SELECT a.project_id, key, COALESCE(a.applied_at, a.decided_at, a.created_at), a.action_id, a.kind
    FROM actions a, unnest(a.cooldown_keys) AS key
    WHERE cardinality(a.cooldown_keys) > 0 AND (a.applied_at IS NOT NULL OR a.status IN ('approved', 'applying'))`
  // A database migrated before this one has the old signatures (a fresh one got the new from 0031's install).
  yield* sql`DROP FUNCTION IF EXISTS acs_lock_account_window(integer, text, numeric)`
  yield* sql`DROP FUNCTION IF EXISTS acs_account_envelope(text)`
  yield* installFunctions([
    "acs_account_envelope",
    "acs_budget_delta",
    "acs_cooldown_keys",
    "acs_recent_change",
    "acs_lock_account_window"
  ])
  // The triggers' function, as it was (migration 0041 drops them: the statements mark instead).
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION public.acs_mark_cooldowns()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      INSERT INTO cooldown_marks (project_id, cooldown_key, marked_at, action_id, kind)
      SELECT NEW.project_id, key, COALESCE(NEW.applied_at, clock_timestamp()), NEW.action_id, NEW.kind
      FROM unnest(NEW.cooldown_keys) AS key;
      RETURN NULL;
    END $function$`)
  yield* sql`
    CREATE TRIGGER actions_cooldown_marks_inserted AFTER INSERT ON actions FOR EACH ROW
    WHEN (cardinality(NEW.cooldown_keys) > 0 AND (NEW.applied_at IS NOT NULL OR NEW.status IN ('approved', 'applying')))
    EXECUTE FUNCTION acs_mark_cooldowns()`
  yield* sql`
    CREATE TRIGGER actions_cooldown_marks_changed AFTER UPDATE ON actions FOR EACH ROW
    WHEN (cardinality(NEW.cooldown_keys) > 0 AND (
      (OLD.applied_at IS NULL AND NEW.applied_at IS NOT NULL)
      OR (OLD.status NOT IN ('approved', 'applying') AND NEW.status IN ('approved', 'applying'))))
    EXECUTE FUNCTION acs_mark_cooldowns()`
  yield* sql`DROP INDEX actions_cooldown_keys`
})
