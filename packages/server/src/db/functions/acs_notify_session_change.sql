-- Trigger on sessions: drops the session from every instance's lookup cache (db/Invalidation.ts).
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_notify_session_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      PERFORM pg_notify('acs_invalidate', 's:' || OLD.token_hash);
      RETURN NULL;
    END $function$
