/**
 * Events are kept 30 days (docs/contract.md 6): the pruning pass (webhooks/Retention.ts) takes its cutoff from Effect's
 * Clock, moved here with TestClock against the real test PostgreSQL. An ended delivery log is kept at 30 days less a
 * minute and deleted past 30 days; an event and a batch of first attempts go with their day's partition, 30 days after
 * that day ends, and not before; a delivery still pending is never deleted, and keeps the body its event had (a
 * delivery row refers to its event: migration 0020) when the event's day is dropped. OAuth codes and refresh tokens
 * go 30 days past their expiry.
 */
import { layer } from "./support/layerBlock.ts"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Duration, Effect, Layer, TestClock, TestContext } from "effect"
import { expect } from "vitest"
import { databaseLayer } from "../src/db/Database.ts"
import { pruneOnce, RETENTION_DAYS } from "../src/webhooks/Retention.ts"
import { eventBody, writeEvent } from "../src/events/Outbox.ts"
import { Sequencer } from "../src/events/Sequencer.ts"
import { createDatabase, insertAccount, insertOrg } from "./support/database.ts"

const ORG = "org_event_retention"
const PROJECT = "prj_event_retention"
const RETENTION = Duration.days(RETENTION_DAYS)

const TestDatabase = Layer.unwrapEffect(Effect.promise(async () => {
  const url = await createDatabase()
  await insertOrg(url, ORG)
  await insertAccount(url, ORG, PROJECT)
  return databaseLayer("event retention test").pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url]]))))
  )
}))

const TestLayer = Sequencer.Default.pipe(Layer.provideMerge(TestDatabase))

