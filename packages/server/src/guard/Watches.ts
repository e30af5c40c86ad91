/**
 * The guard's watches (docs/contract.md 3.4), after each sync of an account that succeeded:
 * 1. open a watch for each change applied since (a changeset's members together, once the changeset ended), with its
 *    scope (WatchScope.ts) and its baseline: the entity's totals over the complete days before the applied day;
 * 2. in the first 24 hours after the apply, the hourly lane: spend only, from the platform's hourly report;
 * 3. review each watch whose next review's days the warehouse now holds (after 1 and 7 complete days): the days after
 *    the apply against the baseline read again, the confounders from the ledger (outside changes and other acs actions
 *    on the entity, its parents or its children inside the windows; a baseline restated since the watch opened), the
 *    verdict by the pure rule (Verdict.ts), recorded with an `action.verdict` event per action in one transaction. A
 *    review's watches are locked (`SKIP LOCKED`), so two instances never make the same review twice;
 * 4. propose the revert of a change whose last review failed (Revert.ts `guardRevert`); an earlier review that fails
 *    warns (its verdict and its event) without undoing a change on a day of data.
 * Reviews follow the syncs that bring their days, never a timer that reads nothing new.
 */
import { type GuardSettings, type Judgement, Watch, WatchWindow } from "@acs/domain/Guard"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { ChangesetRevert } from "../actions/changesets/ChangesetRevert.ts"
import { Ledger } from "../actions/pipeline/Ledger.ts"
import { Revert } from "../actions/pipeline/Revert.ts"
import { BackgroundPace } from "../db/BackgroundPace.ts"
import { decodeRows } from "../db/Rows.ts"
import { writeEvents } from "../events/Outbox.ts"
import { OrgSettings } from "../settings/Settings.ts"
import { countGuardReviews } from "../telemetry/Metrics.ts"
import { addDays, daysBetween } from "../warehouse/Window.ts"
import { ChangePlaces } from "./ChangePlaces.ts"
import { type HourlySpend, hourlyLane } from "./HourlySpend.ts"
import { judge, restatedBaseline } from "./Verdict.ts"
import { changesetScopeOf, WATCHED_KINDS, type WatchScope, watchScopeOf } from "./WatchScope.ts"

/** Complete days before the applied day the baseline covers. */
export const BASELINE_DAYS = 7
/** Complete days after the applied day each review reads. */
export const REVIEW_DAYS: ReadonlyArray<number> = [1, 7]
/** How long before its apply a change may have been proposed and still be watched (the scan's reach into the ledger). */
const LOOKBACK_DAYS = 30
/** Watches opened or reviewed per statement. */
const BATCH = 1_000

const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

const Applied = Schema.Struct({
  actionId: Schema.String,
  kind: Schema.String,
  payload: JsonObject,
  result: Schema.NullOr(JsonObject),
  changesetId: Schema.NullOr(Schema.String),
  appliedDay: Schema.String,
  createdAt: Schema.String
})
const decodeApplied = decodeRows(Applied)

const Confounder = Schema.Struct({ actionId: Schema.String, kind: Schema.String, summary: Schema.String, day: Schema.String })

const Due = Schema.Struct({
  watchId: Schema.String,
  actionIds: Schema.Array(Schema.String),
  appliedDay: Schema.String,
  nextReviewDay: Schema.String,
  reviewsDone: Schema.Int,
  baseline: WatchWindow,
  record: Watch,
  reverted: Schema.Boolean,
  after: WatchWindow,
  baselineNow: WatchWindow,
  confounders: Schema.Array(Confounder)
})
type Due = typeof Due.Type
const decodeDue = decodeRows(Due)

/**
 * The account as a pass reads it once, after the sync that moved its days: its time zone and the days the warehouse
 * holds. The pass's statements take them as values, not by joining `accounts`: on Citus a join of the account's
 * shard with a reference table in a lateral subquery that aggregates is refused (docs/scale.md).
 */
const Held = Schema.Struct({ timeZone: Schema.String, firstSyncedDay: Schema.NullOr(Schema.String), lastSyncedDay: Schema.NullOr(Schema.String) })
type Held = typeof Held.Type
const decodeHeld = decodeRows(Held)

