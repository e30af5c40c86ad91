/**
 * Revert (write + canApprove): the compensating change of an applied action is proposed and applied at once,
 * also with the kill switch off (undo must work during an incident). If the entity changed upstream since
 * the action applied, the compensating action queues for review instead, naming the drift, or the outside
 * change the ledger recorded (`supersededBy`), which it must not silently overwrite. Its preview makes the same
 * checks and answers what the revert would record, writing nothing.
 */
import { type Actor, ExternalChangePayload, type ProposalPreview } from "@acs/domain/Actions"
import { NotFound, NotRevertible, ReadOnlyAccount } from "@acs/domain/Errors"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { Connections } from "../../accounts/Connections.ts"
import type { AccountRecord } from "../../accounts/AccountRecord.ts"
import type { Granted } from "../../auth/Access.ts"
import { lockAccount } from "../../policy/AutoApplyWindow.ts"
import { OrgSettings } from "../../settings/Settings.ts"
import { Jobs } from "../../queue/Jobs.ts"
import { WorkerSignal } from "../../queue/WorkerSignal.ts"
import { kindNamed } from "../kinds/Catalog.ts"
import { compensationOf } from "./Compensation.ts"
import { Ledger, toProposalResponse } from "./Ledger.ts"
import { describeOutsideChange } from "../outside/OutsideChangeText.ts"
import { autoRevertHeld, GUARD_ACTOR, guardRevertDecision } from "./AutoRevertGate.ts"
import { actorOf } from "./Proposals.ts"
import { Transitions } from "./Transitions.ts"

const APPLIES_AT_ONCE = "revert: the compensating change applies at once, also with the kill switch off (undo must work during an incident)"

