/**
 * The action state machine: the only writer of `actions`. A row is inserted once (`append`,
 * `appendOutsideChange`) and then moves only through the named transitions below. Each transition names
 * the status it starts from in its `WHERE`, so a transition that lost a race (another worker, another
 * decision) changes nothing and answers false; callers decide what that means.
 *
 *   proposed  --approve-->      approved --markApplying--> applying --markApplied--> applied
 *   proposed  --reject/expire-> rejected / expired
 *   approved|applying --fail--> failed       approved|applying --demote--> proposed
 *   applied   --linkRevert-->   applied, reverted_by set   --settleOriginal(applied)--> reverted
 *
 * A compensating action that ends without applying (rejected, expired, failed) frees its original for
 * another revert; one that applies marks its original reverted. That rule lives in `settleOriginal`, once.
 *
 * It is also the one place that emits action events (docs/contract.md 6): every transition that happens writes its
 * event (events/Outbox.ts) in the same transaction — the caller's, or one of its own when called outside
 * one — so an event exists exactly when its change committed. And it owns `cooldown_marks`: every statement that
 * records an action approved or applied marks its cooldown keys in the same statement (`markCooldowns`).
 */
import type { ActionRecord, ActionStatus, Actor, ExternalChangePayload, Failure, Mode, RiskTier } from "@acs/domain/Actions"
import type { KindName } from "@acs/domain/ProposalKinds"
import type { EventType } from "@acs/domain/Events"
import { SqlClient, type SqlError, type Statement } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { afterCommit } from "../../db/AfterCommit.ts"
import { HOT_SPAN } from "../../db/HotSpan.ts"
import { newId } from "../../db/Ids.ts"
import { actionEventCte, eventsWritten, writeActionEvent } from "../../events/Outbox.ts"
import { sendWakes } from "../../db/Wakes.ts"
import { currentTraceparent } from "../../telemetry/TraceContext.ts"
import { actionColumns, actionRowWith, decodeActionIds, decodeActionRows, toRecord } from "./ActionRow.ts"
import { countAction } from "../../telemetry/Metrics.ts"

const json = (value: unknown) => JSON.stringify(value)

/**
 * The cooldown marks (policy/Cooldown.ts) of the rows of `changed` (a CTE whose `RETURNING *` holds the rows a
 * statement inserted or changed) that are approved, on their way or applied, as one more data-modifying CTE of that
 * statement (it runs whether or not the statement reads it): each of a row's cooldown keys marked with when it
 * applied, or now, so a raise finds the latest change of its family on its entities with one index lookup per key
 * (acs_recent_change). Only for a statement whose rows were not already so (an insert, a decision to approve, an
 * apply landing): a row's move between approved and applying marks nothing. Append-only: no row is shared, so
 * concurrent writers never wait on each other here.
 */
export const markCooldowns = (sql: SqlClient.SqlClient, changed: string) =>
  sql`INSERT INTO cooldown_marks (project_id, cooldown_key, marked_at, action_id, kind)
    SELECT c.project_id, key, COALESCE(c.applied_at, statement_timestamp()), c.action_id, c.kind
    FROM ${sql.unsafe(changed)} c, unnest(c.cooldown_keys) AS key
    WHERE c.applied_at IS NOT NULL OR c.status IN ('approved', 'applying')`

/** What the statement of `applied` answers: whether its fence held, how many actions it applied and how many originals it reverted. */
const decodeAppliedOutcome = Schema.decodeUnknown(Schema.Array(Schema.Struct({
  fenced: Schema.Boolean,
  applied: Schema.Number,
  reverted: Schema.Number,
  /** The org whose events the statement wrote, if it wrote any. */
  announced: Schema.NullOr(Schema.String)
})))

/** An action as its statements find it: by its id within its account (docs/decisions/pipeline.md "Jobs are claimed per account, in turn"). */
export interface ActionRef {
  readonly projectId: string
  readonly actionId: string
}

/** One action's applied run: what its steps returned. */
export interface AppliedRun {
  readonly actionId: string
  readonly result: AppliedResult
}

/**
 * applying -> applied, for one action or many (a changeset's bulk call), as CTEs of a statement, each only where its
 * `fence` (a condition over the statement's other CTEs) holds: `changed`, the rows with what the steps returned
 * (warnings included); their cooldown marks at `applied_at` (still null on an applying row: only this sets it);
 * their `action.applied` events; for a compensation, `original` marked reverted and its
 * `action.reverted` event, after the applied ones. The statement selects `appliedOutcome` and hands its rows to
 * `appliedOutcomeOf`: in a statement of its own (`markApplied`) or in the one that ends an apply's run
 * (worker/RunEndStatement.ts).
 */
