-- The proposal's account lock: takes it, and answers what the proposal's decision reads after it, each read with a
-- snapshot taken after the lock: the 24-hour auto-apply count and the next ledger time; for a proposal that raises
-- daily budgets (`raise` > 0), the account's envelope (acs_account_envelope: whole for a raise that may auto-apply,
-- `may_auto_apply`, else what the ceiling needs); for a change that raises spend, the latest change on its way or
-- applied sharing one of its `cooldown_keys` within `cooldown_hours` (acs_recent_change), null when none.
-- The count: actions that auto-applied alone, by their time, and the members of auto-applied changesets, by the
-- changeset's decision.
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_lock_account_window(lock_namespace integer, account text, raise numeric DEFAULT 0, may_auto_apply boolean DEFAULT true, cooldown_keys text[] DEFAULT '{}'::text[], cooldown_hours integer DEFAULT 0)
 RETURNS TABLE(used bigint, next_created_at timestamp with time zone, budget_used numeric, budget_reserved numeric, budget_committed numeric, budget_total numeric, max_increase numeric, max_total numeric, earlier_action_id text, earlier_kind text, earlier_at timestamp with time zone, earlier_applied boolean)
 LANGUAGE plpgsql
 ROWS 1
AS $function$
    DECLARE
      counted bigint;
      next_at timestamp with time zone;
      envelope record;
      earlier record;
    BEGIN
      PERFORM pg_advisory_xact_lock(lock_namespace, hashtext(account));
      SELECT
        (SELECT count(*) FROM actions a
          WHERE a.project_id = account AND a.counts_toward_cap AND a.created_at > clock_timestamp() - interval '24 hours')
        + (SELECT COALESCE(sum(c.counted_members), 0) FROM changesets c
          WHERE c.project_id = account AND c.counted_members > 0 AND c.decided_at > clock_timestamp() - interval '24 hours'),
        GREATEST(clock_timestamp(),
          (SELECT max(a.created_at) + interval '1 microsecond' FROM actions a WHERE a.project_id = account))
      INTO counted, next_at;
      SELECT e.* INTO envelope FROM acs_account_envelope(account, may_auto_apply) e WHERE raise > 0;
      SELECT r.* INTO earlier FROM acs_recent_change(account, cooldown_keys, cooldown_hours) r WHERE cooldown_hours > 0;
      RETURN QUERY SELECT counted, next_at, envelope.used, envelope.reserved, envelope.committed, envelope.total,
        envelope.max_increase, envelope.max_total, earlier.action_id, earlier.kind, earlier.marked_at, earlier.applied;
    END $function$
