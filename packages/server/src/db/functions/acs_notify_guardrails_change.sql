-- Trigger on guardrails: drops the account's guardrails from every instance's lookup cache (db/Invalidation.ts).
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_notify_guardrails_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      -- An insert matters too: an account without a row is cached with the defaults.
      PERFORM pg_notify('acs_invalidate', 'g:' || COALESCE(NEW.project_id, OLD.project_id));
      RETURN NULL;
    END $function$