export const appliedCtes = (
  sql: SqlClient.SqlClient,
  projectId: string,
  runs: ReadonlyArray<AppliedRun>,
  fence: Statement.Fragment,
  traceParent: string | null
) =>
  sql`changed AS (
      UPDATE actions a SET status = 'applied', warnings = r.warnings, result = r.result,
        applied_at = statement_timestamp(), updated_at = statement_timestamp()
      FROM unnest(${runs.map((run) => run.actionId)}::text[], ${runs.map((run) => json(run.result.warnings))}::jsonb[],
        ${runs.map((run) => json(run.result.result))}::jsonb[]) AS r(action_id, warnings, result)
      WHERE a.project_id = ${projectId} AND a.action_id = r.action_id AND a.status = 'applying' AND ${fence}
      RETURNING a.*),
    applied_marks AS (${markCooldowns(sql, "changed")}),
    applied_event AS (${actionEventCte(sql, "changed", "action.applied", { traceParent })}),
    original AS (
      UPDATE actions o SET status = 'reverted', updated_at = statement_timestamp() FROM changed
      WHERE o.project_id = ${projectId} AND changed.revert_of IS NOT NULL AND o.reverted_by = changed.action_id
        AND o.status = 'applied'
      RETURNING o.*),
    reverted_event AS (${
    actionEventCte(sql, "original", "action.reverted", {
      traceParent,
      extraColumns: { revertedBy: "reverted_by" },
      // After the applied events: their rows are inserted before these (a scan of it runs the insert).
      where: () => sql`EXISTS (SELECT 1 FROM applied_event)`
    })
  })`

/** The select list of a statement with `appliedCtes`: whether its fence held, how many it applied and how many originals it reverted. */
export const appliedOutcome = (sql: SqlClient.SqlClient, fence: Statement.Fragment) =>
  sql`${fence} AS fenced, (SELECT count(*)::int FROM changed) AS applied, (SELECT count(*)::int FROM original) AS reverted,
    (SELECT min(org_id) FROM applied_event) AS announced`

/**
 * What a statement with `appliedCtes` did: whether its fence held and how many actions it applied, counted once
 * the change committed (the statement's own, or the caller's transaction).
 */
export const appliedOutcomeOf = (sql: SqlClient.SqlClient) => (rows: ReadonlyArray<object>) =>
  decodeAppliedOutcome(rows).pipe(
    Effect.orDie,
    Effect.map((decoded) => decoded[0]!),
    // Its events' wake, in a statement of its own (db/Wakes.ts).
    Effect.tap((row) => row.announced === null ? Effect.void : sendWakes(sql, [eventsWritten(row.announced)])),
    Effect.tap((row) =>
      row.applied === 0
        ? Effect.void
        : afterCommit(Effect.zipRight(countAction("applied", row.applied), row.reverted > 0 ? countAction("reverted", row.reverted) : Effect.void))
    ),
    Effect.map((row) => ({ fenced: row.fenced, applied: row.applied }))
  )


/** A changed row as `RETURNING` answers it: the record's columns and the org its event belongs to. */
const ChangedRow = actionRowWith({ orgId: Schema.String })
type ChangedRow = typeof ChangedRow.Type
const decodeChanged = Schema.decodeUnknown(Schema.Array(ChangedRow))

export interface NewAction {
  readonly orgId: string
  readonly projectId: string
  readonly kind: KindName
  readonly mode: Mode | null
  readonly status: ActionStatus
  readonly riskTier: RiskTier
  readonly policyReasons: ReadonlyArray<string>
  readonly summary: string
  readonly reason: string
  readonly payload: unknown
  readonly proposedBy: Actor
  readonly failure?: Failure
  readonly revertOf?: string
  readonly countsTowardCap: boolean
  /** A member of this changeset (a revert's compensation, recorded approved with its changeset). */
  readonly changesetId?: string
  /** Who decided it when it is recorded decided (a changeset's revert: the person who reverted). */
  readonly decidedBy?: Actor
}

/** One change made outside acs, as the platform's change history recorded it. */
export interface NewOutsideChange {
  readonly orgId: string
  readonly projectId: string
  readonly summary: string
  readonly proposedBy: Actor
  readonly payload: ExternalChangePayload
}

/** What an applied action leaves behind. */
export interface AppliedResult {
  readonly warnings: ReadonlyArray<string>
  readonly result: Record<string, unknown>
}

/** A write that rides in a transition's statement: given the statement's fence (a condition), it writes only where the fence holds, answering rows. */
export type FencedWrite = (fence: Statement.Fragment) => Statement.Fragment

/**
 * A proposal's ledger row, for the one statement that records it (ProposalStatement.ts): the decision's columns
 * are expressions over that statement's lock CTE (picked by the count read under the lock), the rest values.
 */
