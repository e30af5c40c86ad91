/**
 * The apply workers of this instance: `WORKER_CONCURRENCY` fibers claiming jobs from Postgres (0: none here,
 * the jobs wait for another instance or an `acs worker` process; WorkerMain.ts). They wake on a
 * proposal committed here, on `NOTIFY acs_jobs` from any instance (PostgreSQL mode; PGlite has one backend and
 * no LISTEN), and on a short poll as a safety net. A claimed job holds a lease that a heartbeat extends; on
 * shutdown the job in hand finishes (it is uninterruptible) before the fibers stop. A worker that loses the
 * lease (paused past it, and the job rescued by another) stops before its next write and leaves the job alone.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Cause, Config, Duration, Effect, Fiber, Layer, Option, Ref, Schedule, Stream } from "effect"
import * as Os from "node:os"
import { Idempotency } from "../actions/pipeline/Idempotency.ts"
import { Ledger } from "../actions/pipeline/Ledger.ts"
import { DatabaseMode } from "../db/Database.ts"
import { HOT_SPAN } from "../db/HotSpan.ts"
import { newId } from "../db/Ids.ts"
import { Apply } from "./Apply.ts"
import { type ChangesetOutcome, ChangesetRun } from "./ChangesetRun.ts"
import { claimOrNextDue } from "./ClaimStatement.ts"
import type { Lease } from "./Lease.ts"
import type { StartingRow } from "./StartingPoint.ts"
import { type ClaimedJob, Jobs, JOBS_CHANNEL, LeaseLost, readyAccounts } from "../queue/Jobs.ts"
import { WorkerSignal } from "../queue/WorkerSignal.ts"
import { linkTo } from "../telemetry/TraceContext.ts"

export const WorkerConfig = Config.all({
  concurrency: Config.integer("WORKER_CONCURRENCY").pipe(Config.withDefault(4)),
  leaseMs: Config.integer("WORKER_LEASE_MS").pipe(Config.withDefault(30_000)),
  pollMs: Config.integer("WORKER_POLL_MS").pipe(Config.withDefault(1_000)),
  maxAttempts: Config.integer("APPLY_MAX_ATTEMPTS").pipe(Config.withDefault(8))
})

/** Exponential backoff from 500 ms, capped at a minute, never sooner than the upstream's Retry-After. */
export const retryDelayMs = (attempts: number, retryAfterMs: number | undefined): number =>
  Math.max(retryAfterMs ?? 0, Math.min(60_000, 500 * 2 ** Math.max(0, attempts - 1)))

