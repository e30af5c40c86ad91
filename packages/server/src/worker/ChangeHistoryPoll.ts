/**
 * The change-history poll of this instance: every CHANGE_HISTORY_POLL_SECONDS (default 60, 0 = off) each
 * connected account whose client has a change history (v1) is read for outside changes, between syncs.
 * Several instances may poll at once: the ledger keeps one row per outside change.
 */
import { SqlClient } from "@effect/sql"
import { Config, Duration, Effect, Layer, Schedule, Schema } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { Accounts } from "../accounts/Accounts.ts"
import { Connections } from "../accounts/Connections.ts"
import { OutsideChanges } from "../actions/outside/OutsideChanges.ts"

export const ChangeHistoryPollSeconds = Config.integer("CHANGE_HISTORY_POLL_SECONDS").pipe(Config.withDefault(60))

const PolledAccount = Schema.Struct({ projectId: Schema.String, orgId: Schema.String })

export const ChangeHistoryPollLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const seconds = yield* ChangeHistoryPollSeconds
    if (seconds <= 0) return
    const sql = yield* SqlClient.SqlClient
    const connections = yield* Connections
    const accounts = yield* Accounts
    const outside = yield* OutsideChanges

    const connected = sql`
      SELECT a.project_id, a.org_id FROM accounts a JOIN connections c ON c.org_id = a.org_id AND c.status = 'ok'
      WHERE a.status <> 'disconnected' ORDER BY a.org_id, a.project_id`.pipe(
      Effect.flatMap(Schema.decodeUnknown(Schema.Array(PolledAccount))),
      Effect.orDie
    )

    const pollOrg = (orgId: string, projectIds: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const client = yield* connections.clientFor(orgId)
        if (client.changeHistory === undefined) return
        for (const projectId of projectIds) {
          const found = yield* accounts.find(projectId)
          if (found._tag === "None") continue
          const account: AccountRecord = found.value
          yield* outside.record(client, account).pipe(
            Effect.catchAll((error) => Effect.logInfo("change history not read", error.message).pipe(Effect.annotateLogs({ projectId })))
          )
        }
      }).pipe(Effect.catchAll((error) => Effect.logInfo("change history poll skipped an org", error.message).pipe(Effect.annotateLogs({ orgId }))))

    const pass = connected.pipe(
      Effect.flatMap((rows) => {
        const byOrg = new Map<string, Array<string>>()
        for (const row of rows) byOrg.set(row.orgId, [...(byOrg.get(row.orgId) ?? []), row.projectId])
        return Effect.forEach(byOrg, ([orgId, projectIds]) => pollOrg(orgId, projectIds), { discard: true })
      }),
      Effect.catchAllCause((cause) => Effect.logWarning("change history poll pass failed", cause)),
      Effect.withSpan("ChangeHistoryPoll.pass")
    )

    yield* pass.pipe(
      Effect.repeat(Schedule.spaced(Duration.seconds(seconds))),
      Effect.delay(Duration.seconds(seconds)),
      Effect.forkScoped
    )
  })
)
