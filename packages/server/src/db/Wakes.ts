/**
 * The wakes (`pg_notify`) that follow a statement that changed rows of a distributed table on Citus (docs/scale.md):
 * sent by a statement of their own naming no table, which runs on the coordinator, where every instance LISTENs.
 * Sent from the changing statement, a notification would run on the worker that holds the shard (nobody hears it
 * there), and Citus refuses a `pg_notify` whose void result a CTE or a subquery would have to carry. In the caller's
 * transaction when there is one (delivered at its commit, dropped with a rollback); after a statement that was its
 * own transaction, right after its commit: a wake lost with the instance between the two is made good by the
 * listener's poll.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** A notification: its channel and its payload (never empty: @effect/sql-pg's `listen` drops an empty one). */
export type Wake = readonly [channel: string, payload: string]

export const sendWakes = (sql: SqlClient.SqlClient, wakes: ReadonlyArray<Wake>): Effect.Effect<void> =>
  wakes.length === 0 ? Effect.void : sql`SELECT pg_notify(w.channel, w.payload)
    FROM unnest(${wakes.map(([channel]) => channel)}::text[], ${wakes.map(([, payload]) => payload)}::text[]) AS w(channel, payload)`.pipe(
    Effect.asVoid,
    Effect.orDie,
    Effect.withSpan("Wakes.send")
  )
