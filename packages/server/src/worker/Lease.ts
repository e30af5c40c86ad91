/**
 * The claimed job's lease as the apply uses it (made by the worker, Worker.ts), and the two ways a write is
 * fenced by it: behind the lease's renewal in the write's own statement, or after the job's deletion in the
 * transaction that ends the run (docs/decisions/pipeline.md "The fence in the write's own statement").
 */
import type { SqlClient, Statement } from "@effect/sql"
import { Effect } from "effect"
import type { LeaseLost } from "../queue/Jobs.ts"

export interface Lease {
  /** Re-verifies (and renews) the lease in a statement of its own; fails when the job may be another worker's now. */
  readonly check: Effect.Effect<void, LeaseLost>
  /** The renewal for `WITH lease AS (...)`: a write that happens only while it answers a row is fenced in one statement. */
  readonly renewal: Statement.Fragment
  /** What a fenced write that found no lease answers: the job is no longer ours. */
  readonly lost: Effect.Effect<never, LeaseLost>
  /** Deletes the job while it is ours (`LeaseLost` otherwise): the first statement of the transaction that ends the run. */
  readonly settle: Effect.Effect<void, LeaseLost>
  /** The deletion for `WITH settled AS (...)`: a write that happens only while it answers a row ends the job in one statement. */
  readonly settlement: Statement.Fragment
}

/**
 * Runs `write` (a statement answering rows, written only where the fence it is given holds) behind the lease's
 * renewal, in one statement; no row: the job is no longer ours.
 */
export const behindLease = (sql: SqlClient.SqlClient, lease: Lease, write: (fence: Statement.Fragment) => Statement.Fragment) =>
  sql`/* prepared */ WITH lease AS (${lease.renewal}) ${write(sql`EXISTS (SELECT 1 FROM lease)`)}`.pipe(
    Effect.orDie,
    Effect.flatMap((rows) => rows.length > 0 ? Effect.void : lease.lost)
  )

/**
 * Runs the write that ends the run in one transaction with the job's deletion (which fails first when the job is
 * no longer ours): the outcome, its event and the job's end commit together or not at all.
 */
export const settled = <A, E, R>(sql: SqlClient.SqlClient, lease: Lease, write: Effect.Effect<A, E, R>) =>
  sql.withTransaction(Effect.zipRight(lease.settle, write)).pipe(
    Effect.catchTag("SqlError", (error) => Effect.die(error))
  )
