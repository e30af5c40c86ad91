-- The proposal's account lock: takes it, and answers the 24-hour auto-apply count and the next ledger time.
-- The count: actions that auto-applied alone, by their time, and the members of auto-applied changesets, by the
-- changeset's decision.
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_lock_account_window(lock_namespace integer, account text)
 RETURNS TABLE(used bigint, next_created_at timestamp with time zone)
 LANGUAGE plpgsql
AS $function$
    BEGIN
      PERFORM pg_advisory_xact_lock(lock_namespace, hashtext(account));
      RETURN QUERY SELECT
        (SELECT count(*) FROM actions a
          WHERE a.project_id = account AND a.counts_toward_cap AND a.created_at > clock_timestamp() - interval '24 hours')
        + (SELECT COALESCE(sum(c.counted_members), 0) FROM changesets c
          WHERE c.project_id = account AND c.counted_members > 0 AND c.decided_at > clock_timestamp() - interval '24 hours'),
        GREATEST(clock_timestamp(),
          (SELECT max(a.created_at) + interval '1 microsecond' FROM actions a WHERE a.project_id = account));
    END $function$
