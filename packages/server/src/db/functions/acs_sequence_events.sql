-- The event sequencer: gives committed events their positions in order, and moves each webhook endpoint's queued_through.
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
-- The events it numbers are found by their whole key (migration 0048). Its statements are planned at each pass, over
-- every day's partition: Citus cannot run a generic plan of them (bench/history.md).
CREATE OR REPLACE FUNCTION public.acs_sequence_events(batch integer, retry_window_seconds integer, channel text, sender text)
 RETURNS TABLE(events integer, deliveries integer)
 LANGUAGE plpgsql
AS $function$
    DECLARE
      last bigint;
      sequenced int;
      queued int;
    BEGIN
      SELECT s.last_position INTO last FROM event_sequencer s WHERE s.id = 1 FOR UPDATE SKIP LOCKED;
      IF NOT FOUND THEN
        RETURN QUERY SELECT -1, 0;
        RETURN;
      END IF;
      WITH pending AS (
        SELECT e.seq, e.org_id, e.created_at, row_number() OVER (ORDER BY e.seq) AS n
        FROM events e WHERE e.position IS NULL ORDER BY e.seq LIMIT batch)
      UPDATE events e SET position = last + pending.n FROM pending
      WHERE e.position IS NULL AND e.seq = pending.seq AND e.org_id = pending.org_id AND e.created_at = pending.created_at;
      GET DIAGNOSTICS sequenced = ROW_COUNT;
      IF sequenced = 0 THEN
        RETURN QUERY SELECT 0, 0;
        RETURN;
      END IF;
      UPDATE event_sequencer s SET last_position = s.last_position + sequenced WHERE s.id = 1;
      WITH wanted AS (
        SELECT w.webhook_id, max(e.position) AS through, count(*) AS n
        FROM events e
        JOIN webhooks w ON w.org_id = e.org_id AND w.deleted_at IS NULL AND w.disabled_at IS NULL AND w.events ? e.type
        WHERE e.position > last AND e.position <= last + sequenced
        GROUP BY w.webhook_id),
      marked AS (
        UPDATE webhooks w SET queued_through = GREATEST(w.queued_through, wanted.through)
        FROM wanted WHERE w.webhook_id = wanted.webhook_id
        RETURNING wanted.n)
      SELECT COALESCE(sum(n), 0)::int INTO queued FROM marked;
      PERFORM pg_notify(channel, CASE WHEN queued > 0 THEN 'd:' ELSE 'e:' END || sender);
      RETURN QUERY SELECT sequenced, queued;
    END $function$