const Recent = Schema.Struct({ watchId: Schema.String, campaignIds: Schema.Array(Schema.String), appliedHour: Schema.String })
const decodeRecent = decodeRows(Recent)

const Pending = Schema.Struct({
  watchId: Schema.String,
  actionIds: Schema.Array(Schema.String),
  changesetId: Schema.NullOr(Schema.String),
  record: Watch
})
const decodePending = decodeRows(Pending)

/** A confounder said in a sentence. */
const confounderText = (c: typeof Confounder.Type): string =>
  `${c.kind === "external_change" ? "a change outside acs" : "another acs action"} on ${c.day}: ${c.summary} (action ${c.actionId})`

/** The review's judgement in one line: a revert's reason and a log's. */
export const verdictLine = (afterDays: number, judgement: Judgement): string =>
  `the guard: ${judgement.verdict} at the ${afterDays}-day review: ${judgement.reasons.join("; ")}`

export class Watches extends Effect.Service<Watches>()("acs/Watches", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const settings = yield* OrgSettings
    const ledger = yield* Ledger
    const revert = yield* Revert
    const changesetRevert = yield* ChangesetRevert
    const places = yield* ChangePlaces
    const { paced } = yield* BackgroundPace

    /**
     * A window's totals as JSON, over `entity_keys` at `level` from `start` to `end` (SQL date expressions), within
     * the days the account's warehouse holds.
     */
    const windowTotals = (projectId: string, held: Held, level: string, keys: string, start: string, end: string) =>
      sql`
        SELECT jsonb_build_object('start', span.s::text, 'end', span.e::text,
          'days', greatest(0, least(span.e, ${held.lastSyncedDay}::date) - greatest(span.s, ${held.firstSyncedDay}::date) + 1),
          'spendMicros', COALESCE(sum(m.spend_micros), 0), 'impressions', COALESCE(sum(m.impressions), 0),
          'taps', COALESCE(sum(m.taps), 0), 'installs', COALESCE(sum(m.installs), 0)) AS totals
        FROM (SELECT (${sql.unsafe(start)})::date AS s, (${sql.unsafe(end)})::date AS e) span
        LEFT JOIN daily_metrics m ON m.project_id = ${projectId} AND m.level = ${sql.unsafe(level)} AND m.entity_key = ANY (${sql.unsafe(keys)})
          AND m.day BETWEEN span.s AND span.e
        GROUP BY span.s, span.e`

    /** `Applied`'s columns, from `actions a` joined with its account `acc`. */
    const appliedColumns = sql.unsafe(`a.action_id, a.kind, a.payload, a.result, a.changeset_id,
      to_char((a.applied_at AT TIME ZONE acc.time_zone)::date, 'YYYY-MM-DD') AS applied_day, a.created_at::text AS created_at`)

    /**
     * Opens the watches of up to a batch of the changes applied since the last pass, proposed after `after` (the last
     * batch's, so a pass reads the ledger once); answers how many it read and opened, and where to go on from.
     */
    const open = (projectId: string, held: Held, after: string | null) =>
      Effect.gen(function*() {
        const applied = yield* sql`
          SELECT ${appliedColumns}
          FROM actions a JOIN accounts acc ON acc.project_id = a.project_id
          LEFT JOIN changesets c ON c.project_id = a.project_id AND c.changeset_id = a.changeset_id
          WHERE a.project_id = ${projectId}
            AND a.created_at > greatest(acc.watched_since, now() - make_interval(days => ${LOOKBACK_DAYS}), ${after}::timestamptz)
            AND a.status = 'applied' AND a.revert_of IS NULL AND a.kind IN ${sql.in(WATCHED_KINDS)}
            AND (a.changeset_id IS NULL OR c.status IN ('applied', 'partially_applied', 'failed'))
            AND NOT EXISTS (SELECT 1 FROM watches w WHERE w.project_id = ${projectId} AND w.watch_id = COALESCE(a.changeset_id, a.action_id))
          ORDER BY a.created_at
          LIMIT ${BATCH}`.pipe(Effect.flatMap(decodeApplied))
        const lone = applied.filter((a) => a.changesetId === null)
        // A changeset's members may run on past the batch: its one watch opens with all of them.
        const changesetIds = [...new Set(applied.flatMap((a) => a.changesetId === null ? [] : [a.changesetId]))]
        const members = changesetIds.length === 0 ? [] : yield* sql`
          SELECT ${appliedColumns}
          FROM actions a JOIN accounts acc ON acc.project_id = a.project_id
          WHERE a.project_id = ${projectId} AND a.changeset_id IN ${sql.in(changesetIds)}
            AND a.status = 'applied' AND a.revert_of IS NULL AND a.kind IN ${sql.in(WATCHED_KINDS)}`.pipe(Effect.flatMap(decodeApplied))
        const byChangeset = new Map<string, Array<typeof Applied.Type>>()
        for (const a of members) byChangeset.set(a.changesetId!, [...(byChangeset.get(a.changesetId!) ?? []), a])
        const opened = [
          ...lone.map((a) => ({ watchId: a.actionId, actionIds: [a.actionId], changesetId: null, appliedDay: a.appliedDay, scope: watchScopeOf(a.kind, a.payload, a.result ?? {}) })),
          ...[...byChangeset].map(([changesetId, members]) => ({
            watchId: changesetId,
            actionIds: members.map((m) => m.actionId),
            changesetId,
            appliedDay: members.map((m) => m.appliedDay).sort().at(-1)!,
            scope: changesetScopeOf(members)
          }))
        ].filter((w): w is typeof w & { readonly scope: WatchScope } => w.scope !== undefined)
        const next = applied.at(-1)?.createdAt ?? after
        if (opened.length === 0) return { candidates: applied.length, opened: 0, next }
        const rows = opened.map((w) => ({
          watch_id: w.watchId,
          action_ids: w.actionIds,
          changeset_id: w.changesetId,
          level: w.scope.level,
          entity_keys: w.scope.entityIds,
          campaign_ids: w.scope.campaignIds,
          ad_group_ids: w.scope.adGroupIds,
          applied_day: w.appliedDay
        }))
        const inserted = yield* sql`
          INSERT INTO watches (project_id, watch_id, action_ids, changeset_id, level, entity_keys, campaign_ids, ad_group_ids,
            applied_day, baseline, next_review_day, record)
          SELECT ${projectId}, n.watch_id, n.action_ids, n.changeset_id, n.level, n.entity_keys, n.campaign_ids, n.ad_group_ids,
            n.applied_day, b.totals, n.applied_day + ${REVIEW_DAYS[0]!}::int,
            jsonb_build_object('verdict', 'pending', 'level', n.level, 'entityIds', to_jsonb(n.entity_keys), 'changesetId', n.changeset_id,
              'appliedDay', n.applied_day::text, 'baseline', b.totals, 'reviews', '[]'::jsonb,
              'nextReviewDay', (n.applied_day + ${REVIEW_DAYS[0]!}::int)::text, 'revertActionId', NULL, 'revertChangesetId', NULL,
              'revertNote', NULL)
          FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS n(watch_id text, action_ids text[], changeset_id text, level text,
            entity_keys text[], campaign_ids text[], ad_group_ids text[], applied_day date)
          CROSS JOIN LATERAL (${windowTotals(projectId, held, "n.level", "n.entity_keys", `n.applied_day - ${BASELINE_DAYS}`, "n.applied_day - 1")}) b
          ON CONFLICT (project_id, watch_id) DO NOTHING
          RETURNING watch_id`
        return { candidates: applied.length, opened: inserted.length, next }
      }).pipe(Effect.orDie, Effect.withSpan("Watches.open"))

    /** Reviews one batch of the due watches in one transaction; answers how many it reviewed. */
    const reviewBatch = (account: AccountRecord, held: Held, guard: GuardSettings) =>
      sql.withTransaction(Effect.gen(function*() {
        // The statement's set-returning parts are estimated at thousands of rows, which buys a JIT compile (half a
        // second) for a plan that runs in a fifth of that (bench/history.md).
        yield* sql`SET LOCAL jit = off`
        const due = yield* sql`
          WITH due AS (
            SELECT w.watch_id FROM watches w
            WHERE w.project_id = ${account.projectId} AND w.next_review_day <= ${held.lastSyncedDay}::date
            ORDER BY w.next_review_day, w.watch_id
            LIMIT ${BATCH}
            FOR UPDATE OF w SKIP LOCKED)
          SELECT w.watch_id, w.action_ids, w.applied_day::text AS applied_day, w.next_review_day::text AS next_review_day,
            w.reviews_done, w.baseline, w.record,
            EXISTS (SELECT 1 FROM actions a WHERE a.project_id = ${account.projectId} AND a.action_id = ANY (w.action_ids) AND a.status = 'reverted') AS reverted,
            after.totals AS after, base.totals AS baseline_now, confounders.list AS confounders
          FROM due JOIN watches w ON w.project_id = ${account.projectId} AND w.watch_id = due.watch_id
          -- A watch's confounders are the changes at its place keys (ChangePlaces.ts) inside its windows, one index scan:
          -- a campaign's watch is confounded by anything in the campaign; an ad group's by its campaign's own changes and
          -- anything in the ad group; a keyword's by its campaign's and ad group's own changes and its keywords'.
          CROSS JOIN LATERAL (
            SELECT COALESCE(jsonb_agg(jsonb_build_object('actionId', c.action_id, 'kind', c.kind, 'summary', c.summary,
              'day', to_char((c.applied_at AT TIME ZONE ${held.timeZone}::text)::date, 'YYYY-MM-DD')) ORDER BY c.applied_at), '[]'::jsonb) AS list
            FROM (
              SELECT DISTINCT ON (p.action_id) p.action_id, p.kind, p.summary, p.applied_at FROM change_places p
              WHERE p.project_id = ${account.projectId}
                AND p.place = ANY (ARRAY(
                  SELECT 'c:' || x FROM unnest(w.campaign_ids) x WHERE w.level = 'campaigns'
                  UNION ALL SELECT 'C:' || x FROM unnest(w.campaign_ids) x WHERE w.level <> 'campaigns'
                  UNION ALL SELECT 'g:' || x FROM unnest(w.ad_group_ids) x WHERE w.level = 'adGroups'
                  UNION ALL SELECT 'G:' || x FROM unnest(w.ad_group_ids) x WHERE w.level = 'keywords'
                  UNION ALL SELECT 'k:' || x FROM unnest(w.entity_keys) x WHERE w.level = 'keywords'))
                AND p.applied_at >= (w.applied_day - ${BASELINE_DAYS}::int)::timestamp AT TIME ZONE ${held.timeZone}::text
                AND p.applied_at < (w.next_review_day + 1)::timestamp AT TIME ZONE ${held.timeZone}::text
                AND p.action_id <> ALL (w.action_ids) AND (p.revert_of IS NULL OR p.revert_of <> ALL (w.action_ids))
              ORDER BY p.action_id) c) confounders
          CROSS JOIN LATERAL (${windowTotals(account.projectId, held, "w.level", "w.entity_keys", "w.applied_day + 1", "w.next_review_day")}) after
          CROSS JOIN LATERAL (${
  windowTotals(account.projectId, held, "w.level", "w.entity_keys", `w.applied_day - ${BASELINE_DAYS}`, "w.applied_day - 1")
}) base
          ORDER BY w.watch_id`.pipe(Effect.flatMap(decodeDue))
        if (due.length === 0) return 0
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const reviewed = due.map((watch) => reviewOf(watch, guard, now))
        yield* sql`
          UPDATE watches w SET reviews_done = u.reviews_done, next_review_day = u.next_review_day, verdict = u.verdict,
            record = u.record, revert_pending = u.revert_pending
          FROM jsonb_to_recordset(${JSON.stringify(reviewed.map((r) => r.row))}::jsonb)
            AS u(watch_id text, reviews_done int, next_review_day date, verdict text, record jsonb, revert_pending boolean)
          WHERE w.project_id = ${account.projectId} AND w.watch_id = u.watch_id`
        const judged = reviewed.filter((r) => r.review !== undefined)
        const actions = yield* ledger.findManyEncoded(account.projectId, judged.flatMap((r) => r.actionIds))
        const watchOf = new Map(judged.flatMap((r) => r.actionIds.map((id) => [id, r] as const)))
        yield* writeEvents(sql, actions.map((action) => {
          const r = watchOf.get(action.actionId)!
          return {
            orgId: account.orgId,
            projectId: account.projectId,
            type: "action.verdict" as const,
            // The record is already in its encoded form, and a watch's JSON is its own encoding.
            data: { action: { ...action, watch: r.record }, review: r.review }
          }
        }))
        yield* Effect.forEach(["passed", "failed", "inconclusive"] as const, (verdict) =>
          countGuardReviews(verdict, judged.filter((r) => r.review?.verdict === verdict).length))
        return due.length
      })).pipe(Effect.orDie, Effect.withSpan("Watches.reviewBatch"))

    /** Proposes the revert of each change whose review failed, once. */
    const proposeReverts = (account: AccountRecord, guard: GuardSettings) =>
      Effect.gen(function*() {
        const pending = yield* sql`
          SELECT watch_id, action_ids, changeset_id, record FROM watches WHERE project_id = ${account.projectId} AND revert_pending`.pipe(
          Effect.flatMap(decodePending)
        )
        for (const watch of pending) {
          const last = watch.record.reviews.at(-1)
          const reason = last === undefined ? "the guard: a review failed" : verdictLine(last.afterDays, last)
          const autoRevert = guard.onFail === "auto_revert"
          const proposal = watch.changesetId !== null
            ? Effect.asVoid(changesetRevert.guardRevert(account, watch.changesetId, reason, autoRevert))
            : Effect.asVoid(revert.guardRevert(account, watch.actionIds[0]!, reason, autoRevert))
          // A refusal is the answer (recorded as the note); an upstream failure leaves it pending for the next pass.
          const why = yield* proposal.pipe(
            Effect.as(null),
            Effect.catchTags({
              NotRevertible: (error) => Effect.succeed(error.message),
              NotFound: (error) => Effect.succeed(error.message),
              ReadOnlyAccount: (error) => Effect.succeed(error.message)
            })
          )
          // The revert's id is read from the original: whoever linked it (this pass, another instance's, or a person's earlier).
          yield* sql`
            UPDATE watches w SET revert_pending = false, revert_action_id = r.action_revert,
              record = w.record || jsonb_build_object('revertActionId', r.action_revert, 'revertChangesetId', r.changeset_revert,
                'revertNote', CASE WHEN r.action_revert IS NULL AND r.changeset_revert IS NULL THEN ${why}::text END)
            FROM (SELECT
                CASE WHEN ${watch.changesetId}::text IS NULL THEN (SELECT reverted_by FROM actions
                  WHERE project_id = ${account.projectId} AND action_id = ${watch.actionIds[0]!}) END AS action_revert,
                (SELECT reverted_by FROM changesets WHERE project_id = ${account.projectId} AND changeset_id = ${watch.changesetId}) AS changeset_revert) r
            WHERE w.project_id = ${account.projectId} AND w.watch_id = ${watch.watchId}`
        }
        return pending.length
      }).pipe(Effect.orDie, Effect.withSpan("Watches.proposeReverts"))

    /**
     * The hourly lane (spend only) of the watches whose applied hour is within the last 24 complete hours: their
     * campaigns' spend since the apply against the usual for those hours, recorded on the watch. One read, one write.
     */
    const hourlyLanes = (account: AccountRecord, hourly: HourlySpend) =>
      Effect.gen(function*() {
        const recent = yield* sql`
          SELECT w.watch_id, w.campaign_ids,
            to_char(max(a.applied_at) AT TIME ZONE acc.time_zone, 'YYYY-MM-DD"T"HH24') AS applied_hour
          FROM watches w JOIN accounts acc ON acc.project_id = w.project_id
          JOIN actions a ON a.project_id = w.project_id AND a.action_id = ANY (w.action_ids)
          WHERE w.project_id = ${account.projectId} AND w.reviews_done = 0
          GROUP BY w.watch_id, w.campaign_ids, acc.time_zone`.pipe(Effect.flatMap(decodeRecent))
        const lanes = recent.flatMap((watch) => {
          const lane = hourlyLane(hourly, watch.campaignIds, watch.appliedHour)
          return lane === undefined ? [] : [{ watch_id: watch.watchId, hourly: lane }]
        })
        if (lanes.length > 0) {
          yield* sql`
            UPDATE watches w SET record = w.record || jsonb_build_object('hourly', u.hourly)
            FROM jsonb_to_recordset(${JSON.stringify(lanes)}::jsonb) AS u(watch_id text, hourly jsonb)
            WHERE w.project_id = ${account.projectId} AND w.watch_id = u.watch_id`
        }
        return lanes.length
      }).pipe(Effect.orDie, Effect.withSpan("Watches.hourlyLanes"))

    /** One pass after a sync: open, the hourly lanes (with the hours read), review every due batch, then the consequences. */
    const pass = (account: AccountRecord, hourly: HourlySpend | undefined) =>
      Effect.gen(function*() {
        const guard = (yield* settings.read(account.orgId)).guard
        const startedAt = yield* Clock.currentTimeMillis
        const [held] = yield* sql`
          SELECT time_zone, first_synced_day::text AS first_synced_day, last_synced_day::text AS last_synced_day
          FROM accounts WHERE project_id = ${account.projectId}`.pipe(Effect.flatMap(decodeHeld), Effect.orDie)
        if (held === undefined) return { opened: 0, reviewed: 0, reverts: 0 }
        let opened = 0
        for (let batch = yield* open(account.projectId, held, null); ; batch = yield* open(account.projectId, held, batch.next)) {
          opened += batch.opened
          if (batch.candidates < BATCH) break
        }
        // Until nothing is due: a watch whose sync brought several reviews' days gets them in turn (each once).
        if (hourly !== undefined) yield* hourlyLanes(account, hourly)
        yield* places.record(account.projectId)
        let reviewed = 0
        for (let n = yield* paced(reviewBatch(account, held, guard)); n > 0; n = yield* paced(reviewBatch(account, held, guard))) reviewed += n
        const reviewedAt = yield* Clock.currentTimeMillis
        const reverts = yield* proposeReverts(account, guard)
        if (opened + reviewed + reverts > 0) {
          yield* Effect.logInfo("guard pass").pipe(Effect.annotateLogs({
            projectId: account.projectId,
            opened,
            reviewed,
            reverts,
            reviewMs: reviewedAt - startedAt,
            revertMs: (yield* Clock.currentTimeMillis) - reviewedAt
          }))
        }
        return { opened, reviewed, reverts }
      }).pipe(Effect.withSpan("Watches.pass"))

    return { open, pass } as const
  }),
  dependencies: [Ledger.Default, Revert.Default, ChangesetRevert.Default, ChangePlaces.Default, BackgroundPace.Default]
}) {}

