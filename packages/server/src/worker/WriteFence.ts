/**
 * What stands before every upstream write of an apply: the lease (worker/Lease.ts), and the record of
 * the step the write belongs to. A step's start is recorded by the statement that fences its first write, not
 * before the step begins: a step reads the entity, then writes it, and its start record (fenced by the lease in
 * the same statement) is then the write's lease check too, one statement where there were two. Nothing reaches
 * the upstream unrecorded: a write waits for its step's start record, and a step that wrote nothing has its
 * start recorded before its end.
 */
import type { UpstreamClient, UpstreamFailure } from "@acs/upstream/Upstream"
import { Effect } from "effect"
import type { LeaseLost } from "../queue/Jobs.ts"

export interface WriteFence {
  /** What runs before each write: the pending step start the first time, then the lease check. */
  readonly beforeWrite: Effect.Effect<void>
  /** The client with `beforeWrite` in front of every write. */
  readonly fenced: (client: UpstreamClient) => UpstreamClient
  /** The step about to run: `start` records it, run by the fence of its first write (or by `started`). */
  readonly startOnWrite: (start: Effect.Effect<void, LeaseLost>) => Effect.Effect<void>
  /** The step's start, recorded now if no write did; before its end is recorded. */
  readonly started: Effect.Effect<void, LeaseLost>
  /** The step ended before any write with nothing to record (the upstream was unavailable): its start is dropped. */
  readonly dropStart: Effect.Effect<void>
}

interface PendingStart {
  /** The start's statement, run once, its outcome shared by every write that waits for it. */
  readonly once: Effect.Effect<void, LeaseLost>
  taken: boolean
}

/**
 * `check` re-verifies the lease (`Lease.check`). The steps' error channel holds upstream failures only, so a
 * lost lease travels through a write as a `LeaseLost` defect that `apply` turns back into an outcome.
 */
export const makeWriteFence = (check: Effect.Effect<void, LeaseLost>): WriteFence => {
  let pending: PendingStart | undefined
  const beforeWrite = Effect.suspend(() => {
    if (pending === undefined) return check
    if (pending.taken) return Effect.zipRight(pending.once, check)
    pending.taken = true
    return pending.once
  }).pipe(Effect.orDie)
  const fence = <Args extends ReadonlyArray<unknown>, A>(write: (...args: Args) => Effect.Effect<A, UpstreamFailure>) =>
  (...args: Args): Effect.Effect<A, UpstreamFailure> => Effect.zipRight(beforeWrite, Effect.suspend(() => write(...args)))
  return {
    beforeWrite,
    fenced: (client) => ({
      ...client,
      createCampaign: fence(client.createCampaign),
      updateCampaign: fence(client.updateCampaign),
      deleteCampaign: fence(client.deleteCampaign),
      createAdGroup: fence(client.createAdGroup),
      updateAdGroup: fence(client.updateAdGroup),
      deleteAdGroup: fence(client.deleteAdGroup),
      createKeywords: fence(client.createKeywords),
      updateKeywords: fence(client.updateKeywords),
      deleteKeywords: fence(client.deleteKeywords),
      createNegativeKeywords: fence(client.createNegativeKeywords),
      deleteNegativeKeywords: fence(client.deleteNegativeKeywords),
      updateAd: fence(client.updateAd),
      ...(client.createKeywordsAcross === undefined ? {} : { createKeywordsAcross: fence(client.createKeywordsAcross) }),
      ...(client.createNegativeKeywordsAcross === undefined ? {} : { createNegativeKeywordsAcross: fence(client.createNegativeKeywordsAcross) })
    }),
    startOnWrite: (start) =>
      Effect.map(Effect.cached(start), (once) => {
        pending = { once, taken: false }
      }),
    started: Effect.suspend(() => {
      const step = pending
      pending = undefined
      return step === undefined ? Effect.void : step.once
    }),
    dropStart: Effect.sync(() => {
      pending = undefined
    })
  }
}
