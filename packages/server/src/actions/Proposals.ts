/**
 * A proposal, in one transaction (DESIGN "Data and concurrency"): the idempotency row first, then the
 * account's lock, local validation against the warehouse, the policy with the 24-hour count, the ledger
 * row and, when it auto-applies, the apply job. A validation failure commits its failed ledger row and
 * answers 422 with that row's id. A preview runs the same validation and policy and writes nothing.
 */
import type { ProposalPreview, ProposalResponse } from "@acs/domain/Actions"
import { type Conflict, ReadOnlyAccount, ValidationFailed } from "@acs/domain/Errors"
import type { Principal } from "@acs/domain/Principal"
import type { ProposalOperationName } from "@acs/domain/ProposalKinds"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Granted } from "../accounts/Granted.ts"
import { autoAppliesLast24h, lockAccount, lockAccountShared } from "../policy/AutoApplyWindow.ts"
import { decide } from "../policy/Policy.ts"
import { OrgSettings } from "../settings/Settings.ts"
import { Jobs } from "../queue/Jobs.ts"
import { WorkerSignal } from "../queue/WorkerSignal.ts"
import { Idempotency, type StoredAnswer } from "./Idempotency.ts"
import type { Kind, Rejection } from "./Kind.ts"
import { requireNone } from "./kinds/KindSupport.ts"
import { Ledger, toProposalResponse } from "./Ledger.ts"
import { minorUnitReasons } from "./MinorUnits.ts"
import { Transitions } from "./Transitions.ts"
import { policyFacts, warehouseView } from "./WarehouseView.ts"

export interface ProposalRequest {
  /** The grant of the kind's proposal operation: who proposes, on which account. */
  readonly grant: Granted<ProposalOperationName>
  readonly kind: Kind
  readonly body: unknown
  readonly idempotency: { readonly key: string; readonly hash: string } | undefined
}

export interface ProposalOutcome {
  readonly response: ProposalResponse
  readonly replayed: boolean
}

export const actorOf = (principal: Principal) => ({ kind: principal.kind, id: principal.id, name: principal.name })

const principalKey = (principal: Principal) => `${principal.kind}:${principal.id}`

