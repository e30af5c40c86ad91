/**
 * When the guard's revert may apply on its own under `guard.onFail: "auto_revert"` (docs/contract.md 3.4): as an
 * auto-applied proposal could, so only with the org's kill switch on, the account's auto-apply not paused, room under
 * the 24-hour cap for its changes (they count toward it), and no daily budget raised (a raise waits for a person, as
 * the spend envelope would want). Answers the reasons that hold it for a person; none: it may apply.
 */
import type { Actor } from "@acs/domain/Actions"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { AccountRecord } from "../../accounts/AccountRecord.ts"
import { autoAppliesLast24h } from "../../policy/AutoApplyWindow.ts"
import { readGuardrails } from "../../policy/Guardrails.ts"
import { AUTO_APPLY_LIMIT_PER_24H } from "../../policy/Policy.ts"
import type { OrgSettings } from "../../settings/Settings.ts"

/** Who proposes the guard's reverts in the ledger. */
export const GUARD_ACTOR: Actor = { kind: "system", id: "guard", name: "the guard" }

/** A compensating budget change that raises the budget. */
const raisesBudget = (payload: unknown): boolean =>
  typeof payload === "object" && payload !== null && "newDailyBudgetMicros" in payload && "priorDailyBudgetMicros" in payload &&
  typeof payload.newDailyBudgetMicros === "number" && typeof payload.priorDailyBudgetMicros === "number" &&
  payload.newDailyBudgetMicros > payload.priorDailyBudgetMicros

export const autoRevertHeld = (
  sql: SqlClient.SqlClient,
  settings: OrgSettings,
  account: AccountRecord,
  payloads: ReadonlyArray<unknown>
) =>
  Effect.gen(function*() {
    const held: Array<string> = []
    if (!(yield* settings.read(account.orgId)).platformAutoApply) held.push("kill switch: platformAutoApply is off for this organisation")
    const guardrails = yield* readGuardrails(sql, account.projectId)
    if (guardrails.autoApplyPaused !== null) held.push(`auto-apply is paused for this account: ${guardrails.autoApplyPaused.reason}`)
    const { used } = yield* autoAppliesLast24h(account.projectId).pipe(Effect.provideService(SqlClient.SqlClient, sql))
    if (used + payloads.length > AUTO_APPLY_LIMIT_PER_24H) {
      held.push(`the account has ${used} auto-applies in the last 24 hours: ${payloads.length} more would pass ${AUTO_APPLY_LIMIT_PER_24H}`)
    }
    if (payloads.some(raisesBudget)) held.push("it raises a daily budget, which a person decides")
    return held
  })

/** Whether the guard's revert queues, and the reasons it records, given what holds it for a person. */
export const guardRevertDecision = (autoRevert: boolean, held: ReadonlyArray<string>) => {
  const queued = !autoRevert || held.length > 0
  return {
    queued,
    policyReasons: queued
      ? [autoRevert ? "the guard's revert waits for a person" : "the guard proposes the revert: guard.onFail is propose_revert", ...held]
      : ["the guard's revert auto-applies: guard.onFail is auto_revert"]
  }
}
