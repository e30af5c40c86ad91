/**
 * A changeset's members that share one platform bulk call (docs/contract.md 4.3, docs/decisions/changesets.md
 * "Members on one ad group share a bulk call"): members of one kind whose one step is a bulk part in one place
 * (actions/kinds/BulkParts.ts: keyword bids and statuses, new keywords, new negatives) read that place upstream once,
 * are written in one bulk call per place (per 1,000 rows), and are recorded set-based: one statement marks
 * them applying with their step records, one ends their runs (step records, warehouse write-back, statuses and
 * events). A member that needs more than the common case (a drift, a check that does not clear it, a run begun
 * otherwise) is left to the one-member apply (Apply.ts), which explains it as it does for a single action.
 * Crash-safe as a single apply is: the rows are read before the write, so a row that landed before a crash is not
 * written again.
 */
import type { ActionStatus, Failure } from "@acs/domain/Actions"
import type { UpstreamFailure } from "@acs/upstream/Upstream"
import { isUpstreamWriteFailure, tripCircuitBreaker } from "../policy/Guardrails.ts"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Option, Schema } from "effect"
import type { Connections } from "../accounts/Connections.ts"
import { kindNamed } from "../actions/kinds/Catalog.ts"
import type { BulkPart, StepContext } from "../actions/kinds/Kind.ts"
import { partPlace, readParts } from "../actions/kinds/BulkParts.ts"
import { keywordKey } from "../actions/kinds/KeywordSupport.ts"
import { namedIn, prefetchedView } from "../actions/kinds/PrefetchedView.ts"
import type { MemberRecord } from "../actions/pipeline/ActionRow.ts"
import type { Transitions } from "../actions/pipeline/Transitions.ts"
import { observeApplyLag } from "../telemetry/Metrics.ts"
import { firstStepEnds, firstStepStarts, type StepEnd } from "./ActionSteps.ts"
import { type ApplyChecks, type Checked, makeApplyChecks, type Verdict } from "./ApplyChecks.ts"
import { type Lease, settled } from "./Lease.ts"
import { endAppliedRun } from "./RunEndStatement.ts"
import { mergeTouched } from "./RunSteps.ts"
import { readMembersStart } from "./StartingPoint.ts"

/** A member as the call carries it: its record (the changeset run's) and its run. */
interface Start {
  readonly action: MemberRecord
  readonly run: number
}

/** What the apply's checks are given of a member of a bulk call beside its kind and payload. */
type MemberChecked = Omit<Checked<unknown>, "payload" | "namedCampaign" | "begun">

/** A member that may share a bulk call: its one step's part, all in one place, and its checks (its payload decoded once). */
export interface BulkMember {
  readonly key: string
  readonly stepName: string
  readonly part: BulkPart
  /** What its rows touch, as `touchedEntities` names entities (a new row by its place and text): what orders it against others. */
  readonly entities: ReadonlyArray<string>
  readonly check: (checks: ApplyChecks, checked: MemberChecked) => Effect.Effect<Verdict>
}

/**
 * Whether a member may share a bulk call, and with whom (`key`: its kind and place): its kind applies it in one
 * step that is a bulk part with all its rows in one place. A person's approval over a drift writes over it, which only
 * the one-member apply does.
 */
export const bulkMember = (member: MemberRecord): BulkMember | undefined =>
  member.kind === "external_change" ? undefined : kindNamed(member.kind).use((definition) => {
    if (member.policyReasons.some((reason) => reason.startsWith("drift:"))) return undefined
    const payload = Schema.decodeUnknownOption(definition.payload)(member.payload)
    if (Option.isNone(payload)) return undefined
    const steps = definition.steps(payload.value)
    const part = steps.length === 1 ? steps[0]!.bulk : undefined
    const place = part === undefined ? undefined : partPlace(part)
    if (part === undefined || place === undefined) return undefined
    return {
      key: `${member.kind} ${place}`,
      stepName: steps[0]!.name,
      part,
      entities: part._tag === "UpdateKeywords"
        ? part.rows.map((row) => `Keyword.${row.keywordId}`)
        : part.rows.map((row) => `new ${place}|${keywordKey(row.text, row.matchType)}`),
      // Keyword kinds name no campaign of their own; a run begun is reconciled by the call's read, not checked.
      check: (checks, checked) => checks.check(definition, { ...checked, payload: payload.value, namedCampaign: undefined, begun: false })
    }
  })

/** What became of a bulk call's members, or of the job when the call could not be made. */
export type BulkOutcome =
  | {
    readonly _tag: "Ended"
    /** Members the call ended, by id. */
    readonly ended: ReadonlyMap<string, Extract<ActionStatus, "applied" | "failed">>
    /** Members left to the one-member apply. */
    readonly alone: ReadonlyArray<string>
  }
  | { readonly _tag: "Unavailable"; readonly error: string; readonly retryAfterMs: number | undefined }

