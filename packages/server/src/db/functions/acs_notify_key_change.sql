-- Trigger on api_keys: drops the key from every instance's lookup cache (db/Invalidation.ts).
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_notify_key_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      PERFORM pg_notify('acs_invalidate', 'k:' || OLD.secret_hash);
      RETURN NULL;
    END $function$