export class Proposals extends Effect.Service<Proposals>()("acs/Proposals", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ledger = yield* Ledger
    const transitions = yield* Transitions
    const jobs = yield* Jobs
    const idempotency = yield* Idempotency
    const settings = yield* OrgSettings
    const signal = yield* WorkerSignal

    const validationFailure = (answer: Extract<StoredAnswer, { status: 422 }>) =>
      new ValidationFailed({ message: answer.message, validation_errors: answer.validationErrors, action_id: answer.actionId })

    /** A stored answer as a replay gets it: the 422 again, or the action's current state with `replayed`. */
    const replay = (projectId: string, answer: StoredAnswer) =>
      Effect.gen(function*() {
        if (answer.status === 422) return yield* validationFailure(answer)
        const record = yield* ledger.find(projectId, answer.actionId)
        if (record === undefined) return yield* Effect.dieMessage(`replayed action ${answer.actionId} is missing`)
        return { response: { ...toProposalResponse(record), replayed: true }, replayed: true } satisfies ProposalOutcome
      })

    /**
     * Local validation and the policy, the part a proposal and its preview share (API.md "Preview"): the
     * account's read-only refusal, the kind's validation against the warehouse (with prior state), then
     * the policy with the kill switch and the 24-hour auto-apply count. Runs inside the caller's
     * transaction, under the account's lock; writes nothing. A validation failure is returned, not failed.
     */
    const evaluate = (grant: Granted<ProposalOperationName>, kind: Kind, body: unknown) =>
      Effect.gen(function*() {
        const { account, principal } = grant
        if (account.readOnly) {
          return yield* new ReadOnlyAccount({
            message: "the upstream credential has no account-manager role on this account, so no change can be applied"
          })
        }
        const view = yield* warehouseView(account)
        const amounts = minorUnitReasons(body, account.currency)
        const prepared = yield* kind.use((definition) =>
          definition.prepare(body, view).pipe(
            // Amounts finer than the currency allows join the kind's own reasons (every reason at once).
            Effect.catchTag("ValidationFailed", (error) =>
              Effect.fail(new ValidationFailed({ message: error.message, validation_errors: [...error.validation_errors, ...amounts] }))),
            Effect.tap(() => requireNone(amounts)),
            Effect.map(({ payload, summary }) => ({
              payload,
              summary,
              verdict: Effect.flatMap(policyFacts(account), (facts) => definition.autoApply(payload, facts))
            }))
          )
        ).pipe(Effect.either)
        if (prepared._tag === "Left") {
          const rejection: Rejection = prepared.left
          if (rejection._tag !== "ValidationFailed") return yield* rejection
          return { _tag: "Invalid" as const, rejection }
        }
        const verdict = yield* prepared.right.verdict
        const [switchState, window] = yield* Effect.all([settings.read(account.orgId), autoAppliesLast24h(account.projectId)])
        const decision = decide({
          proposedBy: principal.kind,
          killSwitchOn: switchState.platformAutoApply,
          accountStatus: account.status,
          autoAppliesLast24h: window.used,
          reviewTier: kind.reviewTier,
          verdict
        })
        return { _tag: "Valid" as const, payload: prepared.right.payload, summary: prepared.right.summary, decision }
      })

    /** Runs inside the transaction; a validation failure is returned (not failed) so its row commits. */
    const record = (request: ProposalRequest) =>
      Effect.gen(function*() {
        const { kind } = request
        const { account, principal } = request.grant
        const reason = typeof request.body === "object" && request.body !== null && "reason" in request.body
          ? String(request.body.reason)
          : ""
        yield* lockAccount(account.projectId)
        const evaluated = yield* evaluate(request.grant, kind, request.body)
        if (evaluated._tag === "Invalid") {
          const { rejection } = evaluated
          const failed = yield* transitions.append({
            orgId: account.orgId,
            projectId: account.projectId,
            kind: kind.kind,
            mode: null,
            status: "failed",
            riskTier: kind.reviewTier,
            policyReasons: [],
            summary: `Rejected ${kind.kind} proposal`,
            reason,
            payload: request.body,
            proposedBy: actorOf(principal),
            failure: { step: null, stepName: null, message: rejection.validation_errors.join("; "), upstreamRequestId: null },
            countsTowardCap: false
          })
          const answer = {
            status: 422 as const,
            actionId: failed.actionId,
            validationErrors: rejection.validation_errors,
            message: rejection.message
          }
          return { _tag: "Rejected" as const, answer }
        }
        const { decision } = evaluated
        const auto = decision.mode === "auto_applied"
        const action = yield* transitions.append({
          orgId: account.orgId,
          projectId: account.projectId,
          kind: kind.kind,
          mode: decision.mode,
          status: auto ? "approved" : "proposed",
          riskTier: decision.riskTier,
          policyReasons: decision.reasons,
          summary: evaluated.summary,
          reason,
          payload: evaluated.payload,
          proposedBy: actorOf(principal),
          countsTowardCap: auto
        })
        if (auto) yield* jobs.enqueue(action.actionId, account.projectId)
        return { _tag: "Recorded" as const, action, answer: { status: 201, actionId: action.actionId } as StoredAnswer }
      })

    const propose = (request: ProposalRequest) =>
      Effect.gen(function*() {
        const key = request.idempotency
        const outcome = yield* sql.withTransaction(
          Effect.gen(function*() {
            if (key !== undefined) {
              const claim = yield* idempotency.claim(principalKey(request.grant.principal), key.key, key.hash)
              if (claim._tag === "Replay") return { _tag: "Replay" as const, answer: claim.answer }
            }
            const recorded = yield* record(request)
            if (key !== undefined) yield* idempotency.store(principalKey(request.grant.principal), key.key, recorded.answer)
            return recorded
          })
        ).pipe(Effect.catchTag("SqlError", Effect.die))
        switch (outcome._tag) {
          case "Replay":
            return yield* replay(request.grant.account.projectId, outcome.answer)
          case "Rejected":
            return yield* validationFailure(outcome.answer)
          case "Recorded": {
            if (outcome.action.status === "approved") yield* signal.wake
            return { response: toProposalResponse(outcome.action), replayed: false } satisfies ProposalOutcome
          }
        }
      }).pipe(Effect.withSpan("Proposals.propose", { attributes: { kind: request.kind.kind } }))

    /**
     * A proposal's dry run (API.md "Preview"): the same validation and policy as `propose`, in a read-only
     * transaction that holds the account's lock in its shared form — it waits for a proposal being
     * recorded, so it counts that proposal's auto-apply, but blocks no other preview and only as long as it
     * reads. No ledger row, job or idempotency row; a validation failure is a 422 without `action_id`.
     */
    const preview = (grant: Granted<ProposalOperationName>, kind: Kind, body: unknown) =>
      sql.withTransaction(
        Effect.gen(function*() {
          yield* sql`SET TRANSACTION READ ONLY`
          yield* lockAccountShared(grant.account.projectId)
          const evaluated = yield* evaluate(grant, kind, body)
          if (evaluated._tag === "Invalid") {
            return yield* new ValidationFailed({
              message: evaluated.rejection.message,
              validation_errors: evaluated.rejection.validation_errors
            })
          }
          const payload = evaluated.payload
          if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
            return yield* Effect.dieMessage(`${kind.kind}: a prepared payload is not an object`)
          }
          return {
            kind: kind.kind,
            mode: evaluated.decision.mode,
            riskTier: evaluated.decision.riskTier,
            policyReasons: evaluated.decision.reasons,
            summary: evaluated.summary,
            payload: payload as Readonly<Record<string, unknown>>
          } satisfies ProposalPreview
        })
      ).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Proposals.preview", { attributes: { kind: kind.kind } }))

    return { propose, preview } as const
  })
}) {}

export type ProposalError = Rejection | ReadOnlyAccount | Conflict
