/**
 * The apply of an approved changeset (docs/contract.md 4.3, docs/decisions/changesets.md), under its one job's
 * lease: the changeset marked applying, then its members in plan order; members of one kind whose rows are in one place
 * (an ad group) together in one bulk call (MemberBulk.ts), every other member applied exactly as a single action is
 * (Apply.ts, as a member: fenced by this job's lease, its end not the job's, failed where it would be demoted).
 * A member already applied, failed or skipped is passed over, so a run that a crash, `upstream_unavailable` or
 * a stopping worker (between two members) interrupted resumes where it was; a member whose dependency failed or
 * was skipped is skipped. `onFailure`: `stop` skips every member not yet applied after a failure, `continue`
 * goes on, `rollback` stops and then compensates the applied members in reverse order, at once, in this run.
 * The changeset's end (its status and event, the members left skipped) commits with the job's deletion.
 */
import type { ActionRecord, ActionStatus } from "@acs/domain/Actions"
import { SqlClient } from "@effect/sql"
import { Cause, Effect, Exit, Option } from "effect"
import { Connections } from "../accounts/Connections.ts"
import { type ApplyEnd, ChangesetStore } from "../actions/changesets/ChangesetStore.ts"
import type { ChangesetRow } from "../actions/changesets/ChangesetRow.ts"
import { kindNamed } from "../actions/kinds/Catalog.ts"
import { Ledger } from "../actions/pipeline/Ledger.ts"
import { touchedEntities } from "../actions/outside/TouchedEntities.ts"
import { compensationOf } from "../actions/pipeline/Compensation.ts"
import { type ActionRef, Transitions } from "../actions/pipeline/Transitions.ts"
import { lockAccount } from "../policy/AutoApplyWindow.ts"
import { LeaseLost } from "../queue/Jobs.ts"
import { Apply } from "./Apply.ts"
import { type BulkMember, bulkMember, makeMemberBulk } from "./MemberBulk.ts"
import { type Lease, settled } from "./Lease.ts"

/** A claimed changeset job, as the run needs it. */
export interface ChangesetJob {
  readonly jobId: string
  readonly changesetId: string
  readonly projectId: string
  readonly attempts: number
}

/**
 * What became of the job: done (`settled`: deleted with the changeset's end; otherwise there was nothing to do
 * and the worker completes it), to be given back for later (`progressed`: members moved in this attempt), or
 * abandoned with the lease.
 */
export type ChangesetOutcome =
  | { readonly _tag: "Done"; readonly settled: boolean }
  | { readonly _tag: "Retry"; readonly error: string; readonly retryAfterMs: number | undefined; readonly progressed: boolean }
  | { readonly _tag: "LeaseLost" }

/**
 * The changeset job's lease as a member's run uses it: every write fenced by it as a single apply's is, but the
 * member's end renews the job (in the same statement or transaction) instead of deleting it.
 */
export const memberLease = (lease: Lease): Lease => ({ ...lease, settlement: lease.renewal, settle: lease.check })

/**
 * Whether the worker is stopping (its fiber was interrupted): the run is uninterruptible, as an apply is, and
 * looks between members, where handing the job back loses nothing (a long changeset must not hold a shutdown).
 */
const stopping = Effect.map(Effect.exit(Effect.interruptible(Effect.void)), Exit.isInterrupted)

const TERMINAL: ReadonlySet<ActionStatus> = new Set(["applied", "failed", "skipped", "reverted", "rejected", "expired"])

/** How the apply ended: applied when every member did, failed when none did (or it rolled back), else partially applied. */
export const applyEnd = (statuses: ReadonlyArray<ActionStatus | undefined>, rolledBack: boolean): ApplyEnd => {
  const applied = statuses.filter((status) => status === "applied").length
  return rolledBack || applied === 0 ? "failed" : applied === statuses.length ? "applied" : "partially_applied"
}

