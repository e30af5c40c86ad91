/**
 * The ends of a run that are not an apply: the action failed (and, when the upstream refused the role, its
 * account marked read-only; when an upstream write failed, the circuit breaker counts it) or demoted to wait for a person, each in one transaction with the job's deletion.
 */
import type { ActionRecord, Failure } from "@acs/domain/Actions"
import type { UpstreamClient } from "@acs/upstream/Upstream"
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { markReadOnly } from "../accounts/Accounts.ts"
import { describeOutsideChange } from "../actions/outside/OutsideChangeText.ts"
import { outsideChangesTo } from "../actions/outside/OutsideChanges.ts"
import { touchedEntities } from "../actions/outside/TouchedEntities.ts"
import type { Transitions } from "../actions/pipeline/Transitions.ts"
import { isUpstreamWriteFailure, tripCircuitBreaker } from "../policy/Guardrails.ts"
import { type Lease, settled } from "./Lease.ts"

export const makeRunEndings = (sql: SqlClient.SqlClient, transitions: Transitions) => {
  /**
   * Fails the action and ends the job with it. `readOnly`: the upstream refused a write for the role, so the
   * account is marked until a sync sees it back.
   */
  const fail = (action: ActionRecord, failure: Failure, lease: Lease, options: { readonly readOnly?: boolean } = {}) =>
    settled(
      sql,
      lease,
      Effect.all([
        // A failed compensation frees its original (inside `fail`).
        transitions.fail(action, failure),
        options.readOnly === true ? markReadOnly(sql, action.projectId) : Effect.void,
        isUpstreamWriteFailure(failure) ? tripCircuitBreaker(sql, action.projectId) : Effect.void
      ], { discard: true })
    ).pipe(Effect.tap(() => Effect.logWarning("action failed").pipe(Effect.annotateLogs({ actionId: action.actionId, ...failure }))))

  const demote = (action: ActionRecord, reasons: ReadonlyArray<string>, lease: Lease) =>
    settled(sql, lease, transitions.demote(action, reasons)).pipe(
      Effect.tap(() => Effect.logInfo("action demoted").pipe(Effect.annotateLogs({ actionId: action.actionId, reasons })))
    )

  /**
   * What the change history says about a drift the re-read found: who changed the entity outside acs and
   * when (since the proposal), as a suffix of the demotion reason; empty when it says nothing more.
   */
  const whoChanged = (client: UpstreamClient, account: AccountRecord, action: ActionRecord) =>
    outsideChangesTo(client, account.upstreamAccountId, action.created_at, touchedEntities(action)).pipe(
      Effect.map((changes) => changes.length === 0 ? "" : `; ${describeOutsideChange(changes[0]!)}`),
      // The history is a better explanation, not a condition of the demotion.
      Effect.catchAll(() => Effect.succeed(""))
    )

  return { fail, demote, whoChanged } as const
}
