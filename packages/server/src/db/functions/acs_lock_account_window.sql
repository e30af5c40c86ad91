-- The proposal's account lock: takes it, and answers the 24-hour auto-apply count and the next ledger time; for a
-- proposal that raises daily budgets (`raise` > 0), the account's envelope too (acs_account_envelope), read after
-- the lock like the count.
-- The count: actions that auto-applied alone, by their time, and the members of auto-applied changesets, by the
-- changeset's decision.
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_lock_account_window(lock_namespace integer, account text, raise numeric DEFAULT 0)
 RETURNS TABLE(used bigint, next_created_at timestamp with time zone, budget_used numeric, budget_reserved numeric, budget_committed numeric, budget_total numeric, max_increase numeric, max_total numeric)
 LANGUAGE plpgsql
 ROWS 1
AS $function$
    DECLARE
      counted bigint;
      next_at timestamp with time zone;
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
      IF raise > 0 THEN
        RETURN QUERY SELECT counted, next_at, e.used, e.reserved, e.committed, e.total, e.max_increase, e.max_total
          FROM acs_account_envelope(account) e;
      ELSE
        RETURN QUERY SELECT counted, next_at, NULL::numeric, NULL::numeric, NULL::numeric, NULL::numeric, NULL::numeric,
          NULL::numeric;
      END IF;
    END $function$
