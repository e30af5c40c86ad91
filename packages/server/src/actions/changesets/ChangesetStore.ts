/**
 * The `changesets` table's owner (docs/contract.md 4.3): every statement that writes a changeset, each a guarded
 * transition that names the status it starts from (as actions/pipeline/Transitions.ts does for actions) and
 * writes the changeset's event in the same transaction. Reads answer the row with its members' counts.
 *
 *   open --submit--> queued | approved --(apply job)--> applying --> applied | partially_applied | failed
 *   open | queued --reject/expire--> rejected | expired
 *   applied | partially_applied --(its revert applied)--> reverted
 */
import type { Actor } from "@acs/domain/Actions"
import type { Changeset, ChangesetDecision, ChangesetImpact, ChangesetPlan, ChangesetStatus, OnFailure } from "@acs/domain/Changesets"
import { Changeset as ChangesetSchema } from "@acs/domain/Changesets"
import type { EventType } from "@acs/domain/Events"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { newId } from "../../db/Ids.ts"
import { countOf, decodeRows } from "../../db/Rows.ts"
import { afterCommit } from "../../db/AfterCommit.ts"
import { writeEvent } from "../../events/Outbox.ts"
import { appendApproval } from "../pipeline/Transitions.ts"
import { countChangeset } from "../../telemetry/Metrics.ts"
import { CHANGESET_COLUMNS, decodeChangesetRows, memberCounts, toChangeset } from "./ChangesetRow.ts"

const json = (value: unknown) => JSON.stringify(value)
const encodeChangeset = Schema.encodeSync(ChangesetSchema)
const decodeRevertOf = decodeRows(Schema.Struct({ revertOf: Schema.NullOr(Schema.String) }))
const decodeDue = decodeRows(Schema.Struct({ changesetId: Schema.String, projectId: Schema.String, approvalTtlHours: Schema.Number }))

export interface NewChangeset {
  readonly orgId: string
  readonly projectId: string
  readonly title: string
  readonly reason: string | null
  readonly onFailure: OnFailure
  readonly openedBy: Actor
  readonly revertOf?: string
}

/** What submit freezes. */
export interface Frozen {
  readonly planHash: string
  readonly plan: ChangesetPlan
  readonly impact: ChangesetImpact
  readonly decision: ChangesetDecision
}

/** The statuses a changeset ends its apply with. */
export type ApplyEnd = Extract<ChangesetStatus, "applied" | "partially_applied" | "failed">

/** A changeset as its statements find it: by its id within its account. */
export interface ChangesetRef {
  readonly projectId: string
  readonly changesetId: string
}

