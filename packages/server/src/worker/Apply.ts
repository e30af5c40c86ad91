/**
 * Applies one claimed action (docs/contract.md 3, "The apply worker"), composed of named parts: what it starts
 * from (StartingPoint.ts, carried by the claim), the checks before the first upstream call (ApplyChecks.ts), the
 * steps with their records (RunSteps.ts, StepRecords.ts), and the run's end (RunEndStatement.ts for an applied
 * run, RunEndings.ts for a failed or demoted one). `upstream_unavailable` hands the job back for a later attempt,
 * continuing after the last recorded step.
 * Every upstream write and every state write is fenced by the job's lease (Lease.ts): a worker that lost its job
 * (paused past its lease, then claimed by another) stops before its next write and leaves the job to the new
 * owner. The write that ends the run deletes the job with it, so the outcome and the job's end commit together
 * (docs/decisions/pipeline.md).
 */
import type { ActionRecord, ActionStatus } from "@acs/domain/Actions"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, Option, Schema } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { Connections } from "../accounts/Connections.ts"
import { kindNamed } from "../actions/kinds/Catalog.ts"
import type { KindDefinition } from "../actions/kinds/Kind.ts"
import { Transitions } from "../actions/pipeline/Transitions.ts"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { SecretBox } from "../db/SecretBox.ts"
import { TestDatabase } from "../db/TestDatabase.ts"
import { LeaseLost } from "../queue/Jobs.ts"
import { observeApplyLag } from "../telemetry/Metrics.ts"
import { makeApplyChecks } from "./ApplyChecks.ts"
import type { Lease } from "./Lease.ts"
import { endAppliedRun } from "./RunEndStatement.ts"
import { makeRunEndings } from "./RunEndings.ts"
import { makeRunSteps } from "./RunSteps.ts"
import { readStartingPoint, type Starting, startFrom, type StartingRow } from "./StartingPoint.ts"
import { makeStepRecords } from "./StepRecords.ts"
import { makeWriteFence } from "./WriteFence.ts"

/**
 * What became of the job: done (any terminal or demoted state), to be tried again later, or abandoned because
 * the lease was lost (another worker may own the job now and settles it).
 */
export type ApplyOutcome =
  /**
   * `settled`: the job was deleted with the outcome's state change; otherwise the worker completes it. `status`:
   * where the action is now (undefined: it is gone, or its account is).
   */
  | { readonly _tag: "Done"; readonly settled: boolean; readonly status: ActionStatus | undefined }
  | { readonly _tag: "Retry"; readonly error: string; readonly retryAfterMs: number | undefined }
  | { readonly _tag: "LeaseLost" }