export class Revert extends Effect.Service<Revert>()("acs/Revert", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ledger = yield* Ledger
    const transitions = yield* Transitions
    const jobs = yield* Jobs
    const connections = yield* Connections
    const signal = yield* WorkerSignal
    const settings = yield* OrgSettings

    /** "changed outside acs by … (web UI) at … (action act_…)": the outside change a revert must not overwrite. */
    const outsideChangeText = (projectId: string, externalActionId: string) =>
      ledger.find(projectId, externalActionId).pipe(Effect.map((external) => {
        const upstream = external === undefined ? undefined : Schema.decodeUnknownOption(ExternalChangePayload)(external.payload)
        return upstream === undefined || upstream._tag === "None"
          ? `changed outside acs (action ${externalActionId})`
          : `${describeOutsideChange(upstream.value.upstream)} (action ${externalActionId})`
      }))

    /**
     * The checks a revert makes and the compensating change it would record: the original applied and not yet
     * reverted, its inverse, and whether it queues (drift upstream, or an outside change since). Writes nothing.
     */
    const plan = (account: AccountRecord, actionId: string) =>
      Effect.gen(function*() {
        if (account.readOnly) {
          return yield* new ReadOnlyAccount({ message: "the upstream credential cannot write to this account, so nothing can be reverted" })
        }
        const original = yield* ledger.find(account.projectId, actionId)
        if (original === undefined) return yield* new NotFound({ message: `no action ${actionId} in this account` })
        const refuse = (why: string) => new NotRevertible({ message: `action ${actionId} cannot be reverted: ${why}` })
        if (original.kind === "external_change") return yield* refuse("it is a change made outside acs")
        if (original.revertOf !== null) return yield* refuse("it is itself a compensating action")
        if (original.status === "reverted" || original.revertedBy !== null) {
          return yield* refuse(`it was already reverted by ${original.revertedBy ?? "an earlier revert"}`)
        }
        if (original.status !== "applied") return yield* refuse(`it is ${original.status}, not applied`)
        const inverse = compensationOf(original)
        if (inverse === undefined) return yield* refuse(`${original.kind} has no compensating change`)
        const compensation = kindNamed(inverse.kind)
        // Drift since the apply: the compensating payload's prior state is what the original applied.
        const client = yield* connections.clientFor(account.orgId)
        const context = { client, accountId: account.upstreamAccountId, ids: {}, acceptDrift: false }
        const drift = yield* compensation.use((definition) =>
          definition.drift(Schema.decodeUnknownSync(definition.payload)(inverse.payload), context)
        ).pipe(
          // An entity gone upstream is the strongest drift: the revert waits for a person.
          Effect.catchTag("NotFound", (error) => Effect.succeed(`the entity is gone upstream (${error.message})`))
        )
        const conflicts = yield* compensation.use((definition) =>
          definition.conflicts === undefined
            ? Effect.succeed([])
            : definition.conflicts(Schema.decodeUnknownSync(definition.payload)(inverse.payload), context)
        )
        const superseded = original.supersededBy === null ? null : yield* outsideChangeText(account.projectId, original.supersededBy)
        const reasons = [
          ...(superseded === null ? [] : [
            `superseded: ${superseded}; a revert queues for review instead of overwriting a change made outside acs`
          ]),
          ...(drift === null ? [] : [`drift: ${drift}`, "a revert queues for review when the entity changed upstream since the action applied"])
        ]
        const queued = reasons.length > 0
        return {
          inverse,
          refuse,
          queued,
          riskTier: compensation.reviewTier === "high" ? "high" as const : "review" as const,
          policyReasons: queued ? [...reasons, ...conflicts] : [APPLIES_AT_ONCE, ...conflicts]
        }
      })

    /** `?preview=true`: what the revert would record (docs/contract.md 4.1), nothing written. */
    const preview = (grant: Granted<"revertAction">, actionId: string) =>
      Effect.gen(function*() {
        const { inverse, policyReasons, queued, riskTier } = yield* plan(grant.account, actionId)
        const payload = inverse.payload
        if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
          return yield* Effect.dieMessage(`${inverse.kind}: a compensating payload is not an object`)
        }
        return {
          kind: inverse.kind,
          mode: queued ? "queued" : "auto_applied",
          riskTier,
          policyReasons,
          summary: inverse.summary,
          payload: payload as Readonly<Record<string, unknown>>
        } satisfies ProposalPreview
      }).pipe(Effect.withSpan("Revert.preview"))

    /** Records the compensating action (queued, or approved and enqueued) and links it to the original, in one transaction. */
    const record = (
      account: AccountRecord,
      actionId: string,
      planned: Effect.Effect.Success<ReturnType<typeof plan>>,
      how: { readonly proposedBy: Actor; readonly reason: string; readonly queued: boolean; readonly policyReasons: ReadonlyArray<string>; readonly countsTowardCap: boolean }
    ) =>
      Effect.gen(function*() {
        const { inverse, refuse, riskTier } = planned
        const response = yield* sql.withTransaction(
          Effect.gen(function*() {
            yield* lockAccount(account.projectId)
            const locked = yield* ledger.lock(account.projectId, actionId)
            if (locked === undefined || locked.revertedBy !== null || locked.status !== "applied") {
              return yield* refuse("another revert of it was accepted first")
            }
            const action = yield* transitions.append({
              orgId: account.orgId,
              projectId: account.projectId,
              kind: inverse.kind,
              mode: how.queued ? "queued" : "auto_applied",
              status: how.queued ? "proposed" : "approved",
              riskTier,
              policyReasons: how.policyReasons,
              summary: inverse.summary,
              reason: how.reason,
              payload: inverse.payload,
              proposedBy: how.proposedBy,
              revertOf: actionId,
              countsTowardCap: how.countsTowardCap
            })
            // The original is locked and checked above; a lost race still rolls the whole revert back.
            if (!(yield* transitions.linkRevert(account.projectId, actionId, action.actionId))) {
              return yield* refuse("another revert of it was accepted first")
            }
            if (!how.queued) yield* jobs.enqueue(action.actionId, account.projectId)
            return toProposalResponse(action)
          })
        ).pipe(Effect.catchTag("SqlError", Effect.die))
        if (!how.queued) yield* signal.wake(account.projectId)
        return response
      })

    const revert = (grant: Granted<"revertAction">, actionId: string) =>
      Effect.flatMap(plan(grant.account, actionId), (planned) =>
        record(grant.account, actionId, planned, {
          proposedBy: actorOf(grant.principal),
          reason: `revert of ${actionId}`,
          queued: planned.queued,
          policyReasons: planned.policyReasons,
          countsTowardCap: false
        })).pipe(Effect.withSpan("Revert.revert"))

    /**
     * The guard's revert of a change its review failed (docs/contract.md 3.4), with the verdict as its reason: queued
     * for a person, or under `auto_revert` applied like any auto-applied proposal, so only when the org's kill
     * switch is on, the account's auto-apply is not paused, the 24-hour cap has room (it counts toward it), nothing
     * drifted, and it raises no budget (a raise waits for a person, as the spend envelope would want).
     */
    const guardRevert = (account: AccountRecord, actionId: string, reason: string, autoRevert: boolean) =>
      Effect.gen(function*() {
        const planned = yield* plan(account, actionId)
        const held = planned.queued
          ? [...planned.policyReasons]
          : autoRevert ? yield* autoRevertHeld(sql, settings, account, [planned.inverse.payload]) : []
        const { policyReasons, queued } = guardRevertDecision(autoRevert, held)
        return yield* record(account, actionId, planned, { proposedBy: GUARD_ACTOR, reason, queued, policyReasons, countsTowardCap: !queued })
      }).pipe(Effect.withSpan("Revert.guardRevert"))

    return { preview, revert, guardRevert } as const
  }),
  // Connections (over the upstream port) and WorkerSignal (one per instance, shared with the workers) come
  // from the application layer.
  dependencies: [Ledger.Default, Transitions.Default, Jobs.Default]
}) {}
