/**
 * A changeset's revert (docs/contract.md 4.3): one compensating changeset, applied at once (undoing is never
 * blocked, also with the kill switch off), its members the compensations of the original's applied members in
 * reverse plan order. Each member is first checked three ways — its prior state, what acs wrote, what is upstream
 * now (read again from the platform, not the warehouse): `revertible`; `conflicted` when it moved since acs wrote
 * it (left alone unless forced, when its compensation writes over the change); `not_revertible` when it was not
 * applied, was undone already, or its kind has no compensating change.
 */
import type { ActionRecord, Actor } from "@acs/domain/Actions"
import { ExternalChangePayload } from "@acs/domain/Actions"
import type { Changeset, RevertPlan } from "@acs/domain/Changesets"
import { NotFound, NotRevertible, ReadOnlyAccount } from "@acs/domain/Errors"
import type { KindName } from "@acs/domain/ProposalKinds"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { UpstreamClient } from "@acs/upstream/Upstream"
import { Connections } from "../../accounts/Connections.ts"
import type { AccountRecord } from "../../accounts/AccountRecord.ts"
import type { Granted } from "../../auth/Access.ts"
import { OrgSettings } from "../../settings/Settings.ts"
import { lockAccount } from "../../policy/AutoApplyWindow.ts"
import { Jobs } from "../../queue/Jobs.ts"
import { WorkerSignal } from "../../queue/WorkerSignal.ts"
import { kindNamed } from "../kinds/Catalog.ts"
import { describeOutsideChange } from "../outside/OutsideChangeText.ts"
import { compensationOf } from "../pipeline/Compensation.ts"
import { Ledger } from "../pipeline/Ledger.ts"
import { autoRevertHeld, GUARD_ACTOR, guardRevertDecision } from "../pipeline/AutoRevertGate.ts"
import { actorOf } from "../pipeline/Proposals.ts"
import { type NewAction, Transitions } from "../pipeline/Transitions.ts"
import { toChangeset } from "./ChangesetRow.ts"
import { ChangesetStore } from "./ChangesetStore.ts"
import { impactOf, planHashOf } from "./Plan.ts"
import { readsOnce } from "./ReadsOnce.ts"

const APPLIES_AT_ONCE = "revert: the compensating change applies at once, also with the kill switch off (undo must work during an incident)"

/** Members checked side by side (the upstream reads they wait for overlap). */
const CHECK_RUNS = 4

interface Compensation {
  readonly kind: KindName
  readonly summary: string
  readonly payload: unknown
}

interface CheckedMember {
  readonly member: ActionRecord
  readonly verdict: "revertible" | "conflicted" | "not_revertible"
  readonly why: string
  readonly compensation: Compensation | undefined
}