/** A due watch's review (or its close, when its change was reverted meanwhile) and the row that records it. */
const reviewOf = (watch: Due, guard: GuardSettings, now: string) => {
  const record = watch.record
  if (watch.reverted) {
    return {
      actionIds: watch.actionIds,
      record: { ...record, nextReviewDay: null },
      review: undefined,
      row: { watch_id: watch.watchId, reviews_done: watch.reviewsDone, next_review_day: null, verdict: record.verdict, record: { ...record, nextReviewDay: null }, revert_pending: false }
    }
  }
  const afterDays = daysBetween(watch.appliedDay, watch.nextReviewDay)
  const judgement = judge({
    baseline: watch.baselineNow,
    after: watch.after,
    settings: guard,
    confounders: [...restatedBaseline(watch.baseline, watch.baselineNow, guard.noiseBandPct), ...watch.confounders.map(confounderText)]
  })
  const review = { afterDays, window: watch.after, reviewedAt: now, ...judgement }
  const following = REVIEW_DAYS[watch.reviewsDone + 1]
  const nextReviewDay = following === undefined ? null : addDays(watch.appliedDay, following)
  // An earlier review warns (its verdict and event); the last one decides whether the undo is proposed.
  const revertPending = nextReviewDay === null && judgement.verdict === "failed" && record.revertActionId === null &&
    record.revertChangesetId === null && record.revertNote === null
  const updated: Watch = { ...record, verdict: judgement.verdict, baseline: watch.baselineNow, reviews: [...record.reviews, review], nextReviewDay }
  return {
    actionIds: watch.actionIds,
    record: updated,
    review,
    row: { watch_id: watch.watchId, reviews_done: watch.reviewsDone + 1, next_review_day: nextReviewDay, verdict: judgement.verdict, record: updated, revert_pending: revertPending }
  }
}
