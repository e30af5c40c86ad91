/**
 * What runs after a sync that succeeded (warehouse/AfterSync.ts): the change history first, so the outside changes
 * the fresh copy may reveal are in the ledger, then the guard's pass, whose reviews name them as confounders. The
 * guard's failure is logged, not the sync's, and never stops the outside changes from being recorded.
 */
import type { UpstreamClient } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { OutsideChanges } from "../actions/outside/OutsideChanges.ts"
import { AfterSync } from "../warehouse/AfterSync.ts"
import { Watches } from "./Watches.ts"

export const AfterSyncLive = Layer.effect(
  AfterSync,
  Effect.gen(function*() {
    const outside = yield* OutsideChanges
    const watches = yield* Watches
    const sql = yield* SqlClient.SqlClient
    return {
      run: (client: UpstreamClient, account: AccountRecord) =>
        outside.record(client, account).pipe(
          Effect.ensuring(watches.pass(account).pipe(
            Effect.catchAllCause((cause) => Effect.logWarning("the guard's pass after the sync failed", cause))
          )),
          Effect.provideService(SqlClient.SqlClient, sql)
        )
    }
  })
)
