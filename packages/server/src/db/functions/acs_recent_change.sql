-- The latest change of the account sharing a cooldown key with `keys` (acs_cooldown_keys) within `hours`: applied,
-- or approved and on its way (`applied` false), so two raises are never both let through before the first lands.
-- A mark whose action ended without applying (failed, demoted) does not count. Volatile: called after the account's
-- lock in the proposal statement, it reads with a snapshot of its own, taken after the lock.
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_recent_change(account text, keys text[], hours integer)
 RETURNS TABLE(action_id text, kind text, marked_at timestamp with time zone, applied boolean)
 LANGUAGE plpgsql
 ROWS 1
AS $function$
    DECLARE
      key text;
      latest record;
    BEGIN
      -- One query per key, not one over unnest(keys): its plan is kept (see acs_account_envelope).
      FOREACH key IN ARRAY keys LOOP
        SELECT m.action_id, m.kind, m.marked_at, a.applied_at IS NOT NULL AS applied INTO latest
        FROM cooldown_marks m JOIN actions a ON a.project_id = m.project_id AND a.action_id = m.action_id
        WHERE m.project_id = account AND m.cooldown_key = key
          AND m.marked_at > clock_timestamp() - make_interval(hours => hours)
          AND (a.applied_at IS NOT NULL OR a.status IN ('approved', 'applying'))
        ORDER BY m.marked_at DESC LIMIT 1;
        IF latest.action_id IS NOT NULL AND (marked_at IS NULL OR latest.marked_at > marked_at) THEN
          action_id := latest.action_id;
          kind := latest.kind;
          marked_at := latest.marked_at;
          applied := latest.applied;
        END IF;
      END LOOP;
      IF action_id IS NOT NULL THEN
        RETURN NEXT;
      END IF;
    END $function$
