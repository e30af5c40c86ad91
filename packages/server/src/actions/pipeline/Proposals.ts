/**
 * A proposal (docs/decisions/pipeline.md): every read first, without a lock or a transaction — the
 * account's read-only refusal, the kind's validation against the warehouse, the policy's facts, the kill
 * switch and the account's guardrails (a cooldown, two people) — then the locked part as ONE statement
 * (ProposalStatement.ts): the account's lock, the 24-hour auto-apply count and the spend envelope, the ledger row
 * and, when it auto-applies, the apply job and its NOTIFY. The count and the envelope are the only inputs of the
 * decision read under the lock: the decision is made beforehand as if nothing there held it, with the reasons
 * that follow a hold, and the statement adds the holds it reads. A validation failure commits its failed ledger row the same way and
 * answers 422 with that row's id. With an `Idempotency-Key` the key's row (with its answer: the action's id
 * is chosen before the statement) is claimed first in a transaction around the statement. A preview runs the
 * same validation and policy and writes nothing.
 */
import type { ActionRecord, ProposalPreview, ProposalResponse } from "@acs/domain/Actions"
import type { Guardrails as GuardrailsDocument } from "@acs/domain/Guardrails"
import { Conflict, ReadOnlyAccount, ValidationFailed } from "@acs/domain/Errors"
import type { Principal } from "@acs/domain/Principal"
import type { ProposalOperationName } from "@acs/domain/ProposalKinds"
import { SqlClient, type SqlError } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import type { AccountRecord } from "../../accounts/AccountRecord.ts"
import type { Granted } from "../../accounts/Granted.ts"
import { type Membership, membershipOf } from "../changesets/Membership.ts"
import { HOT_SPAN } from "../../db/HotSpan.ts"
import { Invalidation } from "../../db/Invalidation.ts"
import { newId } from "../../db/Ids.ts"
import { TestDatabase } from "../../db/TestDatabase.ts"
import { accountEnvelope, autoAppliesLast24h, lockAccountShared } from "../../policy/AutoApplyWindow.ts"
import { envelopeReasons, RAISING_KINDS } from "../../policy/Envelope.ts"
import { AUTO_APPLY_LIMIT_PER_24H, type Decision, dailyCapReason, decide } from "../../policy/Policy.ts"
import { type CooldownCheck, cooldownCheckOf, cooldownReason, lastChangeWithin } from "../../policy/Cooldown.ts"
import { Guardrails } from "../../policy/Guardrails.ts"
import { highRiskReason } from "../../policy/HighRisk.ts"
import { OrgSettings } from "../../settings/Settings.ts"
import { WorkerSignal } from "../../queue/WorkerSignal.ts"
import { Idempotency, type StoredAnswer } from "./Idempotency.ts"
import type { Kind, Rejection } from "../kinds/Kind.ts"
import type { PolicyFacts } from "../kinds/PolicyFacts.ts"
import { money, requireNone } from "../kinds/KindSupport.ts"
import { Ledger, toProposalResponse } from "./Ledger.ts"
import type { MembershipError } from "../changesets/Membership.ts"
import { minorUnitReasons } from "./MinorUnits.ts"
import { recordProposal, type Recording } from "./ProposalStatement.ts"
import { policyFactsWith, readTargetBand, type TargetBand, type WarehouseView, warehouseView } from "../kinds/WarehouseView.ts"
import { countAction, countProposal } from "../../telemetry/Metrics.ts"

export interface ProposalRequest {
  /** The grant of the kind's proposal operation, or of a changeset's `members` call: who proposes, on which account. */
  readonly grant: Granted<ProposalOperationName | "addChangesetMembers">
  readonly kind: Kind
  readonly body: unknown
  readonly idempotency: { readonly key: string; readonly hash: string } | undefined
}

export interface ProposalOutcome {
  readonly response: ProposalResponse
  readonly replayed: boolean
}

export const actorOf = (principal: Principal) => ({ kind: principal.kind, id: principal.id, name: principal.name, root: principal.root })

const principalKey = (principal: Principal) => `${principal.kind}:${principal.id}`


/**
 * The decision a valid proposal gets when nothing read under the lock holds it and, when that one auto-applies,
 * the reasons that follow a hold read under the lock: those of the decision at the cap after the cap's own.
 */
const decisions = (decideFor: (used: number) => Decision) => {
  const open = decideFor(0)
  if (open.mode !== "auto_applied") return { open, held: undefined }
  const atCap = decideFor(AUTO_APPLY_LIMIT_PER_24H)
  // Under the cap nothing else holds it, so at the cap the cap's reason comes first, then the rest.
  if (atCap.reasons[0] !== dailyCapReason(AUTO_APPLY_LIMIT_PER_24H)) {
    throw new Error("policy: the daily cap is not the first reason of a capped auto-apply")
  }
  return { open, held: { otherReasons: atCap.reasons.slice(1) } }
}

