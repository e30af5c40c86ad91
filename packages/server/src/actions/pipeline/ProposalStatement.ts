/**
 * The locked part of a proposal as ONE statement (docs/decisions/pipeline.md "Reads first, the locked part one
 * statement"), assembled from its tables' owners: `acs_lock_account_window` (db/functions/) takes the account's
 * lock and reads the 24-hour count, the next `created_at`, for a raise of daily budgets the spend envelope
 * (docs/contract.md 3.3; only the ceiling's numbers for a raise that queues anyway), and for a change that raises
 * spend the latest change of its cooldown, with a snapshot taken after the lock; the ledger row (Transitions.ts) takes its decision from them; the job (queue/Jobs.ts)
 * follows an auto-applied row, as do its cooldown marks (Transitions.ts); `action.proposed` (events/Outbox.ts) a queued one. Another write of the proposal's transaction joins as one more CTE reading
 * `recorded`. The wakes of the workers and the sequencers follow in a statement of their own (db/Wakes.ts).
 */
import type { NewAction } from "./Transitions.ts"
import type { SqlClient, Statement } from "@effect/sql"
import { Effect, Schema } from "effect"
import { HOT_SPAN } from "../../db/HotSpan.ts"
import { sendWakes } from "../../db/Wakes.ts"
import { eventsWritten, proposedEventCte } from "../../events/Outbox.ts"
import { ACCOUNT_LOCK_NAMESPACE } from "../../policy/AutoApplyWindow.ts"
import { type CooldownCheck, cooldownReasonSql } from "../../policy/Cooldown.ts"
import { ceilingReason, envelopeReason, RAISING_KINDS } from "../../policy/Envelope.ts"
import { AUTO_APPLY_LIMIT_PER_24H, dailyCapReason } from "../../policy/Policy.ts"
import { enqueueApproved, jobQueued } from "../../queue/Jobs.ts"
import { currentTraceparent } from "../../telemetry/TraceContext.ts"
import { actionColumns, actionRowWith, toRecord } from "./ActionRow.ts"
import { insertProposed, markCooldowns } from "./Transitions.ts"

/** The ledger row a proposal writes; its decision may still depend on what it reads under the lock. */
export interface Recording {
  readonly actionId: string
  readonly row: Omit<NewAction, "mode" | "status" | "policyReasons" | "countsTowardCap" | "riskTier">
  /** The decision when nothing read under the lock holds it. */
  readonly decision: { readonly mode: NewAction["mode"]; readonly status: NewAction["status"]; readonly riskTier: NewAction["riskTier"]; readonly reasons: ReadonlyArray<string> }
  /**
   * For a decision that auto-applies: the reasons that follow the holds read under the lock (the 24-hour count,
   * the cooldown, the envelope) when one holds it — the rule that would have cleared it.
   */
  readonly held: { readonly otherReasons: ReadonlyArray<string> } | undefined
  /** For a change that raises spend: its cooldown, read under the lock (policy/Cooldown.ts). */
  readonly cooldown: CooldownCheck | undefined
  /** The account's currency, to word the envelope's reasons. */
  readonly currency: string
  /** A changeset's member: recorded only while its changeset is open (the row's share lock makes submit wait for it). */
  readonly member: { readonly changesetId: string; readonly dependsOn: ReadonlyArray<string> } | undefined
}

const RecordedRow = actionRowWith({ queued: Schema.Number, announced: Schema.Number })
const decodeRecorded = Schema.decodeUnknown(Schema.Array(RecordedRow))

const json = (value: unknown) => JSON.stringify(value)

/** The reasons' texts with `format()` placeholders for the numbers read under the lock. */
const CAP_TEMPLATE = dailyCapReason("%s")
const ENVELOPE_TEMPLATE = envelopeReason({ raise: "%1$s", after: "%2$s", max: "%3$s", used: "%4$s", reserved: "%5$s" })
const CEILING_TEMPLATE = ceilingReason({ raise: "%1$s", after: "%2$s", max: "%3$s" })

/**
 * The holds read under the lock, as a JSON array of reasons (`holds.reasons`): the 24-hour count's for an action
 * that would auto-apply, the cooldown's for a change that raises spend, the envelope's and the ceiling's for a
 * raise of daily budgets (`e.raise`, priced by `acs_budget_delta`). MATERIALIZED: inlined into the ledger row's
 * INSERT … SELECT, it cost Citus ~0.2–1 s a proposal, computed once beside it ~10 ms (bench/history.md); one row on
 * PostgreSQL either way.
 */
