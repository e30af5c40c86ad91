/**
 * Events, webhooks and approval expiry (docs/contract.md 6 and 3.2).
 *
 * `events` is the outbox: a row is inserted in the transaction of the change it describes, so it exists if
 * and only if the change committed. `seq` is only the insert order; the order readers see is `position`,
 * given after commit by one sequencer at a time (events/Sequencer.ts). A transaction that inserted first may
 * commit last, so positions handed out at insert time could be read out of order and a resumed stream could
 * skip a late commit; positions handed out after commit only grow.
 *
 * `webhook_deliveries` is a leased queue like `jobs`: one row per endpoint and event, claimed with
 * `FOR UPDATE SKIP LOCKED` under a lease, so a delivery survives SIGKILL and two instances never both own it.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE orgs ADD COLUMN approval_ttl_hours int NOT NULL DEFAULT 72
    CHECK (approval_ttl_hours BETWEEN 1 AND 8760)`
  yield* sql`
    CREATE TABLE events (
      seq bigserial PRIMARY KEY,
      event_id text NOT NULL UNIQUE,
      position bigint UNIQUE,
      org_id text NOT NULL REFERENCES orgs (org_id),
      project_id text,
      type text NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`
  // What the sequencer looks for, what pages and streams read, what the 30-day pruning deletes.
  yield* sql`CREATE INDEX events_unsequenced ON events (seq) WHERE position IS NULL`
  yield* sql`CREATE INDEX events_org_position ON events (org_id, position) WHERE position IS NOT NULL`
  yield* sql`CREATE INDEX events_org_project_position ON events (org_id, project_id, position) WHERE position IS NOT NULL`
  yield* sql`CREATE INDEX events_created_at ON events (created_at)`
  // The last position handed out; its row lock makes sequencers (of every instance) take turns.
  yield* sql`CREATE TABLE event_sequencer (id int PRIMARY KEY CHECK (id = 1), last_position bigint NOT NULL)`
  yield* sql`INSERT INTO event_sequencer (id, last_position) VALUES (1, 0)`
  yield* sql`
    CREATE TABLE webhooks (
      webhook_id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (org_id),
      url text NOT NULL,
      events jsonb NOT NULL,
      description text,
      format text NOT NULL CHECK (format IN ('json', 'slack')),
      secret_sealed text NOT NULL,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      disabled_at timestamptz,
      disabled_reason text,
      deleted_at timestamptz
    )`
  yield* sql`CREATE INDEX webhooks_org ON webhooks (org_id) WHERE deleted_at IS NULL`
  yield* sql`
    CREATE TABLE webhook_deliveries (
      delivery_id text PRIMARY KEY,
      webhook_id text NOT NULL REFERENCES webhooks (webhook_id),
      org_id text NOT NULL,
      event_id text NOT NULL,
      event_type text NOT NULL,
      body jsonb NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
      attempts int NOT NULL DEFAULT 0,
      run_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      give_up_at timestamptz NOT NULL,
      locked_by text,
      lease_until timestamptz,
      last_status_code int,
      last_duration_ms int,
      last_error text,
      last_response text,
      last_attempt_at timestamptz,
      delivered_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`
  // One delivery per endpoint and event, whichever sequencer fans it out.
  yield* sql`CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (webhook_id, event_id)`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (run_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, created_at DESC)`
  yield* sql`CREATE INDEX webhook_deliveries_age ON webhook_deliveries (created_at)`
})
