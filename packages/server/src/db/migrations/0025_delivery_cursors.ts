/**
 * First attempts of webhook deliveries claimed by position, not queued as rows (the webhook's share of proposal
 * throughput: docs/decisions/events-and-webhooks.md). A delivery row was written three times before anything else happened to it: the
 * fan-out's insert (with its five index entries), the claim's lease and the outcome, whose status change is
 * not a HOT update (the queue's index names `status`), so it wrote four index entries more; with the dead
 * entries a busy queue leaves in its index until vacuum, that was 150 to 300 µs of PostgreSQL per delivery
 * against 40 µs for one insert of the row as it ends.
 *
 * Each endpoint now has two positions: `queued_through`, the last event it wants, set by the sequencer as it
 * gives positions (one update per endpoint and pass, not a row per event), and `claimed_through`, up to where
 * its events were taken by a delivery worker. A worker takes up to a batch of the events in between, moves
 * `claimed_through` and leases the range as one `webhook_batches` row, in one statement; once the attempts are
 * made it inserts each delivery's row as it ended (delivered, or pending with its next retry) and deletes the
 * batch, again in one statement, fenced by the lease. A batch whose lease ran out (its instance died) is turned
 * into pending rows by the next claim, so its events are delivered at least once, as before. Retries, pings and
 * rows queued before this migration go through the queue as before.
 *
 * An endpoint starts at the last position handed out, as the fan-out did: it gets the events sequenced after it
 * was created. A disabled endpoint is neither marked nor claimed; its unclaimed events become pending rows
 * when it is disabled (they wait for it, as queued deliveries did), and enabling it starts it at the current
 * position, so the events of its disabled time are not sent, as before.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE FUNCTION acs_last_position() RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT last_position FROM event_sequencer WHERE id = 1 $$`
  yield* sql`ALTER TABLE webhooks ADD COLUMN queued_through bigint NOT NULL DEFAULT acs_last_position(),
    ADD COLUMN claimed_through bigint NOT NULL DEFAULT acs_last_position()`
  yield* sql`
    CREATE TABLE webhook_batches (
      batch_id text PRIMARY KEY,
      webhook_id text NOT NULL,
      after_position bigint NOT NULL,
      through_position bigint NOT NULL,
      locked_by text NOT NULL,
      lease_until timestamptz NOT NULL
    )`
  // 0020's function, marking the endpoints that want the new events instead of queueing a row per delivery;
  // `deliveries` still counts the deliveries due (an event for an endpoint), which is what wakes the workers.
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
    END $$`
})
