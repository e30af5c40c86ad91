/**
 * Starting syncs (on demand, after an import, and on the SYNC_INTERVAL schedule) and running them in the
 * background of this instance; a sync that succeeded reads the change history for outside changes. A sync
 * that cannot start because another runs anywhere is 409.
 */
import { SqlClient } from "@effect/sql"
import { Config, Duration, Effect, Fiber, Schedule } from "effect"
import { type AccountRecord, AccountRow } from "../accounts/AccountRecord.ts"
import { Accounts, decodeAccounts } from "../accounts/Accounts.ts"
import { Connections } from "../accounts/Connections.ts"
import type { Granted } from "../auth/Access.ts"
import { columnsOf } from "../db/Rows.ts"
import { AfterSync } from "./AfterSync.ts"
import { makeSync } from "./Sync.ts"
import { SyncRuns, type SyncTrigger } from "./SyncRuns.ts"

export const SyncInterval = Config.integer("SYNC_INTERVAL_MINUTES").pipe(Config.withDefault(60))

export class Syncs extends Effect.Service<Syncs>()("acs/Syncs", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const runs = yield* SyncRuns
    const connections = yield* Connections
    const accounts = yield* Accounts
    const sync = yield* makeSync
    const afterSync = yield* AfterSync
    const scope = yield* Effect.scope

    /**
     * Claims the account's sync slot and runs the sync in the background. The connection is checked first,
     * so a missing or refused connection is a 409 `connection_error` to the caller, not a failed sync.
     */
    const begin = (account: AccountRecord, trigger: SyncTrigger) =>
      Effect.gen(function*() {
        const client = yield* connections.clientFor(account.orgId)
        const started = yield* runs.start(account.orgId, account.projectId, trigger)
        const fiber = yield* accounts.find(account.projectId).pipe(
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
          Effect.forkIn(scope)
        )
        return { sync: started, fiber }
      }).pipe(Effect.withSpan("Syncs.begin"))

    /** Starts a sync and waits for its end (used after import on first start, and by the benchmark). */
    const runToEnd = (account: AccountRecord, trigger: SyncTrigger) =>
      begin(account, trigger).pipe(
        Effect.tap(({ fiber }) => Fiber.join(fiber)),
        Effect.flatMap(({ sync: started }) => runs.find(account.projectId, started.syncId))
      )

    const interval = yield* SyncInterval
    if (interval > 0) {
      const due = sql`
        SELECT ${sql.unsafe(columnsOf(AccountRow, "a"))} FROM accounts a JOIN connections c ON c.org_id = a.org_id AND c.status = 'ok'
        WHERE a.status <> 'disconnected'
          AND (a.last_synced_at IS NULL OR a.last_synced_at < now() - make_interval(mins => ${interval}))
          AND NOT EXISTS (SELECT 1 FROM syncs s WHERE s.project_id = a.project_id AND s.status = 'running')
        ORDER BY a.last_synced_at NULLS FIRST LIMIT 20`.pipe(Effect.orDie, Effect.flatMap(decodeAccounts))
      yield* due.pipe(
        Effect.flatMap((list) =>
          Effect.forEach(list, (account) =>
            runToEnd(account, "schedule").pipe(
              Effect.catchAll((error) => Effect.logInfo("scheduled sync not started", error.message))
            ), { discard: true })
        ),
        Effect.catchAllCause((cause) => Effect.logWarning("sync schedule pass failed", cause)),
        Effect.repeat(Schedule.spaced(Duration.minutes(Math.min(interval, 1)))),
        Effect.delay(Duration.seconds(30)),
        Effect.forkIn(scope)
      )
    }

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
        for (const projectId of imported.created) {
          const account = yield* accounts.find(projectId)
          if (account._tag === "Some") yield* begin(account.value, "import").pipe(Effect.ignore)
        }
        return imported.accounts
      }).pipe(Effect.withSpan("Syncs.importAccounts"))

    return { begin, runToEnd, history, find, start, importAccounts } as const
  })
}) {}
