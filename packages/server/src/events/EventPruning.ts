/**
 * Events are kept 30 days (docs/contract.md 6); so are webhook delivery logs that have ended. An hourly pass
 * deletes what is older, in bounded batches so it never holds a long lock; the cutoff comes from Clock.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"

export const RETENTION_DAYS = 30

const BATCH = 5_000

export const pruneOnce = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const cutoff = new Date((yield* Clock.currentTimeMillis) - RETENTION_DAYS * 24 * 3_600_000)
  const batch = (statement: Effect.Effect<ReadonlyArray<unknown>, unknown>) =>
    statement.pipe(Effect.orDie, Effect.map((rows) => rows.length), Effect.repeat({ while: (n) => n === BATCH }))
  yield* batch(sql`DELETE FROM events WHERE seq IN (
    SELECT seq FROM events WHERE created_at < ${cutoff} AND position IS NOT NULL ORDER BY created_at LIMIT ${BATCH}) RETURNING seq`)
  yield* batch(sql`DELETE FROM webhook_deliveries WHERE delivery_id IN (
    SELECT delivery_id FROM webhook_deliveries WHERE created_at < ${cutoff} AND status <> 'pending' LIMIT ${BATCH}) RETURNING delivery_id`)
  yield* batch(sql`DELETE FROM webhook_delivered_batches WHERE batch_id IN (
    SELECT batch_id FROM webhook_delivered_batches WHERE delivered_at < ${cutoff} LIMIT ${BATCH}) RETURNING batch_id`)
}).pipe(Effect.withSpan("EventPruning.prune"))

export const EventPruningLive = Layer.scopedDiscard(
  pruneOnce.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("event pruning failed", cause)),
    Effect.repeat(Schedule.spaced(Duration.hours(1))),
    Effect.forkScoped
  )
)
