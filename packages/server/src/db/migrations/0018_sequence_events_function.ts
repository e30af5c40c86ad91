/**
 * A sequencer pass as one statement (docs/decisions/events-and-webhooks.md: the bench counted seven round trips per pass, about one pass
 * per proposal, and sequencers of several processes queued on the counter's row lock for milliseconds).
 *
 * `acs_sequence_events` takes the `event_sequencer` row with SKIP LOCKED: when another instance is sequencing,
 * it answers `events = -1` at once instead of waiting. Nothing is left behind by that: every instance LISTENs
 * to the commits, so the one holding the row was woken by the same commit and passes again after this pass
 * (and the poll covers the rest). It is plpgsql, so each statement after the lock reads with a fresh snapshot
 * and sees every event committed before the lock was taken. The delivery body is the event body docs/contract.md 6 gives,
 * byte for byte what readers build from the row (events/EventRows.ts `toEvent`); the notification's payload is
 * events/EventSignal.ts `notification`'s.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE FUNCTION acs_sequence_events(batch int, retry_window_seconds int, channel text, sender text)
    RETURNS TABLE (events int, deliveries int)
    LANGUAGE plpgsql VOLATILE AS $$
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
        SELECT e.seq, row_number() OVER (ORDER BY e.seq) AS n FROM events e WHERE e.position IS NULL ORDER BY e.seq LIMIT batch)
      UPDATE events e SET position = last + pending.n FROM pending WHERE e.seq = pending.seq;
      GET DIAGNOSTICS sequenced = ROW_COUNT;
      IF sequenced = 0 THEN
        RETURN QUERY SELECT 0, 0;
        RETURN;
      END IF;
      UPDATE event_sequencer s SET last_position = s.last_position + sequenced WHERE s.id = 1;
      -- One delivery per endpoint that wants the type; the unique index makes a repeated fan-out a no-op.
      INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, body, give_up_at)
      SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), w.webhook_id, e.org_id, e.event_id, e.type,
        jsonb_build_object('eventId', e.event_id, 'type', e.type,
          'createdAt', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'orgId', e.org_id, 'projectId', e.project_id, 'data', e.data),
        clock_timestamp() + make_interval(secs => retry_window_seconds)
      FROM events e
      JOIN webhooks w ON w.org_id = e.org_id AND w.deleted_at IS NULL AND w.disabled_at IS NULL AND w.events ? e.type
      WHERE e.position > last AND e.position <= last + sequenced
      ORDER BY e.position
      ON CONFLICT (webhook_id, event_id) DO NOTHING;
      GET DIAGNOSTICS queued = ROW_COUNT;
      PERFORM pg_notify(channel, CASE WHEN queued > 0 THEN 'd:' ELSE 'e:' END || sender);
      RETURN QUERY SELECT sequenced, queued;
    END $$`
})