/**
 * The decision the proposal statement makes from what it reads under the lock (ProposalStatement.ts), for a
 * preview: an action that would auto-apply is held by the 24-hour count, the cooldown, the envelope and the
 * ceiling, in that order; any other only gains the cooldown's and the ceiling's reasons.
 */
const underTheLock = (
  { held, open }: ReturnType<typeof decisions>,
  used: number,
  cooldown: string | null,
  envelope: { readonly envelope: string | undefined; readonly ceiling: string | undefined }
): Decision => {
  const cooling = cooldown === null ? [] : [cooldown]
  const ceiling = envelope.ceiling === undefined ? [] : [envelope.ceiling]
  if (held === undefined) return { ...open, reasons: [...open.reasons, ...cooling, ...ceiling] }
  const holds = [
    ...(used >= AUTO_APPLY_LIMIT_PER_24H ? [dailyCapReason(used)] : []),
    ...cooling,
    ...(envelope.envelope === undefined ? [] : [envelope.envelope]),
    ...ceiling
  ]
  return holds.length === 0 ? open : { mode: "queued", riskTier: open.riskTier, reasons: [...holds, ...held.otherReasons] }
}

/**
 * What the proposals of one batch (a changeset's `members` call) share, read once for the batch: the warehouse
 * (a view that read every entity they name: kinds/PrefetchedView.ts), the policy's facts (the account's target
 * band, the window) and the kill switch.
 */
export interface Shared {
  readonly view: WarehouseView
  readonly facts: PolicyFacts
  readonly killSwitchOn: boolean
  readonly guardrails: GuardrailsDocument
}