export class ChangesetStore extends Effect.Service<ChangesetStore>()("acs/ChangesetStore", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.unsafe(CHANGESET_COLUMNS)

    const read = ({ changesetId, projectId }: ChangesetRef) =>
      sql`SELECT ${columns} FROM changesets c ${memberCounts(sql, projectId)} WHERE c.project_id = ${projectId} AND c.changeset_id = ${changesetId}`.pipe(
        Effect.flatMap(decodeChangesetRows),
        Effect.map((rows) => rows[0]),
        Effect.orDie
      )

    /** The changeset of the account, or undefined (another account's is not found either). */
    const find = (projectId: string, changesetId: string) => read({ projectId, changesetId })

    /** As `find`, locking the row for a transition in the caller's transaction. */
    const lock = (projectId: string, changesetId: string) =>
      // The lock by a statement of its own: Citus refuses `FOR UPDATE` in a statement whose select list counts the
      // members in subqueries.
      sql`SELECT 1 FROM changesets WHERE project_id = ${projectId} AND changeset_id = ${changesetId} FOR UPDATE`.pipe(
        Effect.orDie,
        Effect.zipRight(read({ projectId, changesetId }))
      )

    const list = (projectId: string, status: ChangesetStatus | undefined, limit: number) =>
      Effect.all([
        sql`SELECT ${columns} FROM changesets c ${memberCounts(sql, projectId)} WHERE c.project_id = ${projectId}
            ${status === undefined ? sql`` : sql`AND c.status = ${status}`}
            ORDER BY c.created_at DESC, c.changeset_id DESC LIMIT ${limit}`.pipe(Effect.flatMap(decodeChangesetRows)),
        sql`SELECT count(*)::int AS n FROM changesets WHERE project_id = ${projectId}
            ${status === undefined ? sql`` : sql`AND status = ${status}`}`.pipe(Effect.flatMap(countOf))
      ]).pipe(
        Effect.map(([rows, total]) => ({ changesets: rows.map(toChangeset), total })),
        Effect.orDie
      )

    /** The changeset's event, with the changeset as it is now (in the caller's transaction). */
    const event = (type: Extract<EventType, `changeset.${string}`>, changeset: ChangesetRef) =>
      Effect.flatMap(read(changeset), (row) =>
        row === undefined
          ? Effect.void
          : writeEvent(sql, { orgId: row.orgId, projectId: row.projectId, type, data: { changeset: encodeChangeset(toChangeset(row)) } }).pipe(
            // Counted once the change committed, as an action's status is.
            Effect.zipRight(afterCommit(countChangeset(type)))
          ))

    const open = (changeset: NewChangeset): Effect.Effect<Changeset> =>
      Effect.gen(function*() {
        const changesetId = newId("cs")
        yield* sql`INSERT INTO changesets (changeset_id, org_id, project_id, title, reason, on_failure, status, opened_by, revert_of)
          VALUES (${changesetId}, ${changeset.orgId}, ${changeset.projectId}, ${changeset.title}, ${changeset.reason},
            ${changeset.onFailure}, 'open', ${json(changeset.openedBy)}::jsonb, ${changeset.revertOf ?? null})`.pipe(Effect.orDie)
        return toChangeset((yield* read({ projectId: changeset.projectId, changesetId }))!)
      })

    /** A guarded transition: true when the row was in one of `from` and changed. */
    const moved = (statement: Effect.Effect<ReadonlyArray<unknown>, unknown>) =>
      statement.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /**
     * open | queued -> queued | approved, with the plan frozen. `counted` members count in the 24-hour window
     * from now (an auto-applied changeset); a queued one counts when it is approved, as a queued action does not.
     */
    const submit = (changeset: ChangesetRef, frozen: Frozen, by: Actor | null, options: { readonly counted: boolean } = { counted: true }) =>
      Effect.gen(function*() {
        const auto = frozen.decision.mode === "auto_applied"
        const done = yield* moved(sql`UPDATE changesets SET plan_hash = ${frozen.planHash}, plan = ${json(frozen.plan)}::jsonb,
            impact = ${json(frozen.impact)}::jsonb, decision = ${json(frozen.decision)}::jsonb, submitted_at = statement_timestamp(),
            status = ${auto ? "approved" : "queued"},
            decided_at = ${auto ? sql`statement_timestamp()` : sql`NULL`}, decided_by = ${auto && by !== null ? json(by) : null}::jsonb,
            counted_members = ${auto && options.counted ? frozen.plan.order.length : 0}, approvals = '[]', updated_at = statement_timestamp()
          WHERE project_id = ${changeset.projectId} AND changeset_id = ${changeset.changesetId} AND status IN ('open', 'queued')
          RETURNING changeset_id`)
        if (done) {
          yield* event("changeset.submitted", changeset)
          yield* event(auto ? "changeset.approved" : "changeset.queued", changeset)
        }
        return done
      })

    /** queued -> approved by a person. */
    const approve = (changeset: ChangesetRef, by: Actor) =>
      Effect.tap(
        moved(sql`UPDATE changesets SET status = 'approved', decided_by = ${json(by)}::jsonb, decided_at = statement_timestamp(),
            approvals = ${appendApproval(sql, by)}, updated_at = statement_timestamp()
          WHERE project_id = ${changeset.projectId} AND changeset_id = ${changeset.changesetId} AND status = 'queued' RETURNING changeset_id`),
        (done) => done ? event("changeset.approved", changeset) : Effect.void
      )

    /**
     * The first of a high-risk changeset's two approvals (docs/contract.md 3.3): recorded, the changeset stays
     * queued for a second approval from another person.
     */
    const recordFirstApproval = ({ changesetId, projectId }: ChangesetRef, by: Actor) =>
      moved(sql`UPDATE changesets SET approvals = ${appendApproval(sql, by)}, updated_at = statement_timestamp()
        WHERE project_id = ${projectId} AND changeset_id = ${changesetId} AND status = 'queued' AND approvals = '[]'::jsonb RETURNING changeset_id`)

    /** open | queued -> rejected (a decision or a withdrawal) or expired (nobody decided in time). */
    const end = (changeset: ChangesetRef, to: "rejected" | "expired", by: Actor | null, reason: string | null) =>
      Effect.tap(
        moved(sql`UPDATE changesets SET status = ${to}, decided_by = ${by === null ? null : json(by)}::jsonb,
            decided_at = statement_timestamp(), decision_reason = ${reason}, updated_at = statement_timestamp()
          WHERE project_id = ${changeset.projectId} AND changeset_id = ${changeset.changesetId} AND status IN ('open', 'queued')
          RETURNING changeset_id`),
        (done) => done ? event(to === "rejected" ? "changeset.rejected" : "changeset.expired", changeset) : Effect.void
      )

    /** approved -> applying: its apply job began (no event: not a decision or an outcome). */
    const markApplying = ({ changesetId, projectId }: ChangesetRef) =>
      moved(sql`UPDATE changesets SET status = 'applying', updated_at = statement_timestamp()
        WHERE project_id = ${projectId} AND changeset_id = ${changesetId} AND status IN ('approved', 'applying') RETURNING changeset_id`)

    /**
     * applying -> how the apply ended, with its event carrying the members' outcomes. A revert's end settles its
     * original: reverted (`changeset.reverted`) when anything was undone, free to be reverted again when nothing was.
     */
    const finish = (changeset: ChangesetRef, to: ApplyEnd) =>
      Effect.gen(function*() {
        const { changesetId, projectId } = changeset
        const rows = yield* sql`UPDATE changesets SET status = ${to}, applied_at = statement_timestamp(), updated_at = statement_timestamp()
          WHERE project_id = ${projectId} AND changeset_id = ${changesetId} AND status IN ('approved', 'applying') RETURNING revert_of`.pipe(
          Effect.flatMap(decodeRevertOf),
          Effect.orDie
        )
        const ended = rows[0]
        if (ended === undefined) return false
        yield* event(`changeset.${to}`, changeset)
        if (ended.revertOf !== null) {
          if (to === "failed") {
            yield* sql`UPDATE changesets SET reverted_by = NULL, updated_at = statement_timestamp()
              WHERE project_id = ${projectId} AND changeset_id = ${ended.revertOf} AND reverted_by = ${changesetId}`.pipe(Effect.orDie)
          } else if (yield* moved(sql`UPDATE changesets SET status = 'reverted', updated_at = statement_timestamp()
              WHERE project_id = ${projectId} AND changeset_id = ${ended.revertOf} AND reverted_by = ${changesetId}
                AND status IN ('applied', 'partially_applied') RETURNING changeset_id`)) {
            yield* event("changeset.reverted", { projectId, changesetId: ended.revertOf })
          }
        }
        return true
      })

    /** An applied changeset names its revert (until that revert ends); false if another revert was first. */
    const linkRevert = ({ changesetId, projectId }: ChangesetRef, revertId: string) =>
      moved(sql`UPDATE changesets SET reverted_by = ${revertId}, updated_at = statement_timestamp()
        WHERE project_id = ${projectId} AND changeset_id = ${changesetId} AND reverted_by IS NULL AND status IN ('applied', 'partially_applied')
        RETURNING changeset_id`)

    /** Changesets waiting for a decision past their org's approval TTL (open: since opened; queued: since submitted). */
    const due = (limit: number, changeset?: ChangesetRef) =>
      sql`SELECT c.changeset_id, c.project_id, o.approval_ttl_hours FROM changesets c JOIN orgs o ON o.org_id = c.org_id
        WHERE c.status IN ('open', 'queued')
          ${changeset === undefined ? sql`` : sql`AND c.project_id = ${changeset.projectId} AND c.changeset_id = ${changeset.changesetId}`}
          AND COALESCE(c.submitted_at, c.created_at) + make_interval(hours => o.approval_ttl_hours) <= statement_timestamp()
        ORDER BY c.created_at LIMIT ${limit}`.pipe(
        Effect.flatMap(decodeDue),
        Effect.orDie
      )

    return { find, lock, list, open, submit, approve, recordFirstApproval, end, markApplying, finish, linkRevert, due } as const
  })
}) {}
