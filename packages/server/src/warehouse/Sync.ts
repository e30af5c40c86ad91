/**
 * Sync: upstream → warehouse for one account. Entities are read whole; daily metrics per level are read
 * for the window (90 days on the first sync, then from a few days before the last synced day, because
 * the platform restates recent days) and written once, into tables of the sync's own without indexes: the
 * daily rows of the months the window touches beside those months' other days from the current copy, the
 * search terms, and (when the window holds every day they need) the spend suffixes, computed from the rows
 * already in memory. Their indexes are then built in sorted passes. One short transaction replaces the
 * entities and makes those tables the account's partitions of `daily_metrics` (one per month touched; the
 * other months stay) and of `search_terms` and `spend_suffixes`; until it commits readers see the previous
 * copy, and a failed sync drops its tables and leaves the copy untouched.
 *
 * The parts: SyncPlan (the window), StageMetrics (reports into the sync's tables, with ReportRows and
 * SpendSuffixes), SyncEntities (read and replace), PrepareCopy (indexes, carried rows), SwapCopy (the
 * transaction), GenerationTables (the tables' names and DDL). This file runs them in order.
 */
import { AccountNotFound } from "@acs/domain/Errors"
import type { UpstreamClient } from "@acs/upstream/Upstream"
import { SqlClient } from "@effect/sql"
import { Cause, Clock, Duration, Effect, Fiber, Ref, Schedule } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { accountWrites } from "../accounts/Accounts.ts"
import {
  ACCOUNT_PARENTS,
  makeGenerationTables,
  monthsFrom,
  nextMonth,
  projectLiteral,
  stagedMonth,
  tablesOf
} from "./GenerationTables.ts"
import { makePrepareCopy } from "./PrepareCopy.ts"
import { type SuffixOwners, suffixDaysOf } from "./SpendSuffixes.ts"
import { type Progress, makeStaging } from "./StageMetrics.ts"
import { readEntities } from "./SyncEntities.ts"
import { InitialDays, planWindow } from "./SyncPlan.ts"
import { SyncRuns, type SyncRow } from "./SyncRuns.ts"
import { makeSwapCopy } from "./SwapCopy.ts"
import { addDays, MAX_DAYS } from "./Window.ts"