export class ChangesetRun extends Effect.Service<ChangesetRun>()("acs/ChangesetRun", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const apply = yield* Apply
    const store = yield* ChangesetStore
    const transitions = yield* Transitions
    const ledger = yield* Ledger
    const memberBulk = makeMemberBulk(sql, transitions, yield* Connections)

    // The run reads of its members only what it uses (`MemberRow`); a rollback reads the whole records it compensates.
    const readMembers = ledger.memberRuns

    /** Fails a member (or a compensation) that did not end by itself, behind the lease. */
    const failMember = (member: ActionRef, message: string, lease: Lease) =>
      settled(sql, lease, transitions.fail(member, { step: null, stepName: null, message, upstreamRequestId: null }))

    /**
     * The compensating action of an applied member, recorded approved (it applies at once, in this run) and
     * linked to its member, behind the lease; undefined when its kind has none, or another revert took the member.
     */
    const recordCompensation = (changeset: ChangesetRow, member: ActionRecord, failedMember: string, lease: Lease) =>
      Effect.gen(function*() {
        const inverse = compensationOf(member)
        if (inverse === undefined) return undefined
        const compensation = kindNamed(inverse.kind)
        return yield* settled(
          sql,
          lease,
          Effect.gen(function*() {
            // The ledger's order: an append holds the account's proposal lock.
            yield* lockAccount(member.projectId)
            const action = yield* transitions.append({
              orgId: changeset.orgId,
              projectId: member.projectId,
              kind: inverse.kind,
              mode: "auto_applied",
              status: "approved",
              riskTier: compensation.reviewTier === "high" ? "high" : "review",
              policyReasons: [
                `rollback: member ${failedMember} of changeset ${changeset.changesetId} failed; its applied members are compensated ` +
                `in reverse order, at once`
              ],
              summary: inverse.summary,
              reason: `rollback of ${member.actionId} (changeset ${changeset.changesetId})`,
              payload: inverse.payload,
              // The rollback was chosen with the changeset (`onFailure`), by whoever opened it.
              proposedBy: changeset.openedBy,
              revertOf: member.actionId,
              countsTowardCap: false
            })
            // Rolled back with the append when a revert of the member was accepted first.
            if (!(yield* transitions.linkRevert(member.projectId, member.actionId, action.actionId))) return yield* Effect.fail(new Cause.NoSuchElementException())
            return action.actionId
          })
        ).pipe(Effect.catchTag("NoSuchElementException", () => Effect.succeed(undefined)))
      })

    const run = (job: ChangesetJob, lease: Lease, lastAttempt: boolean) =>
      Effect.gen(function*() {
        const changeset = yield* store.find(job.projectId, job.changesetId)
        // Finished meanwhile (or gone): the job has nothing left to do.
        if (changeset === undefined || (changeset.status !== "approved" && changeset.status !== "applying")) {
          return { _tag: "Done", settled: false } satisfies ChangesetOutcome
        }
        yield* lease.check
        yield* store.markApplying(job)
        const members = yield* readMembers(job)
        const byId = new Map(members.map((member) => [member.actionId, member]))
        const order = (changeset.plan?.order ?? members.map((member) => member.actionId)).filter((id) => byId.has(id))
        const status = new Map(members.map((member) => [member.actionId, member.status]))
        const fenced = memberLease(lease)
        const onFailure = changeset.onFailure
        let progressed = false
        const retry = (error: string, retryAfterMs: number | undefined): ChangesetOutcome => ({ _tag: "Retry", error, retryAfterMs, progressed })

        /**
         * One member's apply; a retryable failure on the job's last attempt fails the member instead (the run
         * goes on as its `onFailure` says). Answers the member's status, or the job's outcome when it stops here.
         */
        const applyMember = (actionId: string) =>
          Effect.gen(function*() {
            const outcome = yield* apply.apply(actionId, job.projectId, fenced, undefined, true)
            if (outcome._tag === "LeaseLost") return outcome
            if (outcome._tag === "Retry") {
              if (!lastAttempt) return retry(outcome.error, outcome.retryAfterMs)
              yield* failMember({ projectId: job.projectId, actionId }, `upstream_unavailable: gave up after ${job.attempts} attempts: ${outcome.error}`, fenced)
              return "failed" as const
            }
            // Still pending only when its account is gone: nothing can apply it. (A compensation a person's
            // revert queued earlier stays `proposed`, for that person to decide.)
            if (outcome.status === undefined || outcome.status === "approved" || outcome.status === "applying") {
              yield* failMember({ projectId: job.projectId, actionId }, "not_found: its account is gone", fenced)
              return "failed" as const
            }
            return outcome.status
          })

        // A failure recorded before (a resumed run) stops a `stop` or `rollback` run as it did then.
        let stoppedBy = onFailure === "continue" ? undefined : order.find((id) => status.get(id) === "failed")
        const ended = (actionId: string, to: ActionStatus) => {
          status.set(actionId, to)
          if (to === "applied") progressed = true
          if (to === "failed" && onFailure !== "continue") stoppedBy ??= actionId
        }
        // Which members may share a bulk call (MemberBulk.ts); one the bulk call leaves to itself is taken out.
        const bulk = new Map(members.flatMap((member) => {
          const shared = bulkMember(member)
          return shared === undefined ? [] : [[member.actionId, shared] as const]
        }))
        const pendingBulk = members.filter((member) => bulk.has(member.actionId) && !TERMINAL.has(member.status))
        const bulkStart = pendingBulk.length === 0 ? undefined : yield* memberBulk.start(job.projectId, pendingBulk)
        // The members in plan order: each either with the later members its bulk call can take (same kind and ad
        // group, their dependencies applied), or alone.
        /**
         * The members a bulk call starting at `actionId` takes: the later members of its key whose dependencies
         * have applied, unless a member it passes over, or one it took, touches the same entity (taking it would
         * change their order).
         */
        const callOf = (actionId: string, shared: BulkMember, index: number) => {
          const group = [actionId]
          const taken = new Set(shared.entities)
          const passed = new Set<string>()
          for (const id of order.slice(index + 1)) {
            if (TERMINAL.has(status.get(id)!)) continue
            const other = bulk.get(id)
            const entities = other?.entities ?? touchedEntities(byId.get(id)!).map((ref) => `${ref.type}.${ref.id}`)
            const joins = other?.key === shared.key &&
              byId.get(id)!.dependsOn.every((dependency) => status.get(dependency) === "applied") &&
              entities.every((entity) => !taken.has(entity) && !passed.has(entity))
            for (const entity of entities) (joins ? taken : passed).add(entity)
            if (joins) group.push(id)
          }
          return group
        }
        for (const [index, actionId] of order.entries()) {
          if (stoppedBy !== undefined) break
          if (TERMINAL.has(status.get(actionId)!)) continue
          // A graceful stop is not a failed attempt: it counts as progress.
          if (yield* stopping) {
            return { _tag: "Retry", error: "the worker stopped mid-changeset", retryAfterMs: 0, progressed: true } satisfies ChangesetOutcome
          }
          const blocking = byId.get(actionId)!.dependsOn.find((dependency) => status.get(dependency) === "failed" || status.get(dependency) === "skipped")
          if (blocking !== undefined) {
            const why = `not applied: it depends on ${blocking}, which ${status.get(blocking) === "failed" ? "failed" : "was skipped"}`
            yield* settled(sql, fenced, transitions.skipMembers(job.projectId, [actionId], why))
            status.set(actionId, "skipped")
            continue
          }
          const shared = bulk.get(actionId)
          if (shared !== undefined && bulkStart !== undefined) {
            const group = callOf(actionId, shared, index)
            const outcome = yield* memberBulk.apply(bulkStart, group.map((id) => ({ action: byId.get(id)!, bulk: bulk.get(id)! })), fenced, lastAttempt)
            if (outcome._tag === "Unavailable") return retry(outcome.error, outcome.retryAfterMs)
            for (const [id, to] of outcome.ended) ended(id, to)
            for (const id of outcome.alone) bulk.delete(id)
            if (TERMINAL.has(status.get(actionId)!) || stoppedBy !== undefined) continue
          }
          const one = yield* applyMember(actionId)
          if (typeof one !== "string") return one
          ended(actionId, one)
        }

        const rolledBack = stoppedBy !== undefined && onFailure === "rollback"
        if (rolledBack) {
          // The applied members compensated in reverse order; one already compensated (a resumed run) is passed over.
          const records = new Map((yield* ledger.members(job)).map((member) => [member.actionId, member]))
          for (const actionId of [...order].reverse()) {
            if (status.get(actionId) !== "applied") continue
            const member = records.get(actionId)!
            const compensationId = member.revertedBy ?? (yield* recordCompensation(changeset, member, stoppedBy!, fenced))
            if (compensationId === undefined) {
              yield* Effect.logWarning("a member of a rolled-back changeset has no compensating change: it stays applied").pipe(
                Effect.annotateLogs({ changesetId: job.changesetId, actionId })
              )
              continue
            }
            const ended = yield* applyMember(compensationId)
            if (typeof ended !== "string") return ended
            progressed = true
            if (ended === "applied") status.set(actionId, "reverted")
          }
        }

        const rest = order.filter((id) => !TERMINAL.has(status.get(id)!))
        const end = applyEnd(order.map((id) => status.get(id)), rolledBack)
        yield* settled(
          sql,
          lease,
          Effect.zipRight(
            transitions.skipMembers(
              job.projectId,
              rest,
              `not applied: member ${stoppedBy} failed and the changeset ${rolledBack ? "rolled back" : "stops at a failure"}`
            ),
            store.finish(job, end)
          )
        )
        yield* Effect.logInfo("changeset apply ended").pipe(Effect.annotateLogs({ changesetId: job.changesetId, end }))
        return { _tag: "Done", settled: true } satisfies ChangesetOutcome
      }).pipe(
        Effect.catchSomeDefect((defect) => defect instanceof LeaseLost ? Option.some(Effect.fail(defect)) : Option.none()),
        Effect.catchTag("LeaseLost", (lost) =>
          Effect.logWarning("lease lost mid-changeset: the job is left to the worker that holds it now").pipe(
            Effect.annotateLogs({ changesetId: job.changesetId, jobId: lost.jobId }),
            Effect.as<ChangesetOutcome>({ _tag: "LeaseLost" })
          )),
        Effect.withSpan("ChangesetRun.run", { attributes: { changesetId: job.changesetId } })
      )

    /**
     * Ends a run that keeps crashing (a defect, not the upstream): every member still pending fails with
     * `message` and the changeset ends as its members did, with the job, so it does not retry forever.
     */
    const giveUp = (job: ChangesetJob, lease: Lease, message: string) =>
      Effect.gen(function*() {
        const changeset = yield* store.find(job.projectId, job.changesetId)
        if (changeset === undefined) return
        const members = yield* readMembers(job)
        const pending = members.filter((member) => !TERMINAL.has(member.status))
        yield* settled(
          sql,
          lease,
          Effect.gen(function*() {
            for (const member of pending) {
              yield* transitions.fail(member, { step: null, stepName: null, message, upstreamRequestId: null })
            }
            yield* store.finish(
              job,
              applyEnd(members.map((member) => pending.includes(member) ? "failed" : member.status), false)
            )
          })
        )
      })

    return { run, giveUp } as const
  }),
  // Apply and Connections (over the upstream port) come from the application layer.
  dependencies: [ChangesetStore.Default, Ledger.Default, Transitions.Default]
}) {}
