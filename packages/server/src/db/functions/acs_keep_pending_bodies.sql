-- Trigger on events (statement, after delete): a pending delivery keeps the body of the event retention pruned.
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_keep_pending_bodies()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      UPDATE webhook_deliveries d SET body = acs_event_body(gone)
      FROM gone WHERE d.event_id = gone.event_id AND d.status = 'pending' AND d.body IS NULL;
      RETURN NULL;
    END $function$
