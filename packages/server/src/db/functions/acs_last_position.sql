-- The last event position the sequencer handed out: what the streams' watch compares.
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_last_position()
 RETURNS bigint
 LANGUAGE sql
 STABLE
AS $function$
    SELECT last_position FROM event_sequencer WHERE id = 1 $function$
