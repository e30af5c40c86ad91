/**
 * The pace of background work in batches (the guard's reviews): after each batch it rests as long as the batch
 * ran, and FOREGROUND_REST_FACTOR times that while other sessions are at work in the database (proposals,
 * reads, another instance's requests). Background work is never in a hurry (a review comes hours or days after
 * its change) and must not slow what people and agents wait for; alone, it still takes half the machine's time
 * (docs/decisions/guard.md "The pass yields to the foreground").
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Schema } from "effect"
import { decodeRows } from "./Rows.ts"

/** Rest per unit of work while the database has other work: the batches then take a tenth of its time. */
export const FOREGROUND_REST_FACTOR = 9

const decodeOthers = decodeRows(Schema.Struct({ others: Schema.Int }))

export class BackgroundPace extends Effect.Service<BackgroundPace>()("acs/BackgroundPace", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Other sessions of this database running a statement or inside a transaction, read when the batch ends. */
    const foreground = sql`
      SELECT count(*)::int AS others FROM pg_stat_activity
      WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()
        AND state IN ('active', 'idle in transaction')`.pipe(
      Effect.flatMap(decodeOthers),
      Effect.map((rows) => (rows[0]?.others ?? 0) > 0),
      // A database that cannot tell (the embedded one) is taken as idle: the batch still rests as long as it ran.
      Effect.catchAll(() => Effect.succeed(false)),
      Effect.withTracerEnabled(false)
    )

    /** Runs `batch`, then rests before the caller's next one. */
    const paced = <A, E, R>(batch: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.gen(function*() {
        const [took, result] = yield* Effect.timed(batch)
        const factor = (yield* foreground) ? FOREGROUND_REST_FACTOR : 1
        yield* Effect.sleep(Duration.times(took, factor))
        return result
      })

    return { paced } as const
  })
}) {}