export interface ProposedRow {
  readonly actionId: string
  readonly orgId: string
  readonly projectId: string
  readonly kind: KindName
  readonly summary: string
  readonly reason: string
  readonly payload: unknown
  readonly proposedBy: Actor
  readonly failure: Failure | undefined
  readonly riskTier: RiskTier
  readonly mode: Statement.Fragment
  readonly status: Statement.Fragment
  readonly policyReasons: Statement.Fragment
  readonly countsTowardCap: Statement.Fragment
  readonly createdAt: Statement.Fragment
  readonly traceParent: string | null
  /** A changeset's member (docs/contract.md 4.3): recorded proposed, decided and applied with its changeset. */
  readonly changesetId: string | null
  readonly dependsOn: ReadonlyArray<string>
}

/**
 * The insert of a proposal's ledger row, for a data-modifying CTE (`recorded AS (...)`) answering the row
 * (`RETURNING *`): one row per row of `source`, the CTE its expressions read. The statement marks the row's
 * cooldowns with `markCooldowns` over that CTE (a row approved at once starts its cooldown).
 */
export const insertProposed = (sql: SqlClient.SqlClient, row: ProposedRow, source: string) =>
  sql`INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason,
      payload, failure, proposed_by, counts_toward_cap, created_at, trace_parent, changeset_id, depends_on)
    SELECT ${row.actionId}, ${row.orgId}, ${row.projectId}, ${row.kind}, ${row.mode}, ${row.status}, ${row.riskTier},
      ${row.policyReasons}, ${row.summary}, ${row.reason}, ${json(row.payload)}::jsonb,
      ${row.failure === undefined ? null : json(row.failure)}::jsonb, ${json(row.proposedBy)}::jsonb, ${row.countsTowardCap},
      ${row.createdAt}, ${row.traceParent}, ${row.changesetId}, ${row.dependsOn}::text[]
    FROM ${sql.unsafe(source)}
    RETURNING *`

/**
 * The insert of many proposals' ledger rows at once (a changeset's `members` call), for a data-modifying CTE: one
 * row per element of `rows` (a JSON array of NewRows), in order, each `created_at` one microsecond after the one
 * before from `firstCreatedAt`; a member's row only where `open` (a condition over the statement's CTEs) holds. The
 * statement marks the rows' cooldowns with `markCooldowns` over that CTE.
 */
export const insertMany = (
  sql: SqlClient.SqlClient,
  rows: ReadonlyArray<ManyRow>,
  shared: { readonly orgId: string; readonly projectId: string; readonly traceParent: string | null },
  firstCreatedAt: Statement.Fragment,
  open: Statement.Fragment
) =>
  sql`INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason,
      payload, failure, proposed_by, counts_toward_cap, created_at, trace_parent, changeset_id, depends_on)
    SELECT r.action_id, ${shared.orgId}, ${shared.projectId}, r.kind, r.mode, r.status, r.risk_tier, r.policy_reasons, r.summary,
      r.reason, r.payload, r.failure, r.proposed_by, false, ${firstCreatedAt} + r.i * interval '1 microsecond', ${shared.traceParent},
      r.changeset_id, r.depends_on
    FROM jsonb_to_recordset(${json(rows)}::jsonb) AS r(action_id text, kind text, mode text, status text, risk_tier text,
      policy_reasons jsonb, summary text, reason text, payload jsonb, failure jsonb, proposed_by jsonb, changeset_id text,
      depends_on text[], i int)
    WHERE r.changeset_id IS NULL OR ${open}
    RETURNING *`

/** One row of `insertMany`, in the columns' names. */
export interface ManyRow {
  readonly action_id: string
  readonly kind: KindName
  readonly mode: Mode | null
  readonly status: ActionStatus
  readonly risk_tier: RiskTier
  readonly policy_reasons: ReadonlyArray<string>
  readonly summary: string
  readonly reason: string
  readonly payload: unknown
  readonly failure: Failure | null
  readonly proposed_by: Actor
  readonly changeset_id: string | null
  readonly depends_on: ReadonlyArray<string>
  readonly i: number
}

/** How a compensating action ended: applied (its original is reverted) or not (its original is free again). */
export type CompensationEnd = "applied" | "abandoned"

/** An `approvals` column (of actions or changesets) with one more: who, and when (ISO, milliseconds). */
export const appendApproval = (sql: SqlClient.SqlClient, by: Actor) =>
  sql`approvals || jsonb_build_array(jsonb_build_object('by', ${JSON.stringify(by)}::jsonb,
    'at', to_char(statement_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))`

