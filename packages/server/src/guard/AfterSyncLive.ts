/**
 * What runs after a sync that succeeded (warehouse/AfterSync.ts): the change history first, so the outside changes
 * the fresh copy may reveal are in the ledger; then the platform's hourly report, read once for the spend-anomaly
 * breaker (the latest hour) and the guard's pass (its hourly lanes), whose reviews name those outside changes as
 * confounders; last Apple's recommendations (warehouse/Recommendations.ts). Each step's failure is logged, not the sync's, and
 * never keeps the next one from running.
 */
import type { UpstreamClient } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { OutsideChanges } from "../actions/outside/OutsideChanges.ts"
import { AfterSync } from "../warehouse/AfterSync.ts"
import { Recommendations } from "../warehouse/Recommendations.ts"
import { readHourlySpend } from "./HourlySpend.ts"
import { SpendAnomaly } from "./SpendAnomaly.ts"
import { Watches } from "./Watches.ts"

const logged = (what: string) => <A, E, R>(step: Effect.Effect<A, E, R>) =>
  step.pipe(Effect.asVoid, Effect.catchAllCause((cause) => Effect.logWarning(`${what} after the sync failed`, cause)))

export const AfterSyncLive = Layer.effect(
  AfterSync,
  Effect.gen(function*() {
    const outside = yield* OutsideChanges
    const anomaly = yield* SpendAnomaly
    const watches = yield* Watches
    const recommendations = yield* Recommendations
    const sql = yield* SqlClient.SqlClient
    return {
      run: (client: UpstreamClient, account: AccountRecord) =>
        Effect.gen(function*() {
          yield* outside.record(client, account).pipe(logged("reading the change history"))
          const hourly = yield* readHourlySpend(client, account).pipe(
            Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("reading the hourly report after the sync failed", cause), undefined))
          )
          if (hourly !== undefined) yield* anomaly.check(account, hourly).pipe(logged("the spend-anomaly check"))
          yield* watches.pass(account, hourly).pipe(logged("the guard's pass"))
          yield* recommendations.sync(client, account).pipe(logged("reading Apple's recommendations"))
        }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
    }
  })
).pipe(Layer.provide(Recommendations.Default))