const holdsCte = (sql: SqlClient.SqlClient, recording: Recording, raises: boolean) => {
  const money = (micros: Statement.Fragment) =>
    sql`(regexp_replace(to_char((${micros}) / 1000000.0, 'FM999999999999990.000000'), '(\\.\\d\\d\\d*?)0+$', '\\1') || ' ' || ${recording.currency})`
  const none = sql`'[]'::jsonb`
  const cap = recording.held === undefined
    ? none
    : sql`CASE WHEN w.used >= ${AUTO_APPLY_LIMIT_PER_24H} THEN jsonb_build_array(format(${CAP_TEMPLATE}, w.used)) ELSE '[]'::jsonb END`
  const cooldown = recording.cooldown === undefined
    ? none
    : sql`CASE WHEN w.earlier_action_id IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(${
      cooldownReasonSql(sql, recording.cooldown, {
        actionId: sql`w.earlier_action_id`,
        kind: sql`w.earlier_kind`,
        at: sql`w.earlier_at`,
        applied: sql`w.earlier_applied`
      })
    }) END`
  if (!raises) return sql`holds AS MATERIALIZED (SELECT ${cap} || ${cooldown} AS reasons FROM w)`
  const after24h = sql`w.budget_used + w.budget_reserved + e.raise`
  const afterTotal = sql`w.budget_total + w.budget_committed + e.raise`
  const envelope = recording.held === undefined ? none : sql`CASE WHEN ${after24h} > w.max_increase THEN jsonb_build_array(format(
      ${ENVELOPE_TEMPLATE}, ${money(sql`e.raise`)}, ${money(after24h)}, ${money(sql`w.max_increase`)}, ${money(sql`w.budget_used`)},
      ${money(sql`w.budget_reserved`)})) ELSE '[]'::jsonb END`
  return sql`holds AS MATERIALIZED (SELECT ${cap} || ${cooldown} || ${envelope} || CASE WHEN ${afterTotal} > w.max_total THEN jsonb_build_array(format(
      ${CEILING_TEMPLATE}, ${money(sql`e.raise`)}, ${money(afterTotal)}, ${money(sql`w.max_total`)})) ELSE '[]'::jsonb END AS reasons
    FROM w, e)`
}

/** Records the proposal in one statement; answers the ledger row as the API shows it, or undefined for a member whose changeset is no longer open. */
export const recordProposal = (sql: SqlClient.SqlClient, recording: Recording) => {
  const { actionId, decision, held, member, row } = recording
  // A failed row (a validation failure) and a member (decided with its changeset) read nothing under the lock.
  const raises = RAISING_KINDS.has(row.kind) && decision.status !== "failed" && member === undefined
  const clear = sql`jsonb_array_length(holds.reasons) = 0`
  return Effect.flatMap(currentTraceparent, (traceParent) =>
    sql`/* prepared */
      WITH ${raises ? sql`e AS (SELECT acs_budget_delta(${row.kind}, ${json(row.payload)}::jsonb) AS raise),` : sql``}
      w AS (SELECT * FROM ${raises ? sql`e, ` : sql``}acs_lock_account_window(${ACCOUNT_LOCK_NAMESPACE}, ${row.projectId}${
      raises ? sql`, raise => e.raise, may_auto_apply => ${held !== undefined}` : sql``
    }${
      recording.cooldown === undefined
        ? sql``
        : sql`, cooldown_keys => acs_cooldown_keys(${row.kind}, ${json(row.payload)}::jsonb), cooldown_hours => ${recording.cooldown.hours}`
    })),
      ${holdsCte(sql, recording, raises)},
      ${
      member === undefined ? sql`` : sql`cs AS (SELECT changeset_id FROM changesets
        WHERE changeset_id = ${member.changesetId} AND project_id = ${row.projectId} AND status = 'open' FOR SHARE),`
    }
      recorded AS (${
      insertProposed(sql, {
        actionId,
        orgId: row.orgId,
        projectId: row.projectId,
        kind: row.kind,
        summary: row.summary,
        reason: row.reason,
        payload: row.payload,
        proposedBy: row.proposedBy,
        failure: row.failure,
        riskTier: decision.riskTier,
        mode: held !== undefined ? sql`CASE WHEN ${clear} THEN 'auto_applied' ELSE 'queued' END` : sql`${decision.mode}`,
        status: held !== undefined ? sql`CASE WHEN ${clear} THEN 'approved' ELSE 'proposed' END` : sql`${decision.status}`,
        policyReasons: held !== undefined
          ? sql`CASE WHEN ${clear} THEN ${json(decision.reasons)}::jsonb ELSE holds.reasons || ${json(held.otherReasons)}::jsonb END`
          : sql`${json(decision.reasons)}::jsonb || holds.reasons`,
        countsTowardCap: held !== undefined ? clear : sql`false`,
        createdAt: sql`w.next_created_at`,
        traceParent,
        changesetId: member?.changesetId ?? null,
        dependsOn: member?.dependsOn ?? []
      }, member === undefined ? "w, holds" : "w, holds, cs")
    }),
      marked AS (${markCooldowns(sql, "recorded")}),
      job AS (${enqueueApproved(sql, "recorded")}),
      proposed_event AS (${proposedEventCte(sql, "recorded")})
      SELECT ${actionColumns(sql)}, (SELECT count(*) FROM job)::int AS queued, (SELECT count(*) FROM proposed_event)::int AS announced
      FROM recorded`).pipe(
      Effect.flatMap((rows) => Effect.orDie(decodeRecorded(rows))),
      Effect.tap((rows) =>
        sendWakes(sql, [
          ...(rows[0] !== undefined && rows[0].queued > 0 ? [jobQueued(row.projectId)] : []),
          ...(rows[0] !== undefined && rows[0].announced > 0 ? [eventsWritten(row.orgId)] : [])
        ])
      ),
      Effect.map((rows) => rows[0] === undefined ? undefined : toRecord(rows[0])),
      Effect.withSpan("Proposals.recordStatement", HOT_SPAN)
    )
}