export const WorkerLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* WorkerConfig
    // An API process next to separate worker processes (`acs worker`): it enqueues, they apply.
    if (config.concurrency <= 0) return yield* Effect.logInfo("no apply workers on this instance (WORKER_CONCURRENCY=0)")
    const sql = yield* SqlClient.SqlClient
    const jobs = yield* Jobs
    const apply = yield* Apply
    const changesets = yield* ChangesetRun
    const ledger = yield* Ledger
    const signal = yield* WorkerSignal
    const idempotency = yield* Idempotency
    const instance = `${Os.hostname()}:${process.pid}:${newId("w")}`

    /** Renews the lease every third of it; stops and records the loss once the job is no longer ours. */
    const heartbeat = (job: ClaimedJob, workerId: string, lost: Ref.Ref<boolean>) =>
      jobs.heartbeat(job, workerId, config.leaseMs).pipe(
        Effect.repeat({ schedule: Schedule.spaced(Duration.millis(Math.max(100, Math.floor(config.leaseMs / 3)))), while: (held) => held }),
        Effect.zipRight(Ref.set(lost, true)),
        Effect.delay(Duration.millis(Math.floor(config.leaseMs / 3)))
      )

    /** A changeset's job: its run settles or gives back the job as an action's apply does, its last attempt inside the run. */
    const processChangeset = (job: Extract<ClaimedJob, { readonly changesetId: string }>, lease: Lease, workerId: string) =>
      Effect.gen(function*() {
        const outcome = yield* changesets.run(job, lease, job.attempts >= config.maxAttempts).pipe(
          Effect.catchAllDefect((defect) =>
            Effect.logError("changeset apply crashed; the job will be retried").pipe(
              Effect.annotateLogs({ changesetId: job.changesetId, defect: String(defect) }),
              Effect.as<ChangesetOutcome>({ _tag: "Retry", error: "internal error during apply", retryAfterMs: undefined, progressed: false })
            )
          )
        )
        if (outcome._tag === "LeaseLost") return true
        if (outcome._tag === "Done") return outcome.settled || (yield* jobs.complete(job, workerId))
        // The upstream's unavailability is given up on inside the run (its last attempt); what is left is a crash.
        if (!outcome.progressed && job.attempts >= config.maxAttempts) {
          return yield* changesets.giveUp(job, lease, `internal error: gave up after ${job.attempts} attempts: ${outcome.error}`).pipe(
            Effect.as(true),
            Effect.catchTag("LeaseLost", () => Effect.succeed(false))
          )
        }
        // Progress made: the next attempt is soon and counts afresh.
        const delay = retryDelayMs(outcome.progressed ? 1 : job.attempts, outcome.retryAfterMs)
        return yield* jobs.retryLater(job, workerId, delay, outcome.error, outcome.progressed)
      })

    const processJob = (job: ClaimedJob, carried: StartingRow | undefined, workerId: string) =>
      Effect.gen(function*() {
        const lost = yield* Ref.make(false)
        // The error is made only when the lease is lost (an error captures a stack trace when made).
        const loseLease = Ref.set(lost, true).pipe(Effect.zipRight(Effect.failSync(() => new LeaseLost({ jobId: job.jobId }))))
        // Asked right before every write of the apply: a paused worker must not write after another took the job.
        const lease: Lease = {
          check: Effect.gen(function*() {
            if (!(yield* Ref.get(lost)) && (yield* jobs.heartbeat(job, workerId, config.leaseMs))) return
            return yield* loseLease
          }),
          renewal: jobs.renewal(job, workerId, config.leaseMs),
          lost: loseLease,
          settlement: jobs.settlement(job, workerId),
          settle: Effect.gen(function*() {
            if (!(yield* Ref.get(lost)) && (yield* jobs.complete(job, workerId))) return
            return yield* loseLease
          })
        }
        const beating = yield* Effect.fork(Effect.interruptible(heartbeat(job, workerId, lost)))
        if (job.changesetId !== null) {
          const changesetSettled = yield* processChangeset(job, lease, workerId).pipe(
            Effect.ensuring(Fiber.interrupt(beating))
          )
          if (!changesetSettled) {
            yield* Effect.logWarning("lease lost before the job was settled: it is left to the worker that holds it now").pipe(
              Effect.annotateLogs({ changesetId: job.changesetId, jobId: job.jobId })
            )
          }
          return
        }
        const outcome = yield* apply.apply(job.actionId, job.projectId, lease, carried).pipe(
          Effect.ensuring(Fiber.interrupt(beating)),
          Effect.catchAllDefect((defect) =>
            Effect.logError("apply crashed; the job will be retried").pipe(
              Effect.annotateLogs({ actionId: job.actionId, defect: String(defect) }),
              Effect.as({ _tag: "Retry" as const, error: "internal error during apply", retryAfterMs: undefined })
            )
          )
        )
        // The worker that holds the job now settles it.
        if (outcome._tag === "LeaseLost") return
        const settled = yield* Effect.gen(function*() {
          // Most outcomes ended the job with their state change (Apply's `settled`).
          if (outcome._tag === "Done") return outcome.settled || (yield* jobs.complete(job, workerId))
          if (job.attempts >= config.maxAttempts) {
            const action = yield* ledger.find(job.projectId, job.actionId)
            if (action === undefined) return yield* jobs.complete(job, workerId)
            // Fails the action and ends the job in one transaction.
            yield* apply.fail(action, {
              step: null,
              stepName: null,
              message: `upstream_unavailable: gave up after ${job.attempts} attempts: ${outcome.error}`,
              upstreamRequestId: null
            }, lease)
            return true
          }
          return yield* jobs.retryLater(job, workerId, retryDelayMs(job.attempts, outcome.retryAfterMs), outcome.error)
        }).pipe(Effect.catchTag("LeaseLost", () => Effect.succeed(false)))
        if (!settled) {
          yield* Effect.logWarning("lease lost before the job was settled: it is left to the worker that holds it now").pipe(
            Effect.annotateLogs({ actionId: job.actionId, jobId: job.jobId })
          )
        }
      }).pipe(
        Effect.uninterruptible,
        // A trace of its own, linked to the proposal's and to what queued it (an approval, a revert): the
        // apply runs later, maybe in another process, so it is not a child of either request.
        Effect.withSpan("worker.apply", {
          root: true,
          kind: "consumer",
          ...HOT_SPAN,
          attributes: {
            ...(job.changesetId === null ? { actionId: job.actionId } : { changesetId: job.changesetId }),
            projectId: job.projectId,
            attempt: job.attempts
          },
          links: [
            ...linkTo(job.actionTraceParent, { "acs.link": "proposal" }),
            ...(job.jobTraceParent === job.actionTraceParent ? [] : linkTo(job.jobTraceParent, { "acs.link": "queued_by" }))
          ]
        })
      )

    // Polling an empty queue is not traced (a trace a second per worker would bury the applies).
    const untraced = Effect.withTracerEnabled(false)

    /** Waiting at most a poll, at least 10 ms, for what is due in `dueInMs`. */
    const waitFor = (dueInMs: number | null) => Math.max(10, Math.min(config.pollMs, dueInMs ?? config.pollMs))

    const loop = (workerId: string) => {
      // How long to wait for a wake before the next claim (undefined: claim at once). After a job the claim
      // comes at once only when an account is known to have another job waiting; otherwise it would find
      // nothing (every enqueue sends a wake naming its account, and the poll stays the safety net).
      let waitMs: number | undefined
      return Effect.gen(function*() {
        if (waitMs !== undefined) yield* signal.sleep(waitMs)
        // Jobs are claimed per account, in turn; with no account in hand, one read finds those with work.
        let account = yield* signal.nextAccount
        if (Option.isNone(account)) {
          const found = yield* untraced(readyAccounts(sql))
          yield* Effect.forEach(found.ready, signal.ready, { discard: true })
          account = yield* signal.nextAccount
          if (Option.isNone(account)) {
            waitMs = waitFor(found.nextDueInMs)
            return
          }
        }
        // The claim carries what the apply starts from: one round trip for both.
        const claimed = yield* untraced(claimOrNextDue(sql, workerId, account.value, config.leaseMs))
        if (claimed.job !== undefined) {
          if (waitMs === undefined) yield* signal.consume
          if (claimed.moreDue) yield* signal.ready(account.value)
          waitMs = (yield* signal.hasAccounts) ? undefined : config.pollMs
          return yield* processJob(claimed.job, claimed.carried, workerId)
        }
        waitMs = (yield* signal.hasAccounts) ? undefined : waitFor(claimed.dueInMs)
      }).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.interrupt
            : Effect.logError("apply worker iteration failed").pipe(
              Effect.annotateLogs({ cause: Cause.pretty(cause) }),
              Effect.zipRight(Effect.sync(() => {
                waitMs = config.pollMs
              }))
            )
        ),
        Effect.forever
      )
    }

    for (let index = 0; index < config.concurrency; index++) {
      yield* Effect.forkScoped(loop(`${instance}#${index}`))
    }

    const databaseUrl = yield* DatabaseMode
    if (Option.isSome(databaseUrl)) {
      const pg = yield* PgClient.PgClient
      yield* pg.listen(JOBS_CHANNEL).pipe(
        // The payload is the job's account.
        Stream.runForEach((projectId) => signal.wake(projectId)),
        Effect.retry(Schedule.spaced(Duration.seconds(1))),
        Effect.forkScoped
      )
    }

    yield* idempotency.purgeExpired.pipe(
      Effect.repeat(Schedule.spaced(Duration.hours(1))),
      Effect.catchAllCause(Effect.logError),
      Effect.forkScoped
    )
    yield* Effect.logInfo("apply workers started").pipe(Effect.annotateLogs({ instance, concurrency: config.concurrency }))
  })
)