export class Apply extends Effect.Service<Apply>()("acs/Apply", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const connections = yield* Connections
    const transitions = yield* Transitions
    const records = makeStepRecords(sql, transitions)
    const runSteps = makeRunSteps(sql, records)
    const checks = makeApplyChecks(sql)
    const { demote, fail, whoChanged } = makeRunEndings(sql, transitions)

    const failure = (message: string, upstreamRequestId: string | null = null) => ({ step: null, stepName: null, message, upstreamRequestId })

    /**
     * A changeset's member is never demoted: inside an approved changeset there is no queue of its own to wait
     * in, so what would demote it (a drift, the policy no longer clearing it) fails it, naming the reasons.
     */
    const held = (action: ActionRecord, reasons: ReadonlyArray<string>, lease: Lease, member: boolean) =>
      member
        ? fail(action, failure(`not applied: ${reasons.join("; ")}`), lease).pipe(Effect.as<ActionStatus>("failed"))
        : demote(action, reasons, lease).pipe(Effect.as<ActionStatus>("proposed"))

    /** Where the run ends the action (its job ended with it). */
    const runAction = <P>(definition: KindDefinition<P>, starting: Starting, account: AccountRecord, lease: Lease, member: boolean) =>
      Effect.gen(function*() {
        const { action, before, run } = starting
        const payload = yield* Schema.decodeUnknown(definition.payload)(action.payload).pipe(Effect.orDie)
        const verdict = yield* checks.check(definition, {
          action,
          payload,
          account,
          killSwitchOn: starting.killSwitchOn,
          autoApplyPaused: starting.autoApplyPaused,
          namedCampaign: starting.namedCampaign,
          begun: before.length > 0
        })
        if (verdict._tag === "Demote") return yield* held(action, verdict.reasons, lease, member)
        if (verdict._tag === "Fail") return yield* fail(action, failure(verdict.message), lease).pipe(Effect.as<ActionStatus>("failed"))
        const fence = makeWriteFence(lease.check)
        const client = fence.fenced(yield* connections.clientFor(account.orgId, { reuse: true, saved: starting.connection }))
        const outcome = yield* runSteps(definition, action, run, payload, client, account, before, lease, fence)
        switch (outcome._tag) {
          case "Unavailable":
            return yield* outcome.error
          case "Drift":
            return yield* held(action, [`drift: ${outcome.reason}${yield* whoChanged(client, account, action)}`], lease, member)
          case "Failed":
            // The kept client's credentials were refused (a token refresh): a new client next time, the connection marked.
            if (outcome.refusedCredentials !== null) yield* connections.refused(account.orgId, outcome.refusedCredentials)
            return yield* fail(action, outcome.failure, lease, { readOnly: outcome.readOnly }).pipe(Effect.as<ActionStatus>("failed"))
          case "Applied": {
            // One statement ends the run: the job's deletion fences the last step's record, the write-back and
            // the status change with its event (and, for a compensation, its original's reversal).
            const last = outcome.last
            const ended = yield* endAppliedRun(sql, {
              projectId: action.projectId,
              runs: [{ actionId: action.actionId, result: { warnings: outcome.warnings, result: outcome.ids } }],
              settlement: lease.settlement,
              lastSteps: last === undefined ? undefined : records.endWrite(action, run, last.index, { output: last.output }),
              touched: outcome.touched
            })
            if (!ended.fenced) return yield* lease.lost
            yield* Effect.logInfo("action applied").pipe(Effect.annotateLogs({ actionId: action.actionId, kind: action.kind }))
            yield* observeApplyLag(action.kind, ((yield* Clock.currentTimeMillis) - Date.parse(action.decidedAt ?? action.created_at)) / 1000)
            return ended.applied > 0 ? "applied" : action.status
          }
        }
      })

    const done = (settledJob: boolean, status: ActionStatus | undefined): ApplyOutcome => ({ _tag: "Done", settled: settledJob, status })

    const pending = (start: Starting) => start.action.status === "approved" || start.action.status === "applying"

    /**
     * Runs one claimed action to a terminal or demoted state (ending its job in the same transaction), or says
     * to retry it later. `lease` guards every write: once it fails, the apply stops where it is and the
     * outcome is `LeaseLost`. `member`: a changeset's member, applied under its changeset's lease (whose
     * `settlement` then only renews it: the run's end is not the job's) and failed where it would be demoted.
     */
    const apply = (actionId: string, projectId: string, lease: Lease, carried: StartingRow | undefined, member = false) =>
      Effect.gen(function*() {
        let found = carried === undefined ? undefined : startFrom(carried)
        // The claim read the action with its statement's snapshot, which may predate a re-enqueue the claim
        // saw (an approval committed meanwhile): "nothing to do" is confirmed by a read of its own.
        if (found === undefined || !pending(found)) {
          const read = yield* readStartingPoint(sql, projectId, actionId)
          found = read === undefined ? undefined : startFrom(read)
        }
        // A job whose action was decided or applied meanwhile has nothing left to do.
        if (found === undefined || !pending(found)) return done(false, found?.action.status)
        const starting = found
        const { account, action } = starting
        if (account === undefined) return done(false, undefined)
        const failed = (message: string, upstreamRequestId: string | null = null, readOnly = false) =>
          fail(action, failure(message, upstreamRequestId), lease, { readOnly }).pipe(Effect.as(done(true, "failed")))
        // Outside changes are recorded applied and never queued; nothing applies them.
        if (action.kind === "external_change") return done(false, action.status)
        return yield* kindNamed(action.kind).use((definition) => runAction(definition, starting, account, lease, member)).pipe(
          // Every way through runAction ends the run with its job (or fails, below).
          Effect.map((status) => done(true, status)),
          Effect.catchTags({
            UpstreamUnavailable: (error) =>
              records.markApplying(action, lease).pipe(
                Effect.as({ _tag: "Retry", error: error.message, retryAfterMs: error.retry_after_ms } as ApplyOutcome)
              ),
            ConnectionError: (error) => failed(`connection_error: ${error.message}`),
            ReadOnlyAccount: (error) => failed(`read_only_account: ${error.message}`, null, true),
            UpstreamError: (error) => failed(`upstream_error: ${error.message}`, error.request_id ?? null),
            NotFound: (error) => failed(`not_found: ${error.message}`)
          })
        )
      }).pipe(
        Effect.catchSomeDefect((defect) => defect instanceof LeaseLost ? Option.some(Effect.fail(defect)) : Option.none()),
        Effect.catchTag("LeaseLost", (lost) =>
          Effect.logWarning("lease lost mid-apply: the job is left to the worker that holds it now").pipe(
            Effect.annotateLogs({ actionId, jobId: lost.jobId }),
            Effect.as({ _tag: "LeaseLost" } as ApplyOutcome)
          )),
        Effect.withSpan("Apply.apply", { attributes: { actionId }, ...HOT_SPAN })
      )

    return { apply, fail } as const
  }),
  // Connections (over the upstream port) comes from the application layer.
  dependencies: [Transitions.Default]
}) {
  /**
   * Over the embedded test database (db/TestDatabase.ts), with the connections it applies through, for
   * in-process tests; the upstream port stays the caller's (the simulator's: upstream/ sits above worker/).
   */
  static readonly Test = Apply.Default.pipe(
    Layer.provideMerge(Connections.Default),
    Layer.provideMerge(Layer.mergeAll(SecretBox.Default, TestDatabase))
  )
}
