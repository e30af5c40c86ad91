/**
 * Effects that must follow only what committed (the metrics of a change: `acs_actions_total`, …): run inside a
 * transaction, `afterCommit` holds them until that transaction commits and drops them when it rolls back.
 * The SqlClient's `withTransaction` is wrapped once, where the client is made (`deferAfterCommit`), so the
 * code that opens transactions stays as it is. A savepoint that rolls back drops its own effects; one that
 * succeeds hands them to the transaction around it.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, FiberRef } from "effect"

type Pending = Array<Effect.Effect<void>>

/** The effects waiting on the transaction the fiber is in; undefined outside a (wrapped) transaction. */
const pending = FiberRef.unsafeMake<Pending | undefined>(undefined, {
  // A fiber forked inside a transaction and joined after it must not put back that transaction's list.
  join: (parent) => parent
})

/** Runs `effect` now, or, inside a transaction, once that transaction committed (never if it rolls back). */
export const afterCommit = (effect: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.flatMap(FiberRef.get(pending), (waiting) =>
    waiting === undefined
      ? effect
      : Effect.sync(() => {
        waiting.push(effect)
      }))

/** Makes `client`'s transactions run their `afterCommit` effects once they committed; answers the client. */
export const deferAfterCommit = <Client extends SqlClient.SqlClient>(client: Client): Client => {
  const open = client.withTransaction
  const withTransaction = <R, E, A>(self: Effect.Effect<A, E, R>) =>
    Effect.flatMap(FiberRef.get(pending), (outer) => {
      const own: Pending = []
      return open(Effect.locally(self, pending, own)).pipe(
        Effect.tap(() =>
          outer === undefined
            ? Effect.all(own, { discard: true })
            : Effect.sync(() => {
              outer.push(...own)
            })
        )
      )
    })
  return Object.assign(client, { withTransaction })
}