export class Transitions extends Effect.Service<Transitions>()("acs/Transitions", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = actionColumns(sql)

    /** Writes that ride in a transition's statement, as CTEs `alongside_<n> AS (...),` (each answering rows). */
    const ctes = (alongside: ReadonlyArray<Statement.Fragment>) =>
      sql.join("", false, "")(alongside.map((write, index) => sql`${sql.unsafe(`alongside_${index}`)} AS (${write}),`))

    /** The select list's part that reads each of `ctes`: a CTE that only selects runs when it is read. */
    const counted = (alongside: ReadonlyArray<unknown>) =>
      sql.unsafe(alongside.map((_, index) => `, (SELECT count(*) FROM alongside_${index}) AS alongside_${index}`).join(""))

    /** Runs `effect` in the caller's transaction, or in its own when there is none: a change and its event commit together. */
    const atomically = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.flatMap(
        Effect.serviceOption(SqlClient.TransactionConnection),
        (open) => Option.isSome(open) ? effect : sql.withTransaction(effect).pipe(Effect.catchTag("SqlError", Effect.die))
      )

    type ActionEventType = Extract<EventType, `action.${string}`>

    /**
     * Runs the guarded statement (which answers the changed row) and, when it changed one, writes `type`'s
     * event with the row as it is now; answers whether it happened. The statements read the row's columns from a
     * CTE's `RETURNING *`, not in their own `RETURNING`: its times are formatted by a stable function, which Citus
     * refuses in a modification's `RETURNING`.
     */
    const changed = (
      statement: Effect.Effect<ReadonlyArray<object>, SqlError.SqlError>,
      type: ActionEventType,
      extra: Readonly<Record<string, unknown>> = {}
    ) =>
      atomically(Effect.gen(function*() {
        const rows = yield* Effect.orDie(Effect.flatMap(statement, decodeChanged))
        const row = rows[0]
        if (row === undefined) return undefined
        yield* writeActionEvent(sql, row.orgId, type, toRecord(row), extra)
        // Counted once the change committed: a transition rolled back with its transaction never happened.
        yield* afterCommit(countAction(row.status))
        return row
      }))

    /** As `changed`, answering whether it happened. */
    const transition = (
      statement: Effect.Effect<ReadonlyArray<object>, SqlError.SqlError>,
      type: ActionEventType,
      extra: Readonly<Record<string, unknown>> = {}
    ) => Effect.map(changed(statement, type, extra), (row) => row !== undefined)

    /** Appends a row; the caller holds the account's proposal lock (strictly increasing `created_at`). */
    /**
     * Appends rows of one account in one statement (a changeset revert's compensations), in the order given, each
     * `created_at` after the account's latest and one microsecond after the one before; the caller holds the account's
     * proposal lock (the ledger's order). Answers the records in that order. A row queued for a human is
     * `action.proposed`; an auto-applied one speaks when it applies.
     */
    const appendMany = (actions: ReadonlyArray<NewAction>) => {
      const first = actions[0]
      if (first === undefined) return Effect.succeed<ReadonlyArray<ActionRecord>>([])
      if (actions.some((action) => action.projectId !== first.projectId || action.orgId !== first.orgId)) {
        return Effect.dieMessage("Transitions.appendMany: the rows belong to more than one account")
      }
      const rows = actions.map((action, i) => ({
        action_id: newId("act"),
        kind: action.kind,
        mode: action.mode,
        status: action.status,
        risk_tier: action.riskTier,
        policy_reasons: action.policyReasons,
        summary: action.summary,
        reason: action.reason,
        payload: action.payload,
        failure: action.failure ?? null,
        proposed_by: action.proposedBy,
        revert_of: action.revertOf ?? null,
        counts_toward_cap: action.countsTowardCap,
        changeset_id: action.changesetId ?? null,
        decided_by: action.decidedBy ?? null,
        i
      }))
      return sql`
        WITH base AS (SELECT GREATEST(statement_timestamp(),
          (SELECT max(created_at) + interval '1 microsecond' FROM actions WHERE project_id = ${first.projectId})) AS at),
        inserted AS (INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason,
          payload, failure, proposed_by, revert_of, counts_toward_cap, changeset_id, decided_by, decided_at, created_at)
        SELECT r.action_id, ${first.orgId}, ${first.projectId}, r.kind, r.mode, r.status, r.risk_tier, r.policy_reasons, r.summary,
          r.reason, r.payload, r.failure, r.proposed_by, r.revert_of, r.counts_toward_cap, r.changeset_id, r.decided_by,
          CASE WHEN r.decided_by IS NULL THEN NULL ELSE statement_timestamp() END, base.at + r.i * interval '1 microsecond'
        FROM base, jsonb_to_recordset(${json(rows)}::jsonb) AS r(action_id text, kind text, mode text, status text, risk_tier text,
          policy_reasons jsonb, summary text, reason text, payload jsonb, failure jsonb, proposed_by jsonb, revert_of text,
          counts_toward_cap boolean, changeset_id text, decided_by jsonb, i int)
        RETURNING *),
        marked AS (${markCooldowns(sql, "inserted")})
        SELECT ${columns} FROM inserted`.pipe(
        Effect.flatMap(decodeActionRows),
        Effect.map((inserted) => {
          const byId = new Map(inserted.map((row) => [row.actionId, toRecord(row)]))
          return rows.flatMap((row) => byId.get(row.action_id) ?? [])
        }),
        Effect.orDie,
        Effect.tap((records) =>
          Effect.forEach(records, (record) =>
            record.status === "proposed" ? writeActionEvent(sql, first.orgId, "action.proposed", record) : Effect.void, { discard: true })
        ),
        Effect.tap((records) =>
          Effect.suspend(() => {
            const byStatus = new Map<string, number>()
            for (const record of records) byStatus.set(record.status, (byStatus.get(record.status) ?? 0) + 1)
            return Effect.forEach(byStatus, ([status, n]) => afterCommit(countAction(status, n)), { discard: true })
          })
        ),
        atomically,
        Effect.withSpan("Transitions.appendMany")
      )
    }

    /** Appends one row (see `appendMany`): a revert's or a rollback's compensation. */
    const append = (action: NewAction) => Effect.map(appendMany([action]), (records) => records[0]!)

    /**
     * Appends an outside change as an applied row (applied when the platform says it happened), once per
     * change-history detail: a detail already recorded (another poll, another instance) answers undefined.
     * The caller holds the account's proposal lock, as for `append`.
     */
    const appendOutsideChange = (change: NewOutsideChange) =>
      sql`
        WITH inserted AS (INSERT INTO actions (action_id, org_id, project_id, kind, mode, status, risk_tier, policy_reasons, summary, reason,
          payload, proposed_by, counts_toward_cap, upstream_ref, applied_at, created_at)
        -- A SELECT over the account's rows, not VALUES with a subquery: Citus refuses a subquery in an INSERT's VALUES.
        SELECT ${newId("act")}, ${change.orgId}, ${change.projectId}, 'external_change', NULL, 'applied', 'review', '[]'::jsonb,
          ${change.summary}, ${"changed outside acs"}, ${json(change.payload)}::jsonb,
          ${json(change.proposedBy)}::jsonb, false, ${change.payload.upstream.detailId},
          ${change.payload.upstream.eventTime}::timestamptz,
          GREATEST(statement_timestamp(), max(a.created_at) + interval '1 microsecond')
        FROM actions a WHERE a.project_id = ${change.projectId}
        ON CONFLICT (project_id, upstream_ref) WHERE upstream_ref IS NOT NULL DO NOTHING
        RETURNING *),
        marked AS (${markCooldowns(sql, "inserted")})
        SELECT ${columns} FROM inserted`.pipe(
        Effect.flatMap(decodeActionRows),
        Effect.map((rows) => rows[0] === undefined ? undefined : toRecord(rows[0])),
        Effect.orDie,
        Effect.tap((record) => record === undefined ? Effect.void : writeActionEvent(sql, change.orgId, "action.external", record)),
        atomically,
        Effect.withSpan("Transitions.appendOutsideChange")
      )

    /** A bare guarded statement (no event): true when it changed a row. */
    const happened = (statement: Effect.Effect<ReadonlyArray<unknown>, unknown>) =>
      statement.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /**
     * The original of compensating action `compensationId` (the row whose `reverted_by` names it): reverted
     * when the compensation applied (`action.reverted`), revertible again when it ended any other way.
     */
    const settleOriginal = (compensation: ActionRef, end: CompensationEnd) =>
      (end === "applied"
        ? transition(
          sql`WITH changed AS (UPDATE actions SET status = 'reverted', updated_at = statement_timestamp()
            WHERE project_id = ${compensation.projectId} AND reverted_by = ${compensation.actionId} AND status = 'applied'
            RETURNING *) SELECT org_id, ${columns} FROM changed`,
          "action.reverted",
          { revertedBy: compensation.actionId }
        )
        : happened(sql`UPDATE actions SET reverted_by = NULL, updated_at = statement_timestamp()
            WHERE project_id = ${compensation.projectId} AND reverted_by = ${compensation.actionId} RETURNING action_id`)).pipe(
          Effect.withSpan("Transitions.settleOriginal")
        )

    /** Runs `settleOriginal` only when the transition before it happened; answers whether that one did. */
    const thenSettle = (ref: ActionRef, end: CompensationEnd) => (done: boolean) =>
      done ? Effect.as(settleOriginal(ref, end), true) : Effect.succeed(false)

    /**
     * As `thenSettle`, from the changed row: only a compensating action (`revert_of` set) can be named by an
     * original's `reverted_by`, so any other row skips the statement (the apply path's common case).
     */
    const thenSettleRow = (ref: ActionRef, end: CompensationEnd) => (row: ChangedRow | undefined) =>
      row === undefined
        ? Effect.succeed(false)
        : row.revertOf === null
        ? Effect.succeed(true)
        : Effect.as(settleOriginal(ref, end), true)


    /** proposed -> approved; a new apply run begins, and the cooldown of what it changes. */
    const approve = ({ actionId, projectId }: ActionRef, by: Actor) =>
      transition(
        sql`WITH changed AS (
            UPDATE actions SET status = 'approved', decided_by = ${json(by)}::jsonb, decided_at = statement_timestamp(),
              approvals = ${appendApproval(sql, by)}, updated_at = statement_timestamp(), apply_run = apply_run + 1
            WHERE project_id = ${projectId} AND action_id = ${actionId} AND status = 'proposed' RETURNING *),
          marked AS (${markCooldowns(sql, "changed")})
          SELECT org_id, ${columns} FROM changed`,
        "action.approved"
      ).pipe(Effect.withSpan("Transitions.approve"))

    /**
     * The first of a high-risk change's two approvals (docs/contract.md 3.3): recorded, the action stays proposed
     * for the second. True when it was recorded (the row was proposed, with no approval yet).
     */
    const recordFirstApproval = ({ actionId, projectId }: ActionRef, by: Actor) =>
      happened(sql`UPDATE actions SET approvals = ${appendApproval(sql, by)}, updated_at = statement_timestamp()
        WHERE project_id = ${projectId} AND action_id = ${actionId} AND status = 'proposed' AND approvals = '[]'::jsonb RETURNING action_id`).pipe(
        Effect.withSpan("Transitions.recordFirstApproval")
      )

    /** proposed -> rejected (a decision or a withdrawal). */
    const reject = (ref: ActionRef, by: Actor, reason: string | undefined) =>
      transition(
        sql`WITH changed AS (UPDATE actions SET status = 'rejected', decided_by = ${json(by)}::jsonb, decided_at = statement_timestamp(),
            decision_reason = ${reason ?? null}, updated_at = statement_timestamp()
          WHERE project_id = ${ref.projectId} AND action_id = ${ref.actionId} AND status = 'proposed' RETURNING *) SELECT org_id, ${columns} FROM changed`,
        "action.rejected"
      ).pipe(Effect.flatMap(thenSettle(ref, "abandoned")), atomically, Effect.withSpan("Transitions.reject"))

    /**
     * proposed -> expired: nobody decided in time. With `dueAt`, only when its org's `approval_ttl_hours` have
     * passed by then since it was queued (`queued_at`, set by a demotion: a demoted action waits afresh; else
     * `created_at`), whatever touched the row since.
     */
    const expire = (ref: ActionRef, reason: string, dueAt?: Date) =>
      transition(
        sql`WITH changed AS (UPDATE actions SET status = 'expired', decided_at = statement_timestamp(), decision_reason = ${reason},
            updated_at = statement_timestamp()
          WHERE project_id = ${ref.projectId} AND action_id = ${ref.actionId} AND status = 'proposed'
            ${
          // The deadline from the account's org, not the row's: Citus evaluates a stable function (the time's
          // arithmetic) once, on the coordinator, and so refuses one over the row's columns.
          dueAt === undefined ? sql`` : sql`AND COALESCE(queued_at, created_at) <= ${dueAt}::timestamptz - make_interval(hours => (
              SELECT o.approval_ttl_hours FROM accounts p JOIN orgs o ON o.org_id = p.org_id WHERE p.project_id = ${ref.projectId}))`}
          RETURNING *) SELECT org_id, ${columns} FROM changed`,
        "action.expired"
      ).pipe(Effect.flatMap(thenSettle(ref, "abandoned")), atomically, Effect.withSpan("Transitions.expire"))

    /**
     * approved -> applying (also applying -> applying: a retried run stays under way). No event: not a decision or
     * an outcome. With `guard` (a data-modifying statement that answers rows: the apply job's lease renewal) the
     * change happens, in the same statement, only when the guard answers a row, and so do the writes of
     * `alongside` (statements answering rows, each given the guard to check: the run's first step record).
     */
    const markApplying = (
      { actionId, projectId }: ActionRef,
      guard?: Statement.Fragment,
      alongside: ReadonlyArray<FencedWrite> = []
    ) =>
      happened(
        guard === undefined
          ? sql`UPDATE actions SET status = 'applying', updated_at = statement_timestamp()
              WHERE project_id = ${projectId} AND action_id = ${actionId} AND status IN ('approved', 'applying') RETURNING action_id`
          : sql`/* prepared */ WITH guard AS (${guard}),
              ${ctes(alongside.map((write) => write(sql`EXISTS (SELECT 1 FROM guard)`)))}
              changed AS (
                UPDATE actions SET status = 'applying', updated_at = statement_timestamp()
                WHERE project_id = ${projectId} AND action_id = ${actionId} AND status IN ('approved', 'applying') AND EXISTS (SELECT 1 FROM guard)
                RETURNING action_id)
              SELECT action_id ${counted(alongside)} FROM changed`
      ).pipe(Effect.withSpan("Transitions.markApplying", HOT_SPAN))

    /**
     * approved|applying -> applying for the members one bulk call writes, only where `guard` (the lease's renewal)
     * answers a row, with `alongside` (their step records) in the same statement; answers how many it marked.
     */
    const markMembersApplying = (projectId: string, actionIds: ReadonlyArray<string>, guard: Statement.Fragment, alongside: ReadonlyArray<FencedWrite>) =>
      sql`WITH guard AS (${guard}),
          ${ctes(alongside.map((write) => write(sql`EXISTS (SELECT 1 FROM guard)`)))}
          changed AS (
            UPDATE actions SET status = 'applying', updated_at = statement_timestamp()
            WHERE project_id = ${projectId} AND action_id = ANY(${actionIds}::text[]) AND status IN ('approved', 'applying')
              AND EXISTS (SELECT 1 FROM guard)
            RETURNING action_id)
          SELECT action_id ${counted(alongside)} FROM changed`.pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie,
        Effect.withSpan("Transitions.markMembersApplying")
      )

    /** applying -> applied (see `appliedCtes`), in a statement of its own; answers whether it happened. */
    const markApplied = ({ actionId, projectId }: ActionRef, result: AppliedResult) =>
      Effect.flatMap(currentTraceparent, (traceParent) => {
        const fence = sql`EXISTS (SELECT 1 FROM fence)`
        return sql`/* prepared */
          WITH fence AS (SELECT 1),
          ${appliedCtes(sql, projectId, [{ actionId, result }], fence, traceParent)}
          SELECT ${appliedOutcome(sql, fence)}`
      }).pipe(
        Effect.orDie,
        Effect.flatMap(appliedOutcomeOf(sql)),
        Effect.map((outcome) => outcome.applied > 0),
        Effect.withSpan("Transitions.markApplied", HOT_SPAN)
      )

    /** approved|applying -> failed (the failure names its step); a failed compensation frees its original. */
    const fail = (ref: ActionRef, failure: Failure) =>
      changed(
        sql`WITH changed AS (UPDATE actions SET status = 'failed', failure = ${json(failure)}::jsonb, updated_at = statement_timestamp()
          WHERE project_id = ${ref.projectId} AND action_id = ${ref.actionId} AND status IN ('approved', 'applying') RETURNING *) SELECT org_id, ${columns} FROM changed`,
        "action.failed"
      ).pipe(Effect.flatMap(thenSettleRow(ref, "abandoned")), atomically, Effect.withSpan("Transitions.fail"))

    /** approved|applying -> proposed: the apply found a reason a person must decide; the reasons are added (and sent). */
    const demote = ({ actionId, projectId }: ActionRef, reasons: ReadonlyArray<string>) =>
      transition(
        sql`WITH changed AS (UPDATE actions SET status = 'proposed', policy_reasons = policy_reasons || ${json(reasons)}::jsonb,
            queued_at = statement_timestamp(), updated_at = statement_timestamp()
          WHERE project_id = ${projectId} AND action_id = ${actionId} AND status IN ('approved', 'applying') RETURNING *) SELECT org_id, ${columns} FROM changed`,
        "action.demoted",
        { reasons }
      ).pipe(Effect.withSpan("Transitions.demote"))

    /**
     * Applied, not yet reverted originals name their compensating actions, in one statement; answers the originals
     * that now do (one missing: another revert was first, or it is no longer applied). Only a compensation of its
     * original (`revert_of` naming it) can be named, which `thenSettleRow` relies on.
     */
    const linkReverts = (projectId: string, pairs: ReadonlyArray<{ readonly originalId: string; readonly compensationId: string }>) =>
      pairs.length === 0 ? Effect.succeed(new Set<string>()) : sql`
        UPDATE actions o SET reverted_by = p.compensation_id, updated_at = statement_timestamp()
        FROM unnest(${pairs.map((pair) => pair.originalId)}::text[], ${pairs.map((pair) => pair.compensationId)}::text[])
          AS p(original_id, compensation_id)
        WHERE o.project_id = ${projectId} AND o.action_id = p.original_id AND o.status = 'applied' AND o.reverted_by IS NULL
          AND EXISTS (SELECT 1 FROM actions c WHERE c.project_id = ${projectId} AND c.action_id = p.compensation_id AND c.revert_of = p.original_id)
        RETURNING o.action_id`.pipe(
        Effect.flatMap(decodeActionIds),
        Effect.map((rows) => new Set(rows.map((row) => row.actionId))),
        Effect.orDie,
        Effect.withSpan("Transitions.linkReverts")
      )

    /** `linkReverts` for one pair: whether the original now names its compensation. */
    const linkRevert = (projectId: string, originalId: string, compensationId: string) =>
      Effect.map(linkReverts(projectId, [{ originalId, compensationId }]), (linked) => linked.has(originalId))

    /** Applied actions an outside change overwrote name it; the first outside change after the apply wins. */
    const supersede = (projectId: string, actionIds: ReadonlyArray<string>, externalActionId: string) =>
      actionIds.length === 0 ? Effect.succeed(0) : sql`
        UPDATE actions SET superseded_by = ${externalActionId}, updated_at = statement_timestamp()
        WHERE project_id = ${projectId} AND superseded_by IS NULL AND ${sql.in("action_id", actionIds)}
        RETURNING action_id`.pipe(Effect.map((rows) => rows.length), Effect.orDie, Effect.withSpan("Transitions.supersede"))

    /**
     * A changeset's decision on its members (actions/changesets/): every member still proposed becomes approved
     * (a new apply run), rejected or expired with the changeset, in one statement. No event per member: the
     * changeset's event says it for all (docs/decisions/changesets.md); approved ones start their cooldowns. Answers how many changed.
     */
    const decideMembers = ({ changesetId, projectId }: { readonly changesetId: string; readonly projectId: string }, to: "approved" | "rejected" | "expired", by: Actor | null, reason: string | null) =>
      sql`WITH changed AS (
          UPDATE actions SET status = ${to}, decided_by = ${by === null ? null : json(by)}::jsonb, decided_at = statement_timestamp(),
            decision_reason = ${reason}, updated_at = statement_timestamp(),
            apply_run = apply_run + ${to === "approved" ? 1 : 0}
          WHERE project_id = ${projectId} AND changeset_id = ${changesetId} AND status = 'proposed' RETURNING *),
        marked AS (${markCooldowns(sql, "changed")})
        SELECT action_id FROM changed`.pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie,
        Effect.tap((n) => n > 0 ? afterCommit(countAction(to, n)) : Effect.void),
        Effect.withSpan("Transitions.decideMembers")
      )

    /**
     * A proposed member evaluated again by a resubmit: its payload (prior state read anew), summary and the
     * policy's verdict on it alone. Answers whether it was still proposed.
     */
    const refreshMember = (
      { actionId, projectId }: ActionRef,
      refreshed: { readonly payload: unknown; readonly summary: string; readonly mode: Mode; readonly riskTier: RiskTier; readonly policyReasons: ReadonlyArray<string> }
    ) =>
      happened(sql`UPDATE actions SET payload = ${json(refreshed.payload)}::jsonb, summary = ${refreshed.summary},
          mode = ${refreshed.mode}, risk_tier = ${refreshed.riskTier}, policy_reasons = ${json(refreshed.policyReasons)}::jsonb,
          updated_at = statement_timestamp()
        WHERE project_id = ${projectId} AND action_id = ${actionId} AND status = 'proposed' AND changeset_id IS NOT NULL RETURNING action_id`).pipe(
        Effect.withSpan("Transitions.refreshMember")
      )

    /** approved -> skipped: members a changeset's apply will not reach (a dependency failed, or it stopped). */
    const skipMembers = (projectId: string, actionIds: ReadonlyArray<string>, reason: string) =>
      actionIds.length === 0 ? Effect.succeed(0) : sql`
        UPDATE actions SET status = 'skipped', decision_reason = ${reason}, updated_at = statement_timestamp()
        WHERE project_id = ${projectId} AND ${sql.in("action_id", actionIds)} AND status = 'approved' AND changeset_id IS NOT NULL
        RETURNING action_id`.pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie,
        Effect.tap((n) => n > 0 ? afterCommit(countAction("skipped", n)) : Effect.void),
        Effect.withSpan("Transitions.skipMembers")
      )

    return {
      append,
      appendMany,
      appendOutsideChange,
      approve,
      reject,
      expire,
      markApplying,
      markMembersApplying,
      markApplied,
      fail,
      demote,
      recordFirstApproval,
      linkRevert,
      linkReverts,
      settleOriginal,
      supersede,
      decideMembers,
      refreshMember,
      skipMembers
    } as const
  })
}) {}
