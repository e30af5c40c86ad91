/**
 * Events are kept 30 days (docs/contract.md 6); so are webhook delivery logs that have ended, and OAuth codes and
 * refresh tokens past their expiry. An hourly pass deletes what is older, in bounded batches so it never holds a
 * long lock; the cutoff comes from Clock. Each table's rows are deleted by its owner's statement (Deliveries.ts,
 * auth/OAuthGrants.ts); the events and the delivered batches, partitioned by day, lose whole days instead, and get
 * theirs a week ahead (db/TimePartitions.ts).
 */
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { pruneOAuthCodes, pruneOAuthRefreshTokens } from "../auth/OAuthGrants.ts"
import { maintainDayPartitions } from "../db/TimePartitions.ts"
import { keepPendingBodies, pruneDeliveries } from "./Deliveries.ts"

export const RETENTION_DAYS = 30

const BATCH = 5_000

export const pruneOnce = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis
  const cutoff = new Date(now - RETENTION_DAYS * 24 * 3_600_000)
  const batched = (prune: (sql: SqlClient.SqlClient, cutoff: Date, limit: number) => Effect.Effect<number>) =>
    prune(sql, cutoff, BATCH).pipe(Effect.repeat({ while: (n) => n === BATCH }))
  // A pass that could not take a table's lock in time leaves it to the next, and goes on with the others. A pending
  // delivery keeps the body of an event whose day is dropped, in the drop's transaction.
  yield* maintainDayPartitions(sql, "events", now, cutoff.getTime(), (partition) => keepPendingBodies(sql, partition)).pipe(
    Effect.catchAllDefect((defect) => Effect.logWarning("the events' day partitions were not maintained", defect))
  )
  yield* batched(pruneDeliveries)
  yield* maintainDayPartitions(sql, "webhook_delivered_batches", now, cutoff.getTime()).pipe(
    Effect.catchAllDefect((defect) => Effect.logWarning("the delivered batches' day partitions were not maintained", defect))
  )
  yield* batched(pruneOAuthCodes)
  yield* batched(pruneOAuthRefreshTokens)
}).pipe(Effect.withSpan("Retention.prune"))

export const RetentionLive = Layer.scopedDiscard(
  pruneOnce.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("retention pass failed", cause)),
    Effect.repeat(Schedule.spaced(Duration.hours(1))),
    Effect.forkScoped
  )
)
