/**
 * Changesets expire like queued actions (docs/contract.md 4.3): one still open, or queued, once its org's
 * `approvalTtlHours` have passed since it was opened (open) or submitted (queued), with its members. The apply
 * worker's sweep runs it beside the actions' (ApprovalExpiryLive); an approval of a changeset that is due expires
 * it first, so nothing past its time is approved because the sweep had not come yet.
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Layer, Schedule } from "effect"
import { ExpiryConfig } from "../pipeline/ApprovalExpiry.ts"
import { Transitions } from "../pipeline/Transitions.ts"
import { ChangesetStore } from "./ChangesetStore.ts"

const reasonFor = (ttlHours: number) => `expired: nobody approved or rejected it within ${ttlHours} hours (the org's approvalTtlHours)`

export class ChangesetExpiry extends Effect.Service<ChangesetExpiry>()("acs/ChangesetExpiry", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const store = yield* ChangesetStore
    const transitions = yield* Transitions

    const expire = (changeset: { readonly changesetId: string; readonly projectId: string }, ttlHours: number) =>
      sql.withTransaction(Effect.gen(function*() {
        const ended = yield* store.end(changeset, "expired", null, reasonFor(ttlHours))
        if (ended) yield* transitions.decideMembers(changeset, "expired", null, reasonFor(ttlHours))
        return ended
      })).pipe(Effect.catchTag("SqlError", Effect.die))

    /** Expires the changeset when it is due now; answers whether it did. */
    const expireIfDue = (projectId: string, changesetId: string) =>
      Effect.gen(function*() {
        const [due] = yield* store.due(1, { projectId, changesetId })
        if (due === undefined) return false
        return yield* expire(due, due.approvalTtlHours)
      })

    /** One pass: every changeset past its org's TTL (a bounded batch; the next pass takes the rest). */
    const sweep = Effect.gen(function*() {
      let expired = 0
      for (const row of yield* store.due(500)) if (yield* expire(row, row.approvalTtlHours)) expired++
      if (expired > 0) yield* Effect.logInfo("changesets expired").pipe(Effect.annotateLogs({ expired }))
      return expired
    }).pipe(Effect.withSpan("ChangesetExpiry.sweep"))

    return { expireIfDue, sweep } as const
  }),
  dependencies: [ChangesetStore.Default, Transitions.Default]
}) {}

/** The sweep every APPROVAL_EXPIRY_SWEEP_SECONDS, as the actions' (ApprovalExpiryLive). */
export const ChangesetExpiryLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const seconds = yield* ExpiryConfig
    if (seconds <= 0) return
    const expiry = yield* ChangesetExpiry
    yield* expiry.sweep.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("changeset expiry sweep failed", cause)),
      Effect.repeat(Schedule.spaced(Duration.seconds(seconds))),
      Effect.forkScoped
    )
  })
)
