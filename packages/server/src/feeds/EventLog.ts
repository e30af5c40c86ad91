/**
 * Reading events: a page, newest first (GET /events), and the events after a position, oldest first (the
 * stream). Only sequenced events are read (events/Sequencer.ts), so a cursor never passes an event that
 * commits later. Reach is that of reads: an org-wide credential sees the org's events, one bound to accounts
 * sees those accounts' events (and no org-level ones, such as `connection.broken`).
 */
import { EVENTS_DEFAULT_LIMIT, EVENTS_MAX_LIMIT, type EventType } from "@acs/domain/Events"
import { AccountMismatch, InvalidRequest } from "@acs/domain/Errors"
import type { Principal } from "@acs/domain/Principal"
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { Accounts, reaches } from "../accounts/Accounts.ts"
import type { Granted } from "../auth/Access.ts"
import { decodeRows } from "../db/Rows.ts"
import { decodeEvents, eventColumns, EventRow, toEvent } from "../events/EventRows.ts"

/** Which events a reader sees: its org, the accounts it reaches (all of the org's when undefined), a type. */
export interface EventFilter {
  readonly orgId: string
  readonly projectIds: ReadonlyArray<string> | undefined
  readonly type: EventType | undefined
}

/**
 * Whether `filter` takes an event: the test `where` makes in SQL (an org-level event, with no account, is no
 * bound reader's), for events read once and handed to many readers.
 */
export const matcherOf = (filter: EventFilter): ((row: EventRow) => boolean) => {
  const projectIds = filter.projectIds === undefined ? undefined : new Set(filter.projectIds)
  return (row) =>
    row.orgId === filter.orgId &&
    (projectIds === undefined || (row.projectId !== null && projectIds.has(row.projectId))) &&
    (filter.type === undefined || row.type === filter.type)
}

/** An event's position, and the sequencer's last (int8 as text). */
const decodePositions = decodeRows(EventRow.pick("position"))
const decodeLastPosition = decodeRows(Schema.Struct({ lastPosition: Schema.String }))

export class EventLog extends Effect.Service<EventLog>()("acs/EventLog", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const accounts = yield* Accounts

    /** The filter of a caller asking for `projectId` (or every account it reaches); an account out of reach is 403. */
    const filterFor = (principal: Principal, query: { readonly projectId?: string | undefined; readonly type?: EventType | undefined }) =>
      Effect.gen(function*() {
        const { binding } = principal
        if (query.projectId !== undefined) {
          const account = yield* accounts.find(query.projectId)
          // Another org's account and an unknown one answer alike, as for every account operation.
          if (!reaches(binding, query.projectId) || Option.isNone(account) || account.value.orgId !== principal.orgId) {
            return yield* new AccountMismatch({ message: `this credential cannot reach account ${query.projectId}` })
          }
        }
        const bound = binding.kind === "org" ? undefined : binding.kind === "subset" ? binding.projectIds : [binding.projectId]
        const projectIds = query.projectId !== undefined ? [query.projectId] : bound
        return { orgId: principal.orgId, projectIds, type: query.type } satisfies EventFilter
      })

    const where = (filter: EventFilter) =>
      sql.and([
        sql`e.org_id = ${filter.orgId}`,
        sql`e.position IS NOT NULL`,
        filter.projectIds === undefined ? sql`TRUE` : filter.projectIds.length === 0 ? sql`FALSE` : sql.in("e.project_id", filter.projectIds),
        filter.type === undefined ? sql`TRUE` : sql`e.type = ${filter.type}`
      ])

    /** The position of one of the org's events; an id it does not know (or no longer keeps: 30 days) is 400. */
    const positionOf = (orgId: string, eventId: string, name: string) =>
      sql`SELECT position FROM events WHERE org_id = ${orgId} AND event_id = ${eventId} AND position IS NOT NULL`.pipe(
        Effect.orDie,
        Effect.flatMap(decodePositions),
        Effect.flatMap((rows) =>
          rows[0] === undefined
            ? Effect.fail(new InvalidRequest({ message: `${name}: no event ${eventId} in this org (events are kept 30 days)` }))
            : Effect.succeed(rows[0].position)
        )
      )

    const list = (
      grant: Granted<"listEvents">,
      params: { readonly limit?: number | undefined; readonly after?: string | undefined; readonly type?: EventType | undefined; readonly projectId?: string | undefined }
    ) =>
      Effect.gen(function*() {
        const filter = yield* filterFor(grant.principal, params)
        const limit = Math.min(EVENTS_MAX_LIMIT, Math.max(1, params.limit ?? EVENTS_DEFAULT_LIMIT))
        const before = params.after === undefined ? undefined : yield* positionOf(grant.orgId, params.after, "after")
        const rows = yield* sql`
          SELECT ${eventColumns(sql)} FROM events e
          WHERE ${where(filter)} ${before === undefined ? sql`` : sql`AND e.position < ${before}::bigint`}
          ORDER BY e.position DESC LIMIT ${limit + 1}`.pipe(Effect.orDie, Effect.flatMap(decodeEvents))
        const events = rows.slice(0, limit).map(toEvent)
        return { events, nextAfter: rows.length > limit ? events[events.length - 1]!.eventId : null }
      }).pipe(Effect.withSpan("EventLog.list"))

    /** The last position handed out: where a stream that names no event starts, and what the streams' watch reads. */
    const lastPosition = sql`SELECT last_position FROM event_sequencer WHERE id = 1`.pipe(
      Effect.orDie,
      Effect.flatMap(decodeLastPosition),
      Effect.map((rows) => rows[0]!.lastPosition)
    )

    /** Where a new stream starts: after `lastEventId`, or after everything sequenced so far. */
    const startOf = (orgId: string, lastEventId: string | undefined) =>
      lastEventId === undefined ? lastPosition : positionOf(orgId, lastEventId, "Last-Event-ID")

    /** Up to `limit` events after `position` (and at most `through`, when given), oldest first. */
    const after = (filter: EventFilter, position: string, limit: number, through?: string) =>
      sql`
        SELECT ${eventColumns(sql)} FROM events e
        WHERE ${where(filter)} AND e.position > ${position}::bigint ${through === undefined ? sql`` : sql`AND e.position <= ${through}::bigint`}
        ORDER BY e.position LIMIT ${limit}`.pipe(Effect.orDie, Effect.flatMap(decodeEvents), Effect.withSpan("EventLog.after"))

    /** Up to `limit` events of any of `orgIds` after `position`, oldest first: what the streams' reader reads. */
    const afterInOrgs = (orgIds: ReadonlyArray<string>, position: string, limit: number) =>
      sql`
        SELECT ${eventColumns(sql)} FROM events e
        WHERE ${sql.in("e.org_id", orgIds)} AND e.position IS NOT NULL AND e.position > ${position}::bigint
        ORDER BY e.position LIMIT ${limit}`.pipe(Effect.orDie, Effect.flatMap(decodeEvents), Effect.withSpan("EventLog.afterInOrgs"))

    return { filterFor, list, lastPosition, startOf, after, afterInOrgs } as const
  }),
  dependencies: [Accounts.Default]
}) {}
