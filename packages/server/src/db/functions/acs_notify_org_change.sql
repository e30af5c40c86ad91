-- Trigger on orgs: drops the org's settings from every instance's lookup cache (db/Invalidation.ts).
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_notify_org_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      PERFORM pg_notify('acs_invalidate', 'o:' || OLD.org_id);
      RETURN NULL;
    END $function$
