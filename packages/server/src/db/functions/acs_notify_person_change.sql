-- Trigger on people: drops every cached session and key, which carry their person's role (db/Invalidation.ts).
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_notify_person_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      PERFORM pg_notify('acs_invalidate', 's:*');
      PERFORM pg_notify('acs_invalidate', 'k:*');
      RETURN NULL;
    END $function$
