/**
 * Human decisions on pending actions (write + canApprove): approve enqueues the apply job, reject ends the
 * action. Only `proposed` actions can be decided; anything else is 409 `conflict` — an expired one too, and
 * one whose approval TTL has passed is expired first (ApprovalExpiry). Who may approve is the org's `fourEyes`
 * rule over the approver's and the proposer's roots (@acs/domain/FourEyes); a proposer may always withdraw
 * (reject) their own action. An approval re-runs the
 * kind's local validation against the warehouse at once: 422 `validation_failed` (and the action stays
 * queued) when the account changed so that it no longer holds, instead of failing later at apply; likewise a
 * raise of daily budgets past the account's ceiling (docs/contract.md 3.3), checked under the account's lock so
 * that two approvals on two instances cannot both pass it. A high-risk change needs two people: the first
 * approval is recorded and the action stays queued; the second must come from another person.
 */
import type { ActionRecord } from "@acs/domain/Actions"
import { Conflict, ForbiddenScope, NotFound, ValidationFailed } from "@acs/domain/Errors"
import { type Party, mayApprove, maySecondApprove } from "@acs/domain/FourEyes"
import type { Principal } from "@acs/domain/Principal"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Schema } from "effect"
import type { AccountRecord } from "../../accounts/AccountRecord.ts"
import type { Granted } from "../../auth/Access.ts"
import { TestDatabase } from "../../db/TestDatabase.ts"
import { accountEnvelope, lockAccount } from "../../policy/AutoApplyWindow.ts"
import { envelopeReasons, RAISING_KINDS } from "../../policy/Envelope.ts"
import { Guardrails } from "../../policy/Guardrails.ts"
import { highRiskReason } from "../../policy/HighRisk.ts"
import { OrgSettings } from "../../settings/Settings.ts"
import { Jobs } from "../../queue/Jobs.ts"
import { WorkerSignal } from "../../queue/WorkerSignal.ts"
import { ApprovalExpiry } from "./ApprovalExpiry.ts"
import { kindNamed } from "../kinds/Catalog.ts"
import { money } from "../kinds/KindSupport.ts"
import { Ledger } from "./Ledger.ts"
import { actorOf } from "./Proposals.ts"
import { Transitions } from "./Transitions.ts"
import { warehouseView } from "../kinds/WarehouseView.ts"


