/**
 * A webhook delivery refers to its event instead of carrying a copy of its body (the webhook's share of
 * proposal throughput: docs/decisions/events-and-webhooks.md). The copy made every delivery row as wide as its event, and the row is
 * written three times (fan-out, claim, outcome): three writes of the whole body per delivery, and a table
 * whose pages hold a few rows each. The body is now built when a delivery is claimed, from the event, by
 * `acs_event_body`: the same expression 0018's fan-out stored, so receivers get the same bytes.
 *
 * `body` stays for the rows that have none to refer to (a `ping` has no event) and for the rows queued
 * before this migration. An event is pruned after 30 days while a delivery of it may still wait (its
 * endpoint disabled for longer, then enabled): the trigger on its deletion gives such a delivery its body
 * first. Pages are left half empty (`fillfactor`): a claim updates no indexed column, so its new row version
 * stays on the page (a HOT update) without an entry in each of the table's five indexes.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhook_deliveries ALTER COLUMN body DROP NOT NULL`
  yield* sql`ALTER TABLE webhook_deliveries SET (fillfactor = 50)`
  // The event body docs/contract.md 6 gives, byte for byte what readers build from the row (events/EventRows.ts `toEvent`).
  yield* sql`
    CREATE FUNCTION acs_event_body(e events) RETURNS jsonb LANGUAGE sql STABLE AS $$
      SELECT jsonb_build_object('eventId', e.event_id, 'type', e.type,
        'createdAt', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'orgId', e.org_id, 'projectId', e.project_id, 'data', e.data)
    $$`
  yield* sql`
    CREATE FUNCTION acs_keep_pending_bodies() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE webhook_deliveries d SET body = acs_event_body(gone)
      FROM gone WHERE d.event_id = gone.event_id AND d.status = 'pending' AND d.body IS NULL;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER events_keep_pending_bodies AFTER DELETE ON events REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION acs_keep_pending_bodies()`
  // 0018's function, its fan-out without the body.
  yield* sql`
    CREATE OR REPLACE FUNCTION acs_sequence_events(batch int, retry_window_seconds int, channel text, sender text)
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
      INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, give_up_at)
      SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), w.webhook_id, e.org_id, e.event_id, e.type,
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
