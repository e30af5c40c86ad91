/**
 * The spend-anomaly breaker (docs/contract.md 3.3, 3.4): after each sync, the account's spend in its latest complete
 * hour (the platform's hourly report, in the account's time zone) against its usual spend for that hour (the median
 * of the same hour on the 6 days before). Past the guardrails' `circuitBreaker.spendPerHourMultiple` (default 3) the
 * account's auto-apply pauses, as the write-failure breaker pauses it, until an admin resumes it. An hour with no
 * usual spend says nothing. The hours are read once per pass (HourlySpend.ts); an upstream without them (v5) is not
 * checked.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { money } from "../actions/kinds/KindSupport.ts"
import { pauseAutoApply, readGuardrails } from "../policy/Guardrails.ts"
import { type HourlySpend, type HourSpend, spendByHour, usualSpend } from "./HourlySpend.ts"

export interface Anomaly {
  readonly hour: string
  readonly spendMicros: number
  readonly usualMicros: number
}

/** The hour `latest` when its spend (all campaigns) is past `multiple` × its usual; else undefined. */
export const spendAnomaly = (rows: ReadonlyArray<HourSpend>, latest: string, multiple: number): Anomaly | undefined => {
  const byHour = spendByHour(rows)
  const usualMicros = usualSpend(byHour, latest)
  const spendMicros = byHour.get(latest) ?? 0
  return usualMicros > 0 && spendMicros > multiple * usualMicros ? { hour: latest, spendMicros, usualMicros } : undefined
}

export class SpendAnomaly extends Effect.Service<SpendAnomaly>()("acs/SpendAnomaly", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Pauses the account's auto-apply on an anomaly in the latest hour; answers the anomaly, if any. */
    const check = (account: AccountRecord, hourly: HourlySpend) =>
      Effect.gen(function*() {
        const { latest, rows } = hourly
        const { circuitBreaker } = yield* readGuardrails(sql, account.projectId)
        const anomaly = spendAnomaly(rows, latest, circuitBreaker.spendPerHourMultiple)
        if (anomaly === undefined) return undefined
        const reason = `spend anomaly: ${money(anomaly.spendMicros, account.currency)} spent in the hour ${latest.replace("T", " ")}:00, ` +
          `${(anomaly.spendMicros / anomaly.usualMicros).toFixed(1)}× its usual ${money(anomaly.usualMicros, account.currency)} ` +
          `(past ${circuitBreaker.spendPerHourMultiple}×)`
        yield* pauseAutoApply(sql, account.orgId, account.projectId, reason, "spend-anomaly breaker")
        return anomaly
      }).pipe(Effect.withSpan("SpendAnomaly.check"))

    return { check } as const
  })
}) {}
