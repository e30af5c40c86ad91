/**
 * Guardrails (docs/contract.md 3.3, docs/decisions/guardrails.md): an account's money and pace limits.
 *
 * - `guardrails`: one row per account an admin configured or whose circuit breaker opened (policy/Guardrails.ts
 *   owns it); `settings` null means the defaults. Its trigger drops the account's entry from every instance's
 *   lookup cache, as `targets`' does.
 * - `actions.budget_delta_micros`: what the row changes of the sum of the account's daily budgets, generated from
 *   its kind and payload (`acs_budget_delta`), so that every way of writing a row prices it alike. A raise
 *   reserves its delta while the row is proposed, approved or applying (a demoted row once approved again:
 *   `reserving`); an applied row's delta is used for 24 hours from `budget_applied_at`. Both sums have a partial
 *   index, read under the account's lock by `acs_lock_account_window` (now with the proposal's raise) through
 *   `acs_account_envelope`.
 * - `actions.approvals`: who approved and when (`[{by, at}]`); a high-risk change stays `proposed` after the first
 *   of its two approvals.
 * - `actions.cooldown_keys`: the cooldown families and entities the row changes (`acs_cooldown_keys`), outside
 *   changes included; a raise looks for an applied row sharing a key within its family's cooldown.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { installFunctions } from "../functions/FunctionFiles.ts"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE guardrails (
      project_id text PRIMARY KEY REFERENCES accounts (project_id),
      settings jsonb,
      paused_reason text,
      paused_since timestamptz,
      updated_at timestamptz,
      updated_by text
    )`
  yield* sql`DROP FUNCTION acs_lock_account_window(integer, text)`
  yield* installFunctions(["acs_budget_delta", "acs_cooldown_keys"])
  // The trigger's function, as it was (migration 0041 drops both).
  yield* sql.unsafe(`CREATE OR REPLACE FUNCTION public.acs_notify_guardrails_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      -- An insert matters too: an account without a row is cached with the defaults.
      PERFORM pg_notify('acs_invalidate', 'g:' || COALESCE(NEW.project_id, OLD.project_id));
      RETURN NULL;
    END $function$`)
  yield* sql`
    CREATE TRIGGER guardrails_invalidate AFTER INSERT OR UPDATE OR DELETE ON guardrails FOR EACH ROW
    EXECUTE FUNCTION acs_notify_guardrails_change()`
  // Indexed columns that an apply's updates leave unchanged on every row but a budget raise's, so the apply path's
  // status changes stay HOT updates (migration 0024): no index names `status` or `applied_at` themselves.
  yield* sql`
    ALTER TABLE actions ADD COLUMN budget_delta_micros numeric NOT NULL
      GENERATED ALWAYS AS (acs_budget_delta(kind, payload)) STORED,
    ADD COLUMN reserving boolean NOT NULL GENERATED ALWAYS AS (
      acs_budget_delta(kind, payload) > 0 AND status IN ('proposed', 'approved', 'applying')
        AND (status <> 'proposed' OR queued_at IS NULL)) STORED,
    ADD COLUMN budget_applied_at timestamptz
      GENERATED ALWAYS AS (CASE WHEN acs_budget_delta(kind, payload) <> 0 THEN applied_at END) STORED,
    ADD COLUMN cooldown_keys text[] NOT NULL GENERATED ALWAYS AS (acs_cooldown_keys(kind, payload)) STORED,
    ADD COLUMN approvals jsonb NOT NULL DEFAULT '[]'`
  yield* sql`CREATE INDEX actions_budget_reserving ON actions (project_id) WHERE reserving`
  yield* sql`CREATE INDEX actions_budget_applied ON actions (project_id, budget_applied_at) WHERE budget_applied_at IS NOT NULL`
  yield* sql`CREATE INDEX actions_cooldown_keys ON actions USING gin (cooldown_keys) WHERE cardinality(cooldown_keys) > 0`
  yield* installFunctions(["acs_account_envelope", "acs_lock_account_window"])
})