layer(TestLayer, { excludeTestServices: true })("event retention", (it) => {
  it.effect("an event and its ended deliveries are kept 30 days and pruned after; a pending delivery stays", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO webhooks (webhook_id, org_id, url, events, format, secret_sealed, created_by)
        VALUES ('whk_retention', ${ORG}, 'https://hooks.example.com/acs', '["sync.succeeded"]'::jsonb, 'json', 'sealed', 'test')`
      for (const name of ["kept a month", "delivered on retry", "still pending"]) {
        yield* writeEvent(sql, { orgId: ORG, projectId: PROJECT, type: "sync.succeeded", data: { sync: { name } } })
      }
      yield* (yield* Sequencer).sequence
      // As a delivery worker records them (webhooks/Deliveries.ts): a first attempt delivered, in its batch's row; a
      // delivery delivered on its second attempt and one to retry, as rows of the queue.
      yield* sql`INSERT INTO webhook_delivered_batches (batch_id, webhook_id, org_id, delivery_ids, event_ids, event_types, status_codes, durations_ms, responses)
        SELECT 'bat_retention', 'whk_retention', e.org_id, ARRAY['dlv_' || e.seq], ARRAY[e.event_id], ARRAY[e.type], ARRAY[204], ARRAY[3], ARRAY[NULL::text]
        FROM events e WHERE e.data -> 'sync' ->> 'name' = 'kept a month'`
      yield* sql`INSERT INTO webhook_deliveries (delivery_id, webhook_id, org_id, event_id, event_type, status, attempts, give_up_at, delivered_at)
        SELECT 'dlv_' || e.seq, 'whk_retention', e.org_id, e.event_id, e.type, CASE WHEN e.data -> 'sync' ->> 'name' = 'delivered on retry' THEN 'delivered' ELSE 'pending' END,
          2, now() + interval '1 day', CASE WHEN e.data -> 'sync' ->> 'name' = 'delivered on retry' THEN now() END
        FROM events e WHERE e.data -> 'sync' ->> 'name' <> 'kept a month'`
      const pendingBody = (yield* sql<{ readonly body: string }>`SELECT ${eventBody(sql, "e")}::text AS body FROM events e
        WHERE data -> 'sync' ->> 'name' = 'still pending'`)[0]!.body
      const createdAt = (yield* sql<{ readonly ms: number }>`SELECT (extract(epoch FROM max(created_at)) * 1000)::float8 AS ms FROM events`)[0]!.ms
      const left = sql<{ readonly events: number; readonly deliveries: number; readonly pending: number }>`
        SELECT (SELECT count(*)::int FROM events) AS events, (SELECT count(*)::int FROM webhook_delivery_log) AS deliveries,
          (SELECT count(*)::int FROM webhook_delivery_log WHERE status = 'pending') AS pending`.pipe(Effect.map((rows) => rows[0]!))
      expect(yield* left).toEqual({ events: 3, deliveries: 3, pending: 1 })

      yield* TestClock.setTime(createdAt + Duration.toMillis(RETENTION) - 60_000)
      yield* pruneOnce
      expect(yield* left).toEqual({ events: 3, deliveries: 3, pending: 1 })

      yield* TestClock.adjust(Duration.minutes(2))
      yield* pruneOnce
      // The events and the batch of first attempts go with their day's partition (db/TimePartitions.ts): 30 days after
      // that day ends.
      expect(yield* left).toEqual({ events: 3, deliveries: 2, pending: 1 })
      const dayEnd = (Math.floor(createdAt / 86_400_000) + 1) * 86_400_000
      yield* TestClock.setTime(dayEnd + Duration.toMillis(RETENTION) - 60_000)
      yield* pruneOnce
      expect(yield* left).toEqual({ events: 3, deliveries: 2, pending: 1 })
      yield* TestClock.adjust(Duration.minutes(2))
      yield* pruneOnce
      expect(yield* left).toEqual({ events: 0, deliveries: 1, pending: 1 })
      const kept = yield* sql<{ readonly body: string | null }>`SELECT body::text AS body FROM webhook_deliveries WHERE status = 'pending'`
      expect(kept[0]!.body).toBe(pendingBody)
      expect(JSON.parse(pendingBody)).toMatchObject({ type: "sync.succeeded", orgId: ORG, projectId: PROJECT, data: { sync: { name: "still pending" } } })
    }).pipe(Effect.provide(TestContext.TestContext), Effect.orDie))

  it.effect("OAuth codes and refresh tokens are pruned 30 days past their expiry; a live refresh token stays", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO people (person_id, org_id, email, name, role, password_hash)
        VALUES ('psn_retention', ${ORG}, 'retention@example.com', 'Retention', 'editor', 'unused')`
      yield* sql`INSERT INTO oauth_clients (client_id, client_name, redirect_uris) VALUES ('ocl_retention', 'client', '["https://c.example/cb"]')`
      yield* sql`INSERT INTO api_keys (key_id, org_id, name, secret_hash, scope, binding_kind, kind, oauth_client_id, created_by, root_person_id)
        VALUES ('key_retention', ${ORG}, 'client', 'hash-retention', 'read', 'org', 'oauth', 'ocl_retention', 'person:psn_retention', 'psn_retention')`
      yield* sql`INSERT INTO oauth_codes (code_hash, client_id, org_id, person_id, redirect_uri, code_challenge, resource, scope, expires_at)
        VALUES ('code-expired', 'ocl_retention', ${ORG}, 'psn_retention', 'https://c.example/cb', 'x', 'https://acs.example/mcp', 'read', now())`
      yield* sql`INSERT INTO oauth_refresh_tokens (token_hash, key_id, client_id, resource, expires_at) VALUES
        ('refresh-expired', 'key_retention', 'ocl_retention', 'https://acs.example/mcp', now()),
        ('refresh-live', 'key_retention', 'ocl_retention', 'https://acs.example/mcp', now() + interval '60 days')`
      const now = (yield* sql<{ readonly ms: number }>`SELECT (extract(epoch FROM now()) * 1000)::float8 AS ms`)[0]!.ms
      const left = sql<{ readonly codes: number; readonly tokens: ReadonlyArray<string> }>`
        SELECT (SELECT count(*)::int FROM oauth_codes) AS codes,
          (SELECT coalesce(array_agg(token_hash ORDER BY token_hash), '{}') FROM oauth_refresh_tokens) AS tokens`.pipe(Effect.map((rows) => rows[0]!))

      yield* TestClock.setTime(now + Duration.toMillis(RETENTION) - 60_000)
      yield* pruneOnce
      expect(yield* left).toEqual({ codes: 1, tokens: ["refresh-expired", "refresh-live"] })
      yield* TestClock.adjust(Duration.minutes(2))
      yield* pruneOnce
      expect(yield* left).toEqual({ codes: 0, tokens: ["refresh-live"] })
    }).pipe(Effect.provide(TestContext.TestContext), Effect.orDie))
})