export const makeSync = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const runs = yield* SyncRuns
  const initialDays = yield* InitialDays
  const { discardTables, dropAbandonedTables } = makeGenerationTables(sql)
  const { stageMetrics } = makeStaging(sql)
  const { prepare, retain } = makePrepareCopy(sql)
  const { swap } = makeSwapCopy(sql)

  /** Runs a started sync to its end; any failure marks it failed and leaves the previous copy in place. */
  const run = (
    client: UpstreamClient,
    sync: SyncRow,
    account: AccountRecord
  ) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const plan = planWindow(account, now, initialDays)
      const tables = tablesOf(sync.syncId)
      yield* runs.setWindow(sync.projectId, sync.syncId, plan.windowStart, plan.windowEnd)
      const progress = yield* Ref.make<Progress>({ step: "entities", done: 0, total: 0, rows: 0 })
      const heartbeat = yield* Ref.get(progress).pipe(
        Effect.flatMap((p) => runs.beat(sync.projectId, sync.syncId, { step: p.step, done: p.done, total: p.total }, p.rows)),
        Effect.repeat(Schedule.spaced(Duration.seconds(5))),
        Effect.fork
      )
      const upstreamAccount = (yield* client.accounts).find((a) => a.upstreamAccountId === account.upstreamAccountId)
      if (upstreamAccount === undefined) {
        // The credentials no longer reach the account: say so on the account, keep its last copy readable.
        yield* accountWrites(sql).markDisconnected(account.projectId).pipe(Effect.orDie)
        return yield* new AccountNotFound({ message: `upstream account ${account.upstreamAccountId} is no longer reachable` })
      }
      yield* dropAbandonedTables
      const partitionValue = yield* projectLiteral(account.projectId)
      // The partition's bound as a constraint from the start, so attaching a table needs no scan to check it.
      yield* Effect.forEach(ACCOUNT_PARENTS, (parent) =>
        sql`
          CREATE TABLE ${sql(`${parent}_${sync.syncId}`)}
            (LIKE ${sql(parent)} INCLUDING CONSTRAINTS, CHECK (project_id = ${sql.literal(partitionValue)}))`, { discard: true })
        .pipe(Effect.orDie)
      // The daily rows by day, a leaf per month the window touches, so inserts route themselves; each leaf
      // carries the bound of the account's partition for its month that the swap makes it.
      yield* sql`CREATE TABLE ${sql(tables.metrics)} (LIKE daily_metrics INCLUDING CONSTRAINTS) PARTITION BY RANGE (day)`.pipe(Effect.orDie)
      yield* Effect.forEach(monthsFrom(plan.windowStart, plan.windowEnd), (month) => {
        const from = sql.literal(`'${month}'`)
        const to = sql.literal(`'${nextMonth(month)}'`)
        return sql`
          CREATE TABLE ${sql(stagedMonth(tables, month))} PARTITION OF ${sql(tables.metrics)}
            (CHECK (project_id = ${sql.literal(partitionValue)} AND day >= ${from} AND day < ${to})) FOR VALUES FROM (${from}) TO (${to})`
      }, { discard: true }).pipe(Effect.orDie)
      const hasPrevious = (yield* sql`SELECT 1 FROM metric_generations WHERE project_id = ${account.projectId}`.pipe(Effect.orDie)).length > 0
      // The suffixes can be computed from the rows in memory when the window holds every day they cover: on a
      // first sync (no retained days), or when the window spans all 90 days. Otherwise the swap builds them.
      const suffixDays = !hasPrevious || plan.windowStart <= addDays(plan.windowEnd, -(MAX_DAYS - 1))
        ? suffixDaysOf(plan.windowEnd)
        : undefined
      const suffixOwners: SuffixOwners = {
        campaigns: new Map(),
        adGroups: new Map(),
        keywords: new Map(),
        searchTerms: new Map(),
        ads: new Map()
      }
      const campaigns = yield* client.campaigns(account.upstreamAccountId)
      yield* Ref.update(progress, (p) => ({ ...p, step: "metrics", total: campaigns.length + 1 }))
      // Entities and reports are read side by side: both mostly wait on the platform.
      const [children, metricRows] = yield* Effect.all([
        readEntities(client, account.upstreamAccountId, campaigns),
        stageMetrics(client, tables, account, plan, campaigns, suffixDays, suffixOwners, progress)
      ], { concurrency: 2 })
      const entities = { ...children, readOnly: upstreamAccount.readOnly }
      yield* retain(tables, account.projectId, plan).pipe(Effect.orDie)
      yield* prepare(tables, account.projectId, plan, entities, suffixOwners, hasPrevious)
      // The heartbeat goes on through the swap (a long one must not look abandoned); beats only touch a
      // running sync, so none can overwrite the outcome the swap writes.
      yield* Ref.update(progress, (p) => ({ ...p, step: "swap" }))
      const written = yield* swap(sync.syncId, tables, account, plan, entities, suffixDays !== undefined, metricRows)
      yield* Fiber.interrupt(heartbeat)
      yield* Effect.logInfo("sync succeeded").pipe(Effect.annotateLogs({ syncId: sync.syncId, rowsWritten: written }))
      return written
    }).pipe(
      Effect.onExit((exit) =>
        Effect.all([
          exit._tag === "Failure" ? runs.fail(sync.projectId, sync.syncId, describeFailure(exit.cause)) : Effect.void,
          discardTables(sync.projectId, sync.syncId)
        ], { discard: true })
      ),
      Effect.annotateLogs({ projectId: account.projectId, syncId: sync.syncId }),
      Effect.withSpan("Sync.run")
    )

  return { run } as const
})

const describeFailure = (cause: Cause.Cause<unknown>): string => {
  if (Cause.isInterruptedOnly(cause)) return "interrupted: the instance stopped during the sync"
  const failure = Cause.squash(cause)
  return typeof failure === "object" && failure !== null && "message" in failure && typeof failure.message === "string"
    ? failure.message
    : String(failure)
}
