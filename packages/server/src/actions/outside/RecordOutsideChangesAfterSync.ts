/** After a sync, the change history: a fresh copy is the moment to record what changed outside acs. */
import type { UpstreamClient } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import type { AccountRecord } from "../../accounts/AccountRecord.ts"
import { AfterSync } from "../../warehouse/AfterSync.ts"
import { OutsideChanges } from "./OutsideChanges.ts"

export const RecordOutsideChangesAfterSync = Layer.effect(
  AfterSync,
  Effect.gen(function*() {
    const outside = yield* OutsideChanges
    const sql = yield* SqlClient.SqlClient
    return {
      run: (client: UpstreamClient, account: AccountRecord) =>
        outside.record(client, account).pipe(Effect.provideService(SqlClient.SqlClient, sql))
    }
  })
)
