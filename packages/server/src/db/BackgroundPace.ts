/**
 * The pace of background work in batches (the guard's reviews): after each batch it rests as long as the batch
 * ran, and goes on resting, up to MAX_REST_FACTOR times that, while the foreground is at work: this process's event
 * loop busy (requests being served) or other sessions of the database running a statement or inside a
 * transaction. Background work is never in a hurry (a review comes hours or days after its change) and must not
 * slow what people and agents wait for; alone, it still takes half of the machine's time
 * (docs/decisions/guard.md "The pass yields to the foreground").
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Schema } from "effect"
import { performance } from "node:perf_hooks"
import { decodeRows } from "./Rows.ts"

/** The longest rest per unit of work, while the foreground is busy throughout: the batches then take 1/20 of the time. */
export const MAX_REST_FACTOR = 19

/** Event-loop utilization over a rest above which the process is serving requests. */
const BUSY_LOOP = 0.3

const decodeOthers = decodeRows(Schema.Struct({ others: Schema.Int }))

export class BackgroundPace extends Effect.Service<BackgroundPace>()("acs/BackgroundPace", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Other sessions of this database running a statement or inside a transaction. */
    const databaseBusy = sql`
      SELECT count(*)::int AS others FROM pg_stat_activity
      WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()
        AND state IN ('active', 'idle in transaction')`.pipe(
      Effect.flatMap(decodeOthers),
      Effect.map((rows) => (rows[0]?.others ?? 0) > 0),
      // A database that cannot tell (the embedded one) counts as idle: the process's own load still does.
      Effect.catchAll(() => Effect.succeed(false)),
      Effect.withTracerEnabled(false)
    )

    /** One rest of `took`; answers whether the foreground was busy meanwhile. */
    const restOnce = (took: Duration.Duration) =>
      Effect.gen(function*() {
        const before = performance.eventLoopUtilization()
        yield* Effect.sleep(took)
        return performance.eventLoopUtilization(before).utilization > BUSY_LOOP || (yield* databaseBusy)
      })

    /** Runs `batch`, then rests before the caller's next one. */
    const paced = <A, E, R>(batch: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.gen(function*() {
        const [took, result] = yield* Effect.timed(batch)
        let rests = 1
        while ((yield* restOnce(took)) && rests < MAX_REST_FACTOR) rests++
        return result
      })

    return { paced } as const
  })
}) {}
