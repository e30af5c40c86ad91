/**
 * Changesets (docs/contract.md 4.3, docs/decisions/changesets.md): open one, add members (a proposal with
 * `changesetId`, or many in one call), submit (the plan frozen with its hash, the impact, the policy's decision for
 * the whole), approve by the plan's hash (refused when the account moved under the plan; a high-risk changeset
 * needs two people), reject. An approved changeset is one apply job; its members apply in plan order (worker/).
 */
import type { ActionRecord, Actor } from "@acs/domain/Actions"
import {
  type AddMembersRequest,
  type AddMembersResponse,
  type Changeset,
  type ChangesetDetail,
  type ChangesetStatus,
  type MemberResult,
  type OnFailure
} from "@acs/domain/Changesets"
import { AcsErrorTable, Conflict, ForbiddenScope, NotFound, ReadOnlyAccount, ValidationFailed } from "@acs/domain/Errors"
import { mayApprove, maySecondApprove, type Party } from "@acs/domain/FourEyes"
import type { Principal } from "@acs/domain/Principal"
import { proposalKinds } from "@acs/domain/ProposalKinds"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ParseResult, Schema } from "effect"
import type { AccountRecord } from "../../accounts/AccountRecord.ts"
import type { Granted } from "../../accounts/Granted.ts"
import { TestDatabase } from "../../db/TestDatabase.ts"
import { decideChangeset, type MemberDecision } from "../../policy/ChangesetPolicy.ts"
import { ACCOUNT_LOCK_NAMESPACE, accountEnvelope, autoAppliesLast24h, lockAccount, lockAccountShared } from "../../policy/AutoApplyWindow.ts"
import { envelopeReasons } from "../../policy/Envelope.ts"
import { Guardrails } from "../../policy/Guardrails.ts"
import { changesetHighRiskReason } from "../../policy/HighRisk.ts"
import { money } from "../kinds/KindSupport.ts"
import { Jobs } from "../../queue/Jobs.ts"
import { WorkerSignal } from "../../queue/WorkerSignal.ts"
import { OrgSettings } from "../../settings/Settings.ts"
import { kindNamed } from "../kinds/Catalog.ts"
import { namedIn, prefetchedView } from "../kinds/PrefetchedView.ts"
import { decodeActionIds } from "../pipeline/ActionRow.ts"
import { decodeRows } from "../../db/Rows.ts"
import { Idempotency } from "../pipeline/Idempotency.ts"
import { Ledger } from "../pipeline/Ledger.ts"
import { actorOf, Proposals } from "../pipeline/Proposals.ts"
import type { Recording } from "../pipeline/ProposalStatement.ts"
import { countProposal } from "../../telemetry/Metrics.ts"
import { Transitions } from "../pipeline/Transitions.ts"
import { ChangesetExpiry } from "./ChangesetExpiry.ts"
import { type ChangesetRow, toChangeset } from "./ChangesetRow.ts"
import { ChangesetStore, type Frozen } from "./ChangesetStore.ts"
import { impactOf, type PlanMember, planHashOf, planOf } from "./Plan.ts"
import { recordMembers } from "./MembersStatement.ts"
import { movedMembers } from "./Staleness.ts"


/** Members of one `members` call validated at once against the warehouse (the pool's connections, not one). */
const EVALUATION_CONCURRENCY = 8

const dependsOnOf = (body: Readonly<Record<string, unknown>>): ReadonlyArray<string> => {
  const value = body["dependsOn"]
  return Array.isArray(value) ? [...new Set(value.filter((id): id is string => typeof id === "string"))] : []
}

const decodeUsed = decodeRows(Schema.Struct({ used: Schema.NumberFromString }))

/** A kind's declared body schema by kind name: a `members` call decodes each body as its endpoint would. */
const bodyOf = new Map(proposalKinds.map((kind) => [kind.kind, Schema.decodeUnknown(kind.body as Schema.Schema<unknown, unknown>)]))