export class Approvals extends Effect.Service<Approvals>()("acs/Approvals", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ledger = yield* Ledger
    const transitions = yield* Transitions
    const jobs = yield* Jobs
    const signal = yield* WorkerSignal
    const settings = yield* OrgSettings
    const expiry = yield* ApprovalExpiry
    const guardrails = yield* Guardrails

    /** The kind's local validation, against the warehouse as it is now (the apply worker checks it again). */
    const revalidate = (account: AccountRecord, action: ActionRecord) =>
      // Outside changes are recorded applied and never queued.
      action.kind === "external_change" ? Effect.void : kindNamed(action.kind).use((definition) =>
        Effect.gen(function*() {
          const payload = yield* Schema.decodeUnknown(definition.payload)(action.payload).pipe(Effect.orDie)
          const view = yield* warehouseView(account).pipe(Effect.provideService(SqlClient.SqlClient, sql))
          yield* definition.recheck(payload, view).pipe(
            Effect.mapError((rejection) => {
              const errors = rejection._tag === "ValidationFailed" ? rejection.validation_errors : [rejection.message]
              return new ValidationFailed({
                message: `the account changed since this action was proposed, and it no longer holds: ${errors.join("; ")}`,
                validation_errors: errors,
                action_id: action.actionId
              })
            })
          )
        })
      )

    /** A raise of daily budgets must fit under the account's ceiling with the raises already approved. */
    const requireUnderCeiling = (account: AccountRecord, action: ActionRecord) =>
      Effect.gen(function*() {
        if (!RAISING_KINDS.has(action.kind)) return
        // The account's lock, held to the commit, as a proposal takes it: no other approval or proposal moves the
        // sums before this one is decided. Taken only here: approvals of other kinds never wait for it.
        yield* lockAccount(account.projectId).pipe(Effect.provideService(SqlClient.SqlClient, sql))
        const { raise, state } = yield* accountEnvelope(account.projectId, { of: "change", kind: action.kind, payload: action.payload }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
        const { ceiling } = envelopeReasons(state, raise, (micros) => money(micros, account.currency))
        if (ceiling !== undefined) {
          return yield* new ValidationFailed({ message: ceiling, validation_errors: [ceiling], action_id: action.actionId })
        }
      })

    const requireMayApprove = (approver: Principal, proposer: Party) =>
      Effect.gen(function*() {
        const verdict = mayApprove((yield* settings.read(approver.orgId)).fourEyes, approver, proposer)
        if (!verdict.allowed) return yield* new ForbiddenScope({ message: `four eyes: ${verdict.reason}`, required_grant: "second_approver" })
      })

    const pendingAction = (projectId: string, actionId: string) =>
      Effect.gen(function*() {
        const action = yield* ledger.lock(projectId, actionId)
        if (action === undefined) return yield* new NotFound({ message: `no action ${actionId} in this account` })
        if (action.status !== "proposed") {
          return yield* new Conflict({ message: `action ${actionId} is ${action.status}, not pending: only proposed actions can be decided` })
        }
        if (action.changesetId !== null) {
          return yield* new Conflict({
            message: `action ${actionId} is a member of changeset ${action.changesetId}: it is decided with its changeset, not on its own`
          })
        }
        return action
      })

    const approve = (grant: Granted<"approveAction">, actionId: string) =>
      // Past its time, it expires now (committed, with its event), and the decision below answers 409.
      expiry.expireIfDue(grant.account.projectId, actionId).pipe(Effect.zipRight(sql.withTransaction(
        Effect.gen(function*() {
          const projectId = grant.account.projectId
          const action = yield* pendingAction(projectId, actionId)
          yield* requireMayApprove(grant.principal, action.proposedBy)
          yield* revalidate(grant.account, action)
          yield* requireUnderCeiling(grant.account, action)
          const by = actorOf(grant.principal)
          // Two people for high risk, by the account's guardrails now: the first approval is recorded, the
          // action stays queued for a second from another person.
          const twoPeople = highRiskReason(action.kind, action.payload, (yield* guardrails.read(projectId)).highRisk)
          if (twoPeople !== null) {
            const first = action.approvals[0]
            if (first === undefined) {
              yield* transitions.recordFirstApproval({ projectId, actionId }, by)
              return (yield* ledger.find(projectId, actionId))!
            }
            const second = maySecondApprove(first.by, grant.principal)
            if (!second.allowed) return yield* new ForbiddenScope({ message: second.reason, required_grant: "second_approver" })
          }
          // The row is locked and proposed, so the guarded transition happens.
          yield* transitions.approve({ projectId, actionId }, by)
          yield* jobs.enqueue(actionId, projectId)
          // The answer is the action as approved: read before the commit, since a woken worker may apply it (or
          // fail it) before a read after the commit.
          return (yield* ledger.find(projectId, actionId))!
        })
      ))).pipe(
        Effect.catchTag("SqlError", Effect.die),
        Effect.tap((action) => signal.wake(action.projectId)),
        Effect.withSpan("Approvals.approve")
      )

    const reject = (grant: Granted<"rejectAction">, actionId: string, reason: string | undefined) =>
      sql.withTransaction(
        Effect.gen(function*() {
          yield* pendingAction(grant.account.projectId, actionId)
          // A rejected compensating action leaves its original revertible again (inside `reject`).
          yield* transitions.reject({ projectId: grant.account.projectId, actionId }, actorOf(grant.principal), reason)
        })
      ).pipe(
        Effect.catchTag("SqlError", Effect.die),
        Effect.zipRight(ledger.find(grant.account.projectId, actionId)),
        Effect.map((record) => record!),
        Effect.withSpan("Approvals.reject")
      )

    return { approve, reject } as const
  }),
  // WorkerSignal (one per instance, shared with the workers) comes from the application layer.
  dependencies: [OrgSettings.Default, Guardrails.Default, Ledger.Default, Transitions.Default, Jobs.Default, ApprovalExpiry.Default]
}) {
  /** Over the embedded test database (db/TestDatabase.ts), with the worker's wake-up it signals, for in-process tests. */
  static readonly Test = Approvals.Default.pipe(Layer.provideMerge(WorkerSignal.Default), Layer.provideMerge(TestDatabase))
}
