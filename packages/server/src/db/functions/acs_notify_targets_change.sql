-- Trigger on targets: drops the account's target band from every instance's lookup cache (db/Invalidation.ts).
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_notify_targets_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      -- An insert matters too: an account without a band is cached as such.
      IF TG_OP <> 'INSERT' THEN PERFORM pg_notify('acs_invalidate', 't:' || OLD.project_id); END IF;
      IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.project_id <> OLD.project_id) THEN
        PERFORM pg_notify('acs_invalidate', 't:' || NEW.project_id);
      END IF;
      RETURN NULL;
    END $function$
