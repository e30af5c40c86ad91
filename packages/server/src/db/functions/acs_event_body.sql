-- An event as webhooks, the stream and GET /events show it (the outbox row, in the API's shape).
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_event_body(e events)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
      SELECT jsonb_build_object('eventId', e.event_id, 'type', e.type,
        'createdAt', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'orgId', e.org_id, 'projectId', e.project_id, 'data', e.data)
    $function$
