/**
 * Starting syncs (on demand, after an import, and those the sync scheduler claimed: SyncScheduler.ts) and running
 * them in the background of this instance; a sync that succeeded reads the change history for outside changes. A
 * sync that cannot start because another runs anywhere is 409. This instance's running syncs are counted (the
 * scheduler's bound per instance) and each one's end wakes the scheduler.
 */
import { Config, Effect, Fiber, Queue, Ref } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { Accounts } from "../accounts/Accounts.ts"
import { Connections } from "../accounts/Connections.ts"
import type { Granted } from "../auth/Access.ts"
import { AfterSync } from "./AfterSync.ts"
import { makeSync } from "./Sync.ts"
import { SyncRuns, type SyncRow, type SyncTrigger } from "./SyncRuns.ts"

/** The freshness target of every account: a copy older than this is due (0: no scheduled syncs). */
export const SyncInterval = Config.integer("SYNC_INTERVAL_MINUTES").pipe(Config.withDefault(60))

export class Syncs extends Effect.Service<Syncs>()("acs/Syncs", {
  scoped: Effect.gen(function*() {
    const runs = yield* SyncRuns
    const connections = yield* Connections
    const accounts = yield* Accounts
    const sync = yield* makeSync
    const afterSync = yield* AfterSync
    const scope = yield* Effect.scope
    const scheduled = (yield* SyncInterval) > 0
    const runningHere = yield* Ref.make(0)
    // One pending wake is enough: the scheduler looks at everything when it wakes.
    const wakes = yield* Queue.sliding<void>(1)

    /** Runs a started sync in the background, counted on this instance until it ends. */
    const launch = (client: Effect.Effect.Success<ReturnType<typeof connections.clientFor>>, started: SyncRow, account: AccountRecord) =>
      Effect.gen(function*() {
        yield* Ref.update(runningHere, (n) => n + 1)
        return yield* accounts.find(account.projectId).pipe(
          Effect.map((current) => current._tag === "Some" ? current.value : account),
          Effect.flatMap((current) =>
            sync.run(client, started, current).pipe(
              // A fresh copy is the moment to look at what changed outside acs too; its failure is not the sync's.
              Effect.tap(() =>
                afterSync.run(client, current).pipe(
                  Effect.catchAllCause((cause) => Effect.logWarning("reading the change history after the sync failed", cause))
                )
              )
            )
          ),
          Effect.catchAllCause((cause) => Effect.logWarning("sync failed", cause)),
          Effect.ensuring(Ref.update(runningHere, (n) => n - 1).pipe(Effect.zipRight(Queue.offer(wakes, undefined)))),
          Effect.forkIn(scope)
        )
      })

    /**
     * Claims the account's sync slot and runs the sync in the background. The connection is checked first,
     * so a missing or refused connection is a 409 `connection_error` to the caller, not a failed sync.
     */
    const begin = (account: AccountRecord, trigger: SyncTrigger) =>
      Effect.gen(function*() {
        const client = yield* connections.clientFor(account.orgId)
        const started = yield* runs.start(account.orgId, account.projectId, trigger)
        const fiber = yield* launch(client, started, account)
        return { sync: started, fiber }
      }).pipe(Effect.withSpan("Syncs.begin"))

    /** Runs a sync the scheduler claimed; a connection that cannot make a client fails it, with its reason. */
    const runClaimed = (account: AccountRecord, claimed: SyncRow) =>
      connections.clientFor(account.orgId).pipe(
        Effect.matchEffect({
          onFailure: (error) => runs.fail(claimed.projectId, claimed.syncId, error.message),
          onSuccess: (client) => Effect.asVoid(launch(client, claimed, account))
        }),
        Effect.withSpan("Syncs.runClaimed")
      )

    /** Starts a sync and waits for its end (used after import on first start, and by the benchmark). */
    const runToEnd = (account: AccountRecord, trigger: SyncTrigger) =>
      begin(account, trigger).pipe(
        Effect.tap(({ fiber }) => Fiber.join(fiber)),
        Effect.flatMap(({ sync: started }) => runs.find(account.projectId, started.syncId))
      )

    /** The account's sync history, newest first (listSyncs). */
    const history = (grant: Granted<"listSyncs">, limit: number) => runs.history(grant.account.projectId, limit)

    /** One sync of the account, or undefined when the account has no such sync (getSync). */
    const find = (grant: Granted<"getSync">, syncId: string) => runs.find(grant.account.projectId, syncId)

    /** A sync of the account started now, by hand (startSync). */
    const start = (grant: Granted<"startSync">) => Effect.map(begin(grant.account, "manual"), ({ sync: started }) => started)

    /** Upstream accounts imported as projects (importAccounts); each new one gets its first sync in the background. */
    const importAccounts = (grant: Granted<"importAccounts">, upstreamAccountIds: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const imported = yield* connections.importInto(grant.orgId, upstreamAccountIds)
        // With the schedule on, new accounts are due at once and wait their turn in the queue (an agency importing
        // a hundred must not start a hundred syncs); with it off, nothing else would sync them.
        if (scheduled && imported.created.length > 0) yield* Queue.offer(wakes, undefined)
        for (const projectId of scheduled ? [] : imported.created) {
          const account = yield* accounts.find(projectId)
          if (account._tag === "Some") yield* begin(account.value, "import").pipe(Effect.ignore)
        }
        return imported.accounts
      }).pipe(Effect.withSpan("Syncs.importAccounts"))

    return { begin, runClaimed, runToEnd, history, find, start, importAccounts, runningHere: Ref.get(runningHere), wakes } as const
  })
}) {}