export class ChangesetRevert extends Effect.Service<ChangesetRevert>()("acs/ChangesetRevert", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const store = yield* ChangesetStore
    const ledger = yield* Ledger
    const transitions = yield* Transitions
    const jobs = yield* Jobs
    const connections = yield* Connections
    const signal = yield* WorkerSignal
    const settings = yield* OrgSettings

    /** Who moved a member since acs wrote it: the outside change the ledger recorded, or the drift as read now. */
    const movedBy = (projectId: string, member: ActionRecord, drift: string) =>
      member.supersededBy === null
        ? Effect.succeed(`changed upstream since acs wrote it: ${drift}`)
        : ledger.find(projectId, member.supersededBy).pipe(Effect.map((external) => {
          const payload = external === undefined ? undefined : Schema.decodeUnknownOption(ExternalChangePayload)(external.payload)
          const who = payload === undefined || payload._tag === "None"
            ? "changed outside acs"
            : describeOutsideChange(payload.value.upstream)
          return `${who} (${member.supersededBy}): ${drift}`
        }))

    /** The three-way check of one member, reading the platform now. */
    const check = (account: AccountRecord, client: UpstreamClient, member: ActionRecord) =>
      Effect.gen(function*() {
        const refuse = (why: string): CheckedMember => ({ member, verdict: "not_revertible", why, compensation: undefined })
        if (member.status === "reverted" || member.revertedBy !== null) return refuse(`already reverted by ${member.revertedBy ?? "an earlier revert"}`)
        if (member.status !== "applied") return refuse(`it was not applied (${member.status})`)
        const inverse = compensationOf(member)
        if (inverse === undefined) return refuse(`${member.kind} has no compensating change`)
        // The compensation's prior state is what the member wrote: drift from it is a change since.
        const drift = yield* kindNamed(inverse.kind).use((definition) =>
          definition.drift(Schema.decodeUnknownSync(definition.payload)(inverse.payload), {
            client,
            accountId: account.upstreamAccountId,
            ids: {},
            acceptDrift: false
          })
        ).pipe(Effect.catchTag("NotFound", (error) => Effect.succeed(`the entity is gone upstream (${error.message})`)))
        const compensation = { kind: inverse.kind, summary: inverse.summary, payload: inverse.payload }
        if (drift === null && member.supersededBy === null) {
          return { member, verdict: "revertible", why: "unchanged since acs wrote it", compensation } satisfies CheckedMember
        }
        const why = yield* movedBy(account.projectId, member, drift ?? "moved since")
        return { member, verdict: "conflicted", why, compensation } satisfies CheckedMember
      })

    const planOf = (account: AccountRecord, changesetId: string) =>
      Effect.gen(function*() {
        if (account.readOnly) {
          return yield* new ReadOnlyAccount({ message: "the upstream credential cannot write to this account, so nothing can be reverted" })
        }
        const row = yield* store.find(account.projectId, changesetId)
        if (row === undefined) return yield* new NotFound({ message: `no changeset ${changesetId} in this account` })
        const refuse = (why: string) => new NotRevertible({ message: `changeset ${changesetId} cannot be reverted: ${why}` })
        if (row.revertOf !== null) return yield* refuse("it is itself a revert")
        if (row.revertedBy !== null) return yield* refuse(`it was already reverted by ${row.revertedBy}`)
        if (row.status !== "applied" && row.status !== "partially_applied") {
          return yield* refuse(`it is ${row.status}: only an applied or partially applied changeset is reverted`)
        }
        const members = yield* ledger.members(row)
        // In reverse plan order: children undone before their parents.
        const position = new Map((row.plan?.order ?? members.map((m) => m.actionId)).map((id, index) => [id, index]))
        const records = [...members].sort((a, b) => (position.get(b.actionId) ?? -1) - (position.get(a.actionId) ?? -1))
        // One client for the whole check (its token reused), not one per member, whose reads the members share:
        // one read per ad group (or campaign), not one per member.
        const client = readsOnce(yield* connections.clientFor(account.orgId, { reuse: true }))
        // Four runs side by side over consecutive members (their ad groups read in parallel), each member of a run
        // checked in turn: a fiber per run, not per member.
        const runs = Array.from({ length: CHECK_RUNS }, (_, run) => records.slice(
          Math.floor((records.length * run) / CHECK_RUNS),
          Math.floor((records.length * (run + 1)) / CHECK_RUNS)
        ))
        const checked = (yield* Effect.forEach(runs, (run) => Effect.forEach(run, (member) => check(account, client, member)), {
          concurrency: CHECK_RUNS
        })).flat()
        // What the changeset changed and still stands: the members a revert is about.
        const standing = checked.filter((c) => c.member.status === "applied" && c.member.revertedBy === null).length
        const undone = checked.filter((c) => c.verdict === "revertible").length
        const plan: RevertPlan = {
          changesetId,
          coverage: undone === 0 ? "none" : undone === standing ? "full" : "partial",
          members: checked.map((c) => ({
            actionId: c.member.actionId,
            kind: c.member.kind,
            summary: c.member.summary,
            verdict: c.verdict,
            why: c.why,
            compensation: c.compensation === undefined ? null : { kind: c.compensation.kind, summary: c.compensation.summary }
          }))
        }
        return { row, plan, checked, refuse }
      })

    /** `?preview=true`: the revert plan, nothing written. */
    const preview = (grant: Granted<"revertChangeset">, changesetId: string) =>
      Effect.map(planOf(grant.account, changesetId), ({ plan }) => plan).pipe(Effect.withSpan("ChangesetRevert.preview"))

    /**
     * Records the compensating changeset of `undo` (each member's compensation, in reverse plan order) and links every
     * original to its own, in one transaction: approved and enqueued at once, or queued for a person (the guard's).
     */
    const record = (
      account: AccountRecord,
      planned: Effect.Effect.Success<ReturnType<typeof planOf>>,
      undo: ReadonlyArray<CheckedMember>,
      how: { readonly by: Actor; readonly reason: string; readonly queued: boolean; readonly policyReasons: ReadonlyArray<string>; readonly forcedBy: Actor | null }
    ) =>
      Effect.gen(function*() {
        const { refuse, row } = planned
        const changesetId = row.changesetId
        const changeset: Changeset = yield* sql.withTransaction(Effect.gen(function*() {
          yield* lockAccount(account.projectId)
          const opened = yield* store.open({
            orgId: account.orgId,
            projectId: account.projectId,
            title: `Revert of ${row.title}`,
            reason: how.reason,
            // Undo as much as can be undone: one member that fails does not keep the rest in place.
            onFailure: "continue",
            openedBy: how.by,
            revertOf: changesetId
          })
          if (!(yield* store.linkRevert({ projectId: account.projectId, changesetId }, opened.changesetId))) return yield* refuse("another revert of it was accepted first")
          // Every compensation in one statement, then every original linked to its own in one more.
          const recorded = yield* transitions.appendMany(undo.map((item) => {
            const compensation = item.compensation!
            const overwrite = item.verdict === "conflicted" && how.forcedBy !== null
            return {
              orgId: account.orgId,
              projectId: account.projectId,
              kind: compensation.kind,
              mode: how.queued ? "queued" : "auto_applied",
              status: how.queued ? "proposed" : "approved",
              riskTier: "review",
              // A forced member's compensation writes over what moved it: the worker reads that from a drift reason and a decider.
              policyReasons: overwrite ? [...how.policyReasons, `drift: ${item.why} (forced by ${how.forcedBy!.name})`] : how.policyReasons,
              summary: compensation.summary,
              reason: `revert of ${item.member.actionId} (changeset ${changesetId})`,
              payload: compensation.payload,
              proposedBy: how.by,
              ...(how.queued ? {} : { decidedBy: how.by }),
              revertOf: item.member.actionId,
              countsTowardCap: false,
              changesetId: opened.changesetId
            } satisfies NewAction
          }))
          const linked = yield* transitions.linkReverts(account.projectId, recorded.flatMap((action) =>
            action.revertOf === null ? [] : [{ originalId: action.revertOf, compensationId: action.actionId }]
          ))
          const unlinked = undo.find((item) => !linked.has(item.member.actionId))
          if (unlinked !== undefined) return yield* refuse(`member ${unlinked.member.actionId} was reverted meanwhile`)
          const members = recorded.map((action) => ({
            actionId: action.actionId,
            kind: action.kind === "external_change" ? "rename" as const : action.kind,
            dependsOn: [],
            payload: action.payload
          }))
          const frozenPlan = { order: members.map((m) => m.actionId), dependencies: [] }
          // A person's revert applies at once, as a single revert does, and its members do not count in the 24-hour
          // window; the guard's counts when it applies on its own.
          yield* store.submit(opened, {
            plan: frozenPlan,
            planHash: planHashOf(opened.changesetId, frozenPlan, members),
            impact: impactOf(members),
            decision: { mode: how.queued ? "queued" : "auto_applied", riskTier: "review", policyReasons: how.policyReasons }
          }, how.by, { counted: how.by.kind === "system" })
          if (!how.queued) yield* jobs.enqueueChangeset(opened.changesetId, account.projectId)
          return toChangeset((yield* store.find(account.projectId, opened.changesetId))!)
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        if (!how.queued) yield* signal.wake(account.projectId)
        return changeset
      })

    const revert = (grant: Granted<"revertChangeset">, changesetId: string, force: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const { account, principal } = grant
        const planned = yield* planOf(account, changesetId)
        const { checked, plan, refuse } = planned
        const forced = new Set(force)
        const unknown = force.filter((id) => !checked.some((c) => c.member.actionId === id && c.verdict === "conflicted"))
        if (unknown.length > 0) return yield* refuse(`force names no conflicted member: ${unknown.join(", ")}`)
        const undo = checked.filter((c) => c.verdict === "revertible" || (c.verdict === "conflicted" && forced.has(c.member.actionId)))
        if (undo.length === 0) return yield* refuse("none of its members can be undone (coverage none)")
        const by = actorOf(principal)
        const changeset = yield* record(account, planned, undo, { by, reason: `revert of changeset ${changesetId}`, queued: false, policyReasons: [APPLIES_AT_ONCE], forcedBy: by })
        return { changeset, plan }
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.withSpan("ChangesetRevert.revert"))

    /**
     * The guard's revert of a changeset whose members' last review failed together (docs/contract.md 3.4): the members
     * that are still as acs wrote them, undone as one compensating changeset, queued for a person with the verdict as
     * its reason, or applied under `auto_revert` when an auto-applied proposal could (AutoRevertGate.ts). A member that
     * moved since is left alone, never forced.
     */
    const guardRevert = (account: AccountRecord, changesetId: string, reason: string, autoRevert: boolean) =>
      Effect.gen(function*() {
        const planned = yield* planOf(account, changesetId)
        const undo = planned.checked.filter((c) => c.verdict === "revertible")
        if (undo.length === 0) return yield* planned.refuse("none of its members is as acs wrote it (coverage none)")
        const held = autoRevert ? yield* autoRevertHeld(sql, settings, account, undo.map((c) => c.compensation!.payload)) : []
        const { policyReasons, queued } = guardRevertDecision(autoRevert, held)
        return yield* record(account, planned, undo, { by: GUARD_ACTOR, reason, queued, policyReasons, forcedBy: null })
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.withSpan("ChangesetRevert.guardRevert"))

    return { preview, revert, guardRevert } as const
  }),
  // Connections (over the upstream port) and WorkerSignal (one per instance) come from the application layer.
  dependencies: [ChangesetStore.Default, Ledger.Default, Transitions.Default, Jobs.Default]
}) {}
