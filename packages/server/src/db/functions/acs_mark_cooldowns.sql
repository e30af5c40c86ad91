-- Trigger on actions: an action that is approved (auto-applied, approved by people, a changeset's member) or applied
-- (an outside change is inserted applied) marks each of its cooldown keys (acs_cooldown_keys) with the time, so a
-- raise finds the latest change of its family on its entities, pending or applied, with one index lookup per key
-- (acs_recent_change). Append-only: no row is shared, so concurrent writers never wait on each other here.
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_mark_cooldowns()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      INSERT INTO cooldown_marks (project_id, cooldown_key, marked_at, action_id, kind)
      SELECT NEW.project_id, key, COALESCE(NEW.applied_at, clock_timestamp()), NEW.action_id, NEW.kind
      FROM unnest(NEW.cooldown_keys) AS key;
      RETURN NULL;
    END $function$