export class Proposals extends Effect.Service<Proposals>()("acs/Proposals", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ledger = yield* Ledger
    const idempotency = yield* Idempotency
    const settings = yield* OrgSettings
    const guardrails = yield* Guardrails
    const signal = yield* WorkerSignal
    // The account's target band, read by the policy on every proposal: cached, dropped on every instance when
    // the band changes (db/Invalidation.ts, migration 0017). Wrapped, so that "no band" is cached too.
    const bands = (yield* Invalidation).cache<{ readonly band: TargetBand | null }>("t")
    const targetBand = (projectId: string) =>
      Effect.map(
        bands.get(projectId, Effect.map(readTargetBand(projectId), (band) => Option.some({ band }))),
        (cached) => Option.isSome(cached) ? cached.value.band : null
      )

    const minimumEvidence = (projectId: string) => Effect.map(guardrails.read(projectId), (read) => read.evidence)

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

    /** What the proposals of one batch share, read once for all of them (see `Shared`). */
    const share = (account: AccountRecord, view: WarehouseView) =>
      Effect.all([
        Effect.flatMap(targetBand(account.projectId), (band) => policyFactsWith(account, band, minimumEvidence(account.projectId))),
        settings.read(account.orgId),
        guardrails.read(account.projectId)
      ]).pipe(Effect.map(([facts, switchState, rails]): Shared => ({ view, facts, killSwitchOn: switchState.platformAutoApply, guardrails: rails })))

    /** The cooldown's reason when the change raises spend on an entity changed within its family's cooldown, else null. */
    const cooldownOf = (projectId: string, kind: string, payload: unknown, check: CooldownCheck | undefined) =>
      check === undefined ? Effect.succeed(null) : lastChangeWithin(projectId, kind, payload, check.hours).pipe(
        Effect.map((earlier) => earlier === undefined ? null : cooldownReason(check.family, check.hours, earlier)),
        Effect.provideService(SqlClient.SqlClient, sql)
      )

    /**
     * Local validation and the policy, the part a proposal and its preview share (docs/contract.md 4.1): the
     * account's read-only refusal, the kind's validation against the warehouse (with prior state), then
     * the policy's facts and the kill switch. The decision is answered as a function of the 24-hour count,
     * which the caller reads under the account's lock. Writes nothing. A validation failure is returned, not failed.
     * `shared`: what a batch of proposals read once for all of them; else each is read here. `cooldown`: a lone
     * proposal's cooldown is read under the account's lock by its statement (`cooldownCheck` says what to read), so
     * two raises of one entity are never both let through; else it is read here.
     */
    const evaluate = (
      account: AccountRecord,
      proposedBy: Principal["kind"],
      kind: Kind,
      body: unknown,
      shared?: Shared,
      cooldown: "read" | "underTheLock" = "read"
    ) =>
      Effect.gen(function*() {
        if (account.readOnly) {
          return yield* new ReadOnlyAccount({
            message: "the upstream credential has no account-manager role on this account, so no change can be applied"
          })
        }
        const view = shared?.view ?? (yield* warehouseView(account))
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
              verdict: shared === undefined
                ? Effect.flatMap(targetBand(account.projectId), (band) =>
                  Effect.flatMap(policyFactsWith(account, band, minimumEvidence(account.projectId)), (facts) => definition.autoApply(payload, facts)))
                : definition.autoApply(payload, shared.facts)
            }))
          )
        ).pipe(Effect.either)
        if (prepared._tag === "Left") {
          const rejection: Rejection = prepared.left
          if (rejection._tag !== "ValidationFailed") return yield* rejection
          return { _tag: "Invalid" as const, rejection }
        }
        const [verdict, killSwitchOn, rails] = yield* Effect.all([
          prepared.right.verdict,
          shared === undefined ? Effect.map(settings.read(account.orgId), (switchState) => switchState.platformAutoApply) : Effect.succeed(shared.killSwitchOn),
          shared === undefined ? guardrails.read(account.projectId) : Effect.succeed(shared.guardrails)
        ])
        const cooldownCheck = cooldownCheckOf(kind.kind, prepared.right.payload, rails.cooldownHours)
        const cooldownHeld = cooldown === "read"
          ? yield* cooldownOf(account.projectId, kind.kind, prepared.right.payload, cooldownCheck)
          : null
        const decideFor = (used: number) =>
          decide({
            proposedBy,
            killSwitchOn,
            accountStatus: account.status,
            autoApplyPaused: rails.autoApplyPaused,
            cooldown: cooldownHeld,
            highRisk: highRiskReason(kind.kind, prepared.right.payload, rails.highRisk),
            autoAppliesLast24h: used,
            reviewTier: kind.reviewTier,
            verdict
          })
        return {
          _tag: "Valid" as const,
          payload: prepared.right.payload,
          summary: prepared.right.summary,
          decideFor,
          cooldownCheck: cooldown === "underTheLock" ? cooldownCheck : undefined
        }
      })

    /**
     * What the request records, with every read done: a failed row for a validation failure, else the proposal.
     * `membership`: a changeset's `members` call has checked the
     * changeset and the dependencies of all its proposals at once (Changesets.ts), and read what they share once
     * (`shared`); else the body says.
     */
    const prepare = (request: ProposalRequest, membership?: Membership, shared?: Shared) =>
      Effect.gen(function*() {
        const { kind } = request
        const { account, principal } = request.grant
        const reason = typeof request.body === "object" && request.body !== null && "reason" in request.body
          ? String(request.body.reason)
          : ""
        const actionId = newId("act")
        const base = { orgId: account.orgId, projectId: account.projectId, kind: kind.kind, reason, proposedBy: actorOf(principal) }
        const member = membership ?? (yield* membershipOf(account.projectId, request.body).pipe(Effect.provideService(SqlClient.SqlClient, sql)))
        const evaluated = yield* evaluate(account, principal.kind, kind, request.body, shared, member === undefined ? "underTheLock" : "read")
        if (evaluated._tag === "Invalid") {
          const { rejection } = evaluated
          const recording: Recording = {
            actionId,
            row: {
              ...base,
              summary: `Rejected ${kind.kind} proposal`,
              payload: request.body,
              failure: { step: null, stepName: null, message: rejection.validation_errors.join("; "), upstreamRequestId: null }
            },
            decision: { mode: null, status: "failed", riskTier: kind.reviewTier, reasons: [] },
            held: undefined,
            cooldown: undefined,
            currency: account.currency,
            // A proposal that failed validation is a failed row of the ledger, never a member.
            member: undefined
          }
          const answer = { status: 422 as const, actionId, validationErrors: rejection.validation_errors, message: rejection.message }
          return { recording, answer }
        }
        const row = { ...base, summary: evaluated.summary, payload: evaluated.payload }
        if (member !== undefined) {
          // A member waits for its changeset: its own decision (under the cap) is kept for the changeset's.
          const own = evaluated.decideFor(0)
          const recording: Recording = {
            actionId,
            row,
            decision: { mode: own.mode, status: "proposed", riskTier: own.riskTier, reasons: own.reasons },
            held: undefined,
            cooldown: undefined,
            currency: account.currency,
            member
          }
          return { recording, answer: { status: 201 as const, actionId } }
        }
        const { open, held } = decisions(evaluated.decideFor)
        const auto = open.mode === "auto_applied"
        const recording: Recording = {
          actionId,
          row,
          decision: { mode: open.mode, status: auto ? "approved" : "proposed", riskTier: open.riskTier, reasons: open.reasons },
          held,
          cooldown: evaluated.cooldownCheck,
          currency: account.currency,
          member: undefined
        }
        return { recording, answer: { status: 201 as const, actionId } }
      })

    const propose = (request: ProposalRequest) =>
      Effect.gen(function*() {
        const key = request.idempotency
        const { recording, answer } = yield* prepare(request)
        type Outcome =
          | { readonly _tag: "Replay"; readonly answer: StoredAnswer }
          | { readonly _tag: "Recorded"; readonly action: ActionRecord }
          | { readonly _tag: "NotOpen" }
        const recorded = Effect.map(
          recordProposal(sql, recording),
          (action): Outcome => action === undefined ? { _tag: "NotOpen" } : { _tag: "Recorded", action }
        )
        const outcome: Outcome = yield* (key === undefined
          // Alone, the statement is its own transaction: the lock is held for that one statement.
          ? recorded
          : sql.withTransaction(
            Effect.flatMap(
              idempotency.claim(principalKey(request.grant.principal), key.key, key.hash, answer),
              (claim): Effect.Effect<Outcome, SqlError.SqlError> =>
                claim._tag === "Replay" ? Effect.succeed({ _tag: "Replay", answer: claim.answer }) : recorded
            )
          )).pipe(Effect.catchTag("SqlError", Effect.die))
        if (outcome._tag === "Replay") return yield* replay(request.grant.account.projectId, outcome.answer)
        if (outcome._tag === "NotOpen") {
          return yield* new Conflict({ message: `changeset ${recording.member?.changesetId} was submitted or ended meanwhile: members are added only while it is open` })
        }
        yield* Effect.zipRight(countProposal(outcome.action.kind, outcome.action.mode), countAction(outcome.action.status))
        if (answer.status === 422) return yield* validationFailure(answer)
        if (outcome.action.status === "approved") yield* signal.wake(outcome.action.projectId)
        return { response: toProposalResponse(outcome.action), replayed: false } satisfies ProposalOutcome
      }).pipe(Effect.withSpan("Proposals.propose", HOT_SPAN))

    /**
     * A proposal's dry run (docs/contract.md 4.1): the same validation and policy as `propose`, in a read-only
     * transaction that holds the account's lock in its shared form — it waits for a proposal being
     * recorded, so it counts that proposal's auto-apply, but blocks no other preview and only as long as it
     * reads. No ledger row, job or idempotency row; a validation failure is a 422 without `action_id`.
     */
    const preview = (grant: Granted<ProposalOperationName>, kind: Kind, body: unknown) =>
      sql.withTransaction(
        Effect.gen(function*() {
          yield* sql`SET TRANSACTION READ ONLY`
          yield* lockAccountShared(grant.account.projectId)
          yield* membershipOf(grant.account.projectId, body).pipe(Effect.provideService(SqlClient.SqlClient, sql))
          const evaluated = yield* evaluate(grant.account, grant.principal.kind, kind, body, undefined, "underTheLock")
          if (evaluated._tag === "Invalid") {
            return yield* new ValidationFailed({
              message: evaluated.rejection.message,
              validation_errors: evaluated.rejection.validation_errors
            })
          }
          const projectId = grant.account.projectId
          const [window, cooldown, envelope] = yield* Effect.all([
            autoAppliesLast24h(projectId),
            cooldownOf(projectId, kind.kind, evaluated.payload, evaluated.cooldownCheck),
            RAISING_KINDS.has(kind.kind)
              ? Effect.map(
                accountEnvelope(projectId, { of: "change", kind: kind.kind, payload: evaluated.payload }),
                ({ raise, state }) => envelopeReasons(state, raise, (micros) => money(micros, grant.account.currency))
              )
              : Effect.succeed({ envelope: undefined, ceiling: undefined })
          ])
          const decision = underTheLock(decisions(evaluated.decideFor), window.used, cooldown, envelope)
          const payload = evaluated.payload
          if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
            return yield* Effect.dieMessage(`${kind.kind}: a prepared payload is not an object`)
          }
          return {
            kind: kind.kind,
            mode: decision.mode,
            riskTier: decision.riskTier,
            policyReasons: decision.reasons,
            summary: evaluated.summary,
            payload: payload as Readonly<Record<string, unknown>>
          } satisfies ProposalPreview
        })
      ).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Proposals.preview", HOT_SPAN))

    return { propose, preview, evaluate, prepare, share } as const
  }),
  dependencies: [Invalidation.Default]
}) {
  /** Over the embedded test database (db/TestDatabase.ts), with what a proposal uses, for in-process tests. */
  static readonly Test = Proposals.Default.pipe(
    Layer.provideMerge(Layer.mergeAll(Ledger.Default, Idempotency.Default, OrgSettings.Default, Guardrails.Default, WorkerSignal.Default)),
    Layer.provideMerge(TestDatabase)
  )
}

export type ProposalError = Rejection | ReadOnlyAccount | Conflict | MembershipError