const planMember = (member: ActionRecord): PlanMember => ({
  actionId: member.actionId,
  kind: member.kind === "external_change" ? "rename" : member.kind,
  dependsOn: member.dependsOn,
  payload: member.payload
})

const memberDecision = (member: ActionRecord): MemberDecision => ({
  actionId: member.actionId,
  mode: member.mode,
  riskTier: member.riskTier,
  reasons: member.policyReasons
})

export class Changesets extends Effect.Service<Changesets>()("acs/Changesets", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const store = yield* ChangesetStore
    const proposals = yield* Proposals
    const transitions = yield* Transitions
    const jobs = yield* Jobs
    const signal = yield* WorkerSignal
    const settings = yield* OrgSettings
    const expiry = yield* ChangesetExpiry
    const guardrails = yield* Guardrails
    const ledger = yield* Ledger
    const membersOf = ledger.members

    const notFound = (changesetId: string) => new NotFound({ message: `no changeset ${changesetId} in this account` })

    const found = (row: ChangesetRow | undefined, changesetId: string) =>
      row === undefined ? Effect.fail(notFound(changesetId)) : Effect.succeed(row)

    const refuseReadOnly = (account: AccountRecord) =>
      account.readOnly
        ? Effect.fail(new ReadOnlyAccount({ message: "the upstream credential has no account-manager role on this account, so no change can be applied" }))
        : Effect.void

    const open = (grant: Granted<"openChangeset">, request: { readonly title: string; readonly reason?: string | undefined; readonly onFailure?: OnFailure | undefined }) =>
      Effect.zipRight(
        refuseReadOnly(grant.account),
        store.open({
          orgId: grant.account.orgId,
          projectId: grant.account.projectId,
          title: request.title,
          reason: request.reason ?? null,
          onFailure: request.onFailure ?? "stop",
          openedBy: actorOf(grant.principal)
        })
      ).pipe(Effect.withSpan("Changesets.open"))

    /** The changeset with its members, in plan order once it has a plan. */
    const get = (grant: Granted<"getChangeset">, changesetId: string): Effect.Effect<ChangesetDetail, NotFound> =>
      Effect.gen(function*() {
        const row = yield* found(yield* store.find(grant.account.projectId, changesetId), changesetId)
        const members = yield* membersOf(row)
        const position = new Map((row.plan?.order ?? []).map((id, index) => [id, index]))
        const ordered = [...members].sort((a, b) => (position.get(a.actionId) ?? Infinity) - (position.get(b.actionId) ?? Infinity))
        return { changeset: toChangeset(row), memberActions: ordered }
      })

    const list = (grant: Granted<"listChangesets">, status: ChangesetStatus | undefined, limit: number) =>
      store.list(grant.account.projectId, status, limit)

    /**
     * Many proposals as members, each validated as its own endpoint would (one refused proposal refuses only
     * itself), then every prepared row recorded in one statement (MembersStatement.ts): the answer says, per
     * proposal, its member or the envelope of its refusal. The changeset and every `dependsOn` are checked once for the call.
     */
    const addMembers = (grant: Granted<"addChangesetMembers">, changesetId: string, request: AddMembersRequest) =>
      Effect.gen(function*() {
        const { account } = grant
        yield* refuseReadOnly(account)
        const row = yield* found(yield* store.find(account.projectId, changesetId), changesetId)
        if (row.status !== "open") {
          return yield* new Conflict({ message: `changeset ${changesetId} is ${row.status}: members are added only while it is open` })
        }
        const named = [...new Set(request.proposals.flatMap((item) => dependsOnOf(item.body)))]
        const existing = named.length === 0 ? new Set<string>() : new Set(
          (yield* sql`SELECT action_id FROM actions WHERE changeset_id = ${changesetId} AND ${sql.in("action_id", named)}`.pipe(
            Effect.flatMap(decodeActionIds),
            Effect.orDie
          )).map((member) => member.actionId)
        )
        type Prepared =
          | { readonly _tag: "Refused"; readonly result: MemberResult }
          | { readonly _tag: "Prepared"; readonly recording: Recording; readonly answer: { readonly status: 201 | 422; readonly message?: string; readonly validationErrors?: ReadonlyArray<string> } }
        const refusal = (
          index: number,
          kind: MemberResult["kind"],
          tag: keyof typeof AcsErrorTable,
          message: string,
          validationErrors: ReadonlyArray<string>
        ): MemberResult => ({
          index,
          status: AcsErrorTable[tag].status,
          actionId: null,
          kind,
          summary: null,
          error: { code: AcsErrorTable[tag].code, message, validationErrors }
        })
        const refused = (...args: Parameters<typeof refusal>): Prepared => ({ _tag: "Refused", result: refusal(...args) })
        // The keywords and campaigns every proposal names, the policy's facts and the kill switch: read once for
        // the call rather than once per proposal.
        const shared = yield* proposals.share(account, yield* prefetchedView(account, namedIn(request.proposals.map((item) => item.body))))
        const prepared = yield* Effect.forEach(request.proposals, (item, index) =>
          Effect.gen(function*() {
            const decoded = yield* Effect.either(bodyOf.get(item.kind)!({ ...item.body, changesetId }))
            if (decoded._tag === "Left") return refused(index, item.kind, "InvalidRequest", ParseResult.TreeFormatter.formatErrorSync(decoded.left), [])
            const dependsOn = dependsOnOf(item.body)
            const unknown = dependsOn.filter((id) => !existing.has(id))
            if (unknown.length > 0) {
              const errors = unknown.map((id) => `dependsOn: ${id} is not a member of changeset ${changesetId}`)
              return refused(index, item.kind, "ValidationFailed", errors.join("; "), errors)
            }
            const outcome = yield* Effect.either(proposals.prepare(
              { grant, kind: kindNamed(item.kind), body: decoded.right, idempotency: undefined },
              { changesetId, dependsOn },
              shared
            ))
            if (outcome._tag === "Left") return refused(index, item.kind, outcome.left._tag, outcome.left.message, [])
            return { _tag: "Prepared", recording: outcome.right.recording, answer: outcome.right.answer } satisfies Prepared
          }), { concurrency: EVALUATION_CONCURRENCY })
        const recordings = prepared.flatMap((p) => p._tag === "Prepared" ? [p.recording] : [])
        const recorded = yield* recordMembers(sql, account, changesetId, recordings)
        const results = prepared.map((p, index): MemberResult => {
          if (p._tag === "Refused") return p.result
          const { answer, recording } = p
          const kind = request.proposals[index]!.kind
          if (answer.status === 422) {
            return {
              index,
              status: 422,
              actionId: recording.actionId,
              kind,
              summary: null,
              error: { code: "validation_failed", message: answer.message ?? "", validationErrors: answer.validationErrors ?? [] }
            }
          }
          if (!recorded.has(recording.actionId)) {
            return refusal(index, kind, "Conflict", `changeset ${changesetId} was submitted or ended meanwhile: members are added only while it is open`, [])
          }
          return { index, status: 201, actionId: recording.actionId, kind, summary: recording.row.summary, error: null }
        })
        for (const recording of recordings) {
          if (recorded.has(recording.actionId)) yield* countProposal(recording.row.kind, recording.decision.mode)
        }
        const added = results.filter((result) => result.status === 201).length
        return { changesetId, added, refused: results.length - added, results } satisfies AddMembersResponse
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.withSpan("Changesets.addMembers"))

    /**
     * The envelope's and the ceiling's verdict on the raises of the changeset's proposed members together. They
     * are reserved already (recorded members), so the envelope is read without them before they are added.
     */
    const envelopeOf = (account: AccountRecord, changesetId: string) =>
      Effect.map(
        accountEnvelope(account.projectId, { of: "changeset", changesetId }).pipe(Effect.provideService(SqlClient.SqlClient, sql)),
        ({ raise, state }) => envelopeReasons({ ...state, reserved: state.reserved - raise }, raise, (micros) => money(micros, account.currency))
      )

    /**
     * What submit freezes: the plan of the proposed members (as added), its hash, the impact and the decision for
     * the whole with the 24-hour count given. A resubmit (a queued changeset) first evaluates each member again
     * against the warehouse, refreshing its prior state: a member that no longer holds refuses the resubmit.
     */
    const freeze = (row: ChangesetRow, account: AccountRecord, members: ReadonlyArray<ActionRecord>, used: number, refresh: boolean) =>
      Effect.gen(function*() {
        const envelope = yield* envelopeOf(account, row.changesetId)
        if (members.length === 0) {
          return yield* new ValidationFailed({
            message: `changeset ${row.changesetId} has no members to submit`,
            validation_errors: ["a changeset needs at least one member: propose with changesetId, or add members"]
          })
        }
        let current = members
        if (refresh) {
          const refreshed: Array<ActionRecord> = []
          const invalid: Array<string> = []
          for (const member of members) {
            if (member.kind === "external_change") continue
            const outcome = yield* Effect.either(proposals.evaluate(
              account,
              member.proposedBy.kind === "person" ? "person" : "key",
              kindNamed(member.kind),
              { ...member.payload, reason: member.reason }
            ))
            if (outcome._tag === "Left" || outcome.right._tag === "Invalid") {
              const why = outcome._tag === "Left"
                ? outcome.left.message
                : outcome.right._tag === "Invalid"
                ? outcome.right.rejection.validation_errors.join("; ")
                : ""
              invalid.push(`${member.actionId}: ${why}`)
              continue
            }
            const evaluated = outcome.right
            const own = evaluated.decideFor(0)
            refreshed.push({
              ...member,
              payload: evaluated.payload as Readonly<Record<string, unknown>>,
              summary: evaluated.summary,
              mode: own.mode,
              riskTier: own.riskTier,
              policyReasons: own.reasons
            })
          }
          if (invalid.length > 0) {
            return yield* new ValidationFailed({
              message: `the account changed so that ${invalid.length} member(s) no longer hold: reject the changeset, or open a new one`,
              validation_errors: invalid
            })
          }
          current = refreshed
        }
        const switchState = yield* settings.read(row.orgId)
        const highRisk = yield* twoPeopleReason(account.projectId, current)
        const decision = decideChangeset({
          members: current.map(memberDecision),
          autoAppliesLast24h: used,
          killSwitchOn: switchState.platformAutoApply,
          accountStatus: account.status,
          envelopeHolds: [envelope.envelope, envelope.ceiling].flatMap((reason) => reason === undefined ? [] : [reason]),
          highRisk
        })
        const planned = current.map(planMember)
        const plan = planOf(planned)
        const frozen: Frozen = {
          plan,
          planHash: planHashOf(row.changesetId, plan, planned),
          impact: impactOf(planned),
          decision: { mode: decision.mode, riskTier: decision.riskTier, policyReasons: decision.reasons }
        }
        return { frozen, members: current }
      })

    const submittable = (row: ChangesetRow) =>
      row.status === "open" || row.status === "queued"
        ? Effect.void
        : Effect.fail(new Conflict({ message: `changeset ${row.changesetId} is ${row.status}: only an open or queued changeset is submitted` }))

    /** The decision and plan without freezing anything: a read-only transaction under the account's shared lock. */
    const previewSubmit = (grant: Granted<"submitChangeset">, changesetId: string) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* sql`SET TRANSACTION READ ONLY`
        yield* lockAccountShared(grant.account.projectId)
        const row = yield* found(yield* store.find(grant.account.projectId, changesetId), changesetId)
        yield* submittable(row)
        const members = (yield* membersOf(row)).filter((member) => member.status === "proposed")
        const window = yield* autoAppliesLast24h(grant.account.projectId)
        const { frozen } = yield* freeze(row, grant.account, members, window.used, row.status === "queued")
        return {
          ...toChangeset(row),
          planHash: frozen.planHash,
          plan: frozen.plan,
          impact: frozen.impact,
          decision: frozen.decision
        } satisfies Changeset
      })).pipe(Effect.catchTag("SqlError", Effect.die))

    const submit = (grant: Granted<"submitChangeset">, changesetId: string, preview: boolean) =>
      (preview ? previewSubmit(grant, changesetId) : sql.withTransaction(Effect.gen(function*() {
        const { account } = grant
        const row = yield* found(yield* store.lock(account.projectId, changesetId), changesetId)
        yield* submittable(row)
        const members = (yield* membersOf(row)).filter((member) => member.status === "proposed")
        // The account's lock, held to the commit: the count and this changeset's members are one decision.
        const used = yield* sql`SELECT used::text FROM acs_lock_account_window(${ACCOUNT_LOCK_NAMESPACE}, ${account.projectId})`.pipe(
          Effect.flatMap(decodeUsed),
          Effect.map((rows) => rows[0]?.used ?? 0),
          Effect.orDie
        )
        const { frozen, members: current } = yield* freeze(row, account, members, used, row.status === "queued")
        if (row.status === "queued") {
          for (const member of current) yield* transitions.refreshMember({ actionId: member.actionId, projectId: account.projectId }, {
            payload: member.payload,
            summary: member.summary,
            mode: member.mode ?? "queued",
            riskTier: member.riskTier,
            policyReasons: member.policyReasons
          })
        }
        yield* store.submit({ projectId: account.projectId, changesetId }, frozen, null)
        if (frozen.decision.mode === "auto_applied") {
          yield* transitions.decideMembers({ changesetId, projectId: account.projectId }, "approved", null, null)
          yield* jobs.enqueueChangeset(changesetId, account.projectId)
        }
        return toChangeset((yield* store.find(account.projectId, changesetId))!)
      })).pipe(
        Effect.catchTag("SqlError", Effect.die),
        Effect.tap((changeset) => changeset.status === "approved" ? signal.wake(changeset.projectId) : Effect.void)
      )).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.withSpan("Changesets.submit"))

    /** Four eyes over the opener and every member's proposer: the approver may approve each of them. */
    const requireMayApprove = (approver: Principal, proposers: ReadonlyArray<Party>) =>
      Effect.gen(function*() {
        const rule = (yield* settings.read(approver.orgId)).fourEyes
        for (const proposer of proposers) {
          const verdict = mayApprove(rule, approver, proposer)
          if (!verdict.allowed) return yield* new ForbiddenScope({ message: `four eyes: ${verdict.reason}`, required_grant: "second_approver" })
        }
      })

    /** Why the members need two people, by the account's guardrails now (policy/HighRisk.ts), or null. */
    const twoPeopleReason = (projectId: string, members: ReadonlyArray<ActionRecord>) =>
      Effect.map(guardrails.read(projectId), (rails) => changesetHighRiskReason(members, rails.highRisk))

    const distinctParties = (parties: ReadonlyArray<Actor>): ReadonlyArray<Actor> => {
      const seen = new Map<string, Actor>()
      for (const party of parties) seen.set(`${party.kind}:${party.id}`, party)
      return [...seen.values()]
    }

    const approve = (grant: Granted<"approveChangeset">, changesetId: string, planHash: string) =>
      expiry.expireIfDue(grant.account.projectId, changesetId).pipe(Effect.zipRight(sql.withTransaction(Effect.gen(function*() {
        const { account, principal } = grant
        const row = yield* found(yield* store.lock(account.projectId, changesetId), changesetId)
        if (row.status !== "queued") {
          return yield* new Conflict({ message: `changeset ${changesetId} is ${row.status}: only a queued changeset is approved` })
        }
        if (row.planHash !== planHash) {
          return yield* new Conflict({
            message: `changeset ${changesetId} was submitted again since that plan (its planHash is now ${row.planHash}): review it again`
          })
        }
        const members = (yield* membersOf(row)).filter((member) => member.status === "proposed")
        yield* requireMayApprove(principal, distinctParties([row.openedBy, ...members.map((member) => member.proposedBy)]))
        // Under the account's lock to the commit, as a submit takes it: no two approvals pass the ceiling together.
        yield* lockAccount(account.projectId).pipe(Effect.provideService(SqlClient.SqlClient, sql))
        const { ceiling } = yield* envelopeOf(account, changesetId)
        if (ceiling !== undefined) return yield* new ValidationFailed({ message: ceiling, validation_errors: [ceiling] })
        const moved = yield* movedMembers(account, changesetId, row.submittedAtIso!, members).pipe(
          Effect.provideService(SqlClient.SqlClient, sql)
        )
        if (moved.length > 0) {
          return yield* new Conflict({
            message: `the account changed under the plan of changeset ${changesetId} since it was submitted: ${moved.length} ` +
              "member(s) moved; submit it again to refresh the plan",
            reason: "state_changed_since_proposal",
            members: moved
          })
        }
        const by = actorOf(principal)
        // Two people for high risk, by the guardrails now: the first approval is recorded and the changeset stays
        // queued for a second from another person.
        if ((yield* twoPeopleReason(account.projectId, members)) !== null) {
          const first = row.approvals[0]
          if (first === undefined) {
            yield* store.recordFirstApproval({ projectId: account.projectId, changesetId }, by)
            return toChangeset((yield* store.find(account.projectId, changesetId))!)
          }
          const second = maySecondApprove(first.by, principal)
          if (!second.allowed) return yield* new ForbiddenScope({ message: second.reason, required_grant: "second_approver" })
        }
        yield* store.approve({ projectId: account.projectId, changesetId }, by)
        yield* transitions.decideMembers({ changesetId, projectId: account.projectId }, "approved", by, null)
        yield* jobs.enqueueChangeset(changesetId, account.projectId)
        return toChangeset((yield* store.find(account.projectId, changesetId))!)
      })))).pipe(Effect.catchTag("SqlError", Effect.die), Effect.tap((changeset) => signal.wake(changeset.projectId)), Effect.withSpan("Changesets.approve"))

    /** A decision by someone with the approval grant, or the opener's withdrawal. */
    const reject = (grant: Granted<"rejectChangeset">, changesetId: string, reason: string | undefined) =>
      sql.withTransaction(Effect.gen(function*() {
        const { account, principal } = grant
        const row = yield* found(yield* store.lock(account.projectId, changesetId), changesetId)
        const opener = row.openedBy.kind === principal.kind && row.openedBy.id === principal.id
        if (!principal.canApprove && !opener) {
          return yield* new ForbiddenScope({
            message: "rejecting a changeset needs the approval grant, unless you opened it",
            required_grant: "approve"
          })
        }
        if (row.status !== "open" && row.status !== "queued") {
          return yield* new Conflict({ message: `changeset ${changesetId} is ${row.status}: only an open or queued changeset is rejected` })
        }
        const by = actorOf(principal)
        yield* store.end({ projectId: account.projectId, changesetId }, "rejected", by, reason ?? null)
        yield* transitions.decideMembers({ changesetId, projectId: account.projectId }, "rejected", by, reason ?? null)
        return toChangeset((yield* store.find(account.projectId, changesetId))!)
      })).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Changesets.reject"))

    return { open, get, list, addMembers, submit, approve, reject } as const
  }),
  dependencies: [ChangesetStore.Default, Ledger.Default, Transitions.Default, Jobs.Default, ChangesetExpiry.Default]
}) {
  /** Over the embedded test database (db/TestDatabase.ts), with what a changeset uses, for in-process tests. */
  static readonly Test = Changesets.Default.pipe(
    Layer.provideMerge(Layer.mergeAll(Proposals.Default, Ledger.Default, Idempotency.Default, OrgSettings.Default, WorkerSignal.Default)),
    Layer.provideMerge(TestDatabase)
  )
}