export const makeMemberBulk = (sql: SqlClient.SqlClient, transitions: Transitions, connections: Connections) => {
  const checks = makeApplyChecks(sql)

  /** Fails members (with their step records, when they have one) in one transaction behind the lease. */
  const failAll = (members: ReadonlyArray<{ readonly start: Start; readonly failure: Failure }>, lease: Lease) =>
    members.length === 0 ? Effect.void : settled(
      sql,
      lease,
      Effect.gen(function*() {
        const ends = members.map(({ failure, start }) => ({ actionId: start.action.actionId, run: start.run, outcome: { error: failure.message } satisfies StepEnd }))
        yield* firstStepEnds(sql, { projectId: members[0]!.start.action.projectId, runs: ends }, sql`true`)
        for (const { failure, start } of members) yield* transitions.fail(start.action, failure)
        const tripping = members.find(({ failure }) => isUpstreamWriteFailure(failure))
        if (tripping !== undefined) yield* tripCircuitBreaker(sql, tripping.start.action.projectId)
      })
    )

  /**
   * The bulk call could not be made, or its answer is unknown: an unavailable upstream hands the job back (on the
   * last attempt the members fail); a refused credential or a read-only account leaves the members to the
   * one-member apply, which ends each as it ends a single action (nothing was written); any other refusal of the
   * written call fails its members as it fails a single action.
   */
  const unwritten = (error: UpstreamFailure, members: ReadonlyArray<Start>, lease: Lease, lastAttempt: boolean) =>
    Effect.gen(function*() {
      if (error._tag === "UpstreamUnavailable" && !lastAttempt) {
        return { _tag: "Unavailable", error: error.message, retryAfterMs: error.retry_after_ms } satisfies BulkOutcome
      }
      if (error._tag === "ConnectionError" || error._tag === "ReadOnlyAccount") {
        return { _tag: "Ended", ended: new Map(), alone: members.map((member) => member.action.actionId) } satisfies BulkOutcome
      }
      const failure: Failure = {
        step: null,
        stepName: null,
        message: error._tag === "UpstreamUnavailable"
          ? `upstream_unavailable: gave up: ${error.message}`
          : `${error._tag === "NotFound" ? "not_found" : "upstream_error"}: ${error.message}`,
        upstreamRequestId: error._tag === "UpstreamError" ? error.request_id ?? null : null
      }
      yield* failAll(members.map((start) => ({ start, failure })), lease)
      return { _tag: "Ended", ended: new Map(members.map((start) => [start.action.actionId, "failed"])), alone: [] } satisfies BulkOutcome
    })

  /**
   * What every bulk call of a run starts from, read once when the run starts (it holds the changeset's lease, so
   * nothing else moves its members meanwhile): the account, its connection and kill switch, each member's run, and
   * the warehouse rows the members' checks read.
   */
  const start = (projectId: string, members: ReadonlyArray<MemberRecord>) =>
    Effect.gen(function*() {
      const { account, autoApplyPaused, connection, platformAutoApply, runs } = yield* readMembersStart(sql, projectId, members.map((member) => member.actionId))
      const view = account === null ? undefined : yield* prefetchedView(account, namedIn(members.map((member) => member.payload))).pipe(
        Effect.provideService(SqlClient.SqlClient, sql)
      )
      return { account, autoApplyPaused, connection, platformAutoApply, projectId, runOf: new Map(runs.map((run) => [run.actionId, run])), view }
    })

  /**
   * Applies `members` (pending, of one kind on one ad group: `bulkMember`'s key) in one bulk call under the
   * changeset job's member lease. `lastAttempt`: an unavailable upstream fails the members instead of retrying.
   */
  const apply = (
    runStart: Effect.Effect.Success<ReturnType<typeof start>>,
    members: ReadonlyArray<{ readonly action: MemberRecord; readonly bulk: BulkMember }>,
    lease: Lease,
    lastAttempt: boolean
  ) =>
    Effect.gen(function*() {
      const bulkOf = new Map(members.map((member) => [member.action.actionId, member.bulk]))
      const { account, autoApplyPaused, connection, platformAutoApply, projectId, runOf, view } = runStart
      // The members the call takes: those in plan order up to the first that needs the one-member apply, which is
      // then left to it (`alone`); the members after it wait for a later call, so a stop at it skips them.
      let alone: string | undefined
      const upTo = <A extends Start>(items: ReadonlyArray<A>, fits: (item: A) => boolean) => {
        const cut = items.findIndex((item) => !fits(item))
        if (cut === -1) return items
        alone = items[cut]!.action.actionId
        return items.slice(0, cut)
      }
      const none = (): BulkOutcome => ({ _tag: "Ended", ended: new Map(), alone: alone === undefined ? [] : [alone] })
      if (account === null || view === undefined) return { _tag: "Ended", ended: new Map(), alone: members.map((member) => member.action.actionId) } satisfies BulkOutcome
      // A run begun otherwise than by a bulk call's one step (a step recorded done), or a member no longer pending,
      // ends by the one-member apply.
      const fresh = upTo(
        members.map((member) => {
          const run = runOf.get(member.action.actionId)
          return { action: member.action, run: run?.applyRun ?? 0, status: run?.status, before: run?.recordedSteps ?? [] }
        }),
        (start) =>
          (start.status === "approved" || start.status === "applying") &&
          start.before.every((step) => step.step === 1 && step.status === "started")
      )

      const verdicts = new Map<string, boolean>()
      for (const start of fresh) {
        // A run begun is reconciled by the call's read of the rows, not checked again (a sync may show its writes).
        const verdict = start.before.length > 0
          ? true
          : (yield* bulkOf.get(start.action.actionId)!.check(checks, {
              action: start.action,
              account,
              killSwitchOn: platformAutoApply,
              autoApplyPaused,
              view
            }))._tag === "Proceed"
        verdicts.set(start.action.actionId, verdict)
        if (!verdict) break
      }
      const cleared = upTo(fresh, (start) => verdicts.get(start.action.actionId) === true)
      const first = cleared[0]
      if (first === undefined) return none()

      const upstream = yield* Effect.either(Effect.gen(function*() {
        const client = yield* connections.clientFor(account.orgId, { reuse: true, saved: connection ?? undefined })
        const context: StepContext = { client, accountId: account.upstreamAccountId, ids: {}, acceptDrift: false }
        return yield* readParts(context, cleared.map((start) => bulkOf.get(start.action.actionId)!.part))
      }))
      // Nothing written yet: the one-member apply meets the same failure and ends each member as a single action.
      if (upstream._tag === "Left") {
        const error = upstream.left
        return error._tag === "UpstreamUnavailable" && !lastAttempt
          ? { _tag: "Unavailable", error: error.message, retryAfterMs: error.retry_after_ms } satisfies BulkOutcome
          : { _tag: "Ended", ended: new Map(), alone: cleared.map((start) => start.action.actionId) } satisfies BulkOutcome
      }
      const read = upstream.right
      // A member with a row moved since proposal is explained (who moved it) by the one-member apply.
      const moved = new Map(cleared.map((start, i) => [start, read.drift[i] !== null]))
      const writing = upTo(cleared, (start) => moved.get(start) === false)
      if (writing.length === 0) return none()

      // Marked applying with their step under way in one statement behind the lease, right before the write.
      const runs = writing.map((start) => ({ actionId: start.action.actionId, run: start.run }))
      const marked = yield* transitions.markMembersApplying(
        first.action.projectId,
        runs.map((run) => run.actionId),
        lease.renewal,
        [(fence) => firstStepStarts(sql, { projectId: first.action.projectId, runs }, bulkOf.get(first.action.actionId)!.stepName, fence)]
      )
      if (marked === 0) return yield* lease.lost

      const written = yield* Effect.either(read.write(writing.length, false))
      // Left applying with their step under way: a later attempt (or the one-member apply) reads the rows first
      // and writes only what did not land.
      if (written._tag === "Left") return yield* unwritten(written.left, writing, lease, lastAttempt)

      // Each part's outcome is its member's: applied when one of its rows landed, failed when every row was refused.
      const results = writing.map((start, i) => ({ start, outcome: written.right[i]! }))
      const applied = results.flatMap(({ outcome, start }) => (outcome._tag === "Applied" ? [{ start, result: outcome.result }] : []))
      const refused = results.flatMap(({ outcome, start }) => (outcome._tag === "Refused" ? [{ start, message: outcome.message }] : []))
      if (applied.length > 0) {
        const ended = yield* endAppliedRun(sql, {
          projectId,
          runs: applied.map(({ result, start }) => ({ actionId: start.action.actionId, result: { warnings: result.warnings, result: result.ids } })),
          settlement: lease.renewal,
          lastSteps: (fence) =>
            firstStepEnds(sql, { projectId: first.action.projectId, runs: applied.map(({ result, start }) => ({ actionId: start.action.actionId, run: start.run, outcome: { output: result } })) }, fence),
          touched: mergeTouched(applied.map(({ result }) => result.touched))
        })
        if (!ended.fenced) return yield* lease.lost
        const now = yield* Clock.currentTimeMillis
        for (const { start } of applied) {
          yield* observeApplyLag(start.action.kind, (now - Date.parse(start.action.decidedAt ?? start.action.created_at)) / 1000)
        }
      }
      yield* failAll(refused.map(({ message, start }) => ({ start, failure: { step: null, stepName: null, message, upstreamRequestId: null } })), lease)
      yield* Effect.logInfo("changeset members applied in one bulk call").pipe(
        Effect.annotateLogs({ members: writing.length, applied: applied.length, failed: refused.length })
      )
      return {
        _tag: "Ended",
        ended: new Map([
          ...applied.map(({ start }): [string, "applied"] => [start.action.actionId, "applied"]),
          ...refused.map(({ start }): [string, "failed"] => [start.action.actionId, "failed"])
        ]),
        alone: alone === undefined ? [] : [alone]
      } satisfies BulkOutcome
    }).pipe(Effect.withSpan("MemberBulk.apply", { attributes: { members: members.length } }))

  return { start, apply } as const
}
