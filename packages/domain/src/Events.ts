/** Events (docs/contract.md 6): what happened in an org, as `GET /events`, the stream and webhooks carry it. */
import { Schema } from "effect"
import { jsonObject } from "./Json.ts"
import { IntegerParam } from "./Warehouse.ts"

export const EventType = Schema.Literal(
  "action.proposed",
  "action.approved",
  "action.rejected",
  "action.expired",
  "action.applied",
  "action.failed",
  "action.demoted",
  "action.reverted",
  "action.external",
  "action.verdict",
  "changeset.submitted",
  "changeset.queued",
  "changeset.approved",
  "changeset.rejected",
  "changeset.applied",
  "changeset.partially_applied",
  "changeset.failed",
  "changeset.expired",
  "changeset.reverted",
  "guardrails.changed",
  "account.paused",
  "account.resumed",
  "sync.succeeded",
  "sync.failed",
  "connection.broken"
).annotations({ identifier: "EventType" })
export type EventType = typeof EventType.Type

export const eventTypes: ReadonlyArray<EventType> = EventType.literals

export const Event = Schema.Struct({
  eventId: Schema.String,
  // A string, not the enum again: a webhook's test event is `ping`, and the list of types is EventType's.
  type: Schema.String.annotations({ description: "An EventType; `ping` for a webhook test" }),
  createdAt: Schema.String,
  orgId: Schema.String,
  projectId: Schema.NullOr(Schema.String).annotations({ description: "null for org-level events" }),
  data: jsonObject("{action} (as GET …/actions/{actionId}; action.verdict adds {review}), {changeset} (as in GET …/changesets/{changesetId}), {guardrails, by}, {sync} or {connection}")
}).annotations({ identifier: "Event" })
export type Event = typeof Event.Type

export const EVENTS_DEFAULT_LIMIT = 50
export const EVENTS_MAX_LIMIT = 500

/**
 * An EventType, checked (400 otherwise) but documented as a string: the MCP tool list stays small (docs/decisions/surfaces.md),
 * and the types are listed once, in the Event documentation.
 */
const typeParam = Schema.optional(
  Schema.String.annotations({ description: "Only this type, e.g. action.proposed" }).pipe(
    Schema.filter((text): text is EventType => (eventTypes as ReadonlyArray<string>).includes(text), {
      message: () => `type: one of ${eventTypes.join(", ")}`
    })
  )
)
const projectParam = Schema.optional(Schema.String.annotations({ description: "Only this account's events" }))

export const EventsParams = Schema.Struct({
  limit: Schema.optional(IntegerParam(Schema.Int, {
    minimum: 1,
    maximum: EVENTS_MAX_LIMIT,
    default: EVENTS_DEFAULT_LIMIT,
    description: `Default ${EVENTS_DEFAULT_LIMIT}, clamped to 1–${EVENTS_MAX_LIMIT}`
  })),
  after: Schema.optional(Schema.String.annotations({ description: "The previous page's nextAfter" })),
  type: typeParam,
  projectId: projectParam
})

export const EventList = Schema.Struct({
  events: Schema.Array(Event),
  nextAfter: Schema.NullOr(Schema.String).annotations({ description: "`after` for the next page; null on the last" })
}).annotations({ identifier: "EventList" })

export const EventStreamParams = Schema.Struct({ type: typeParam, projectId: projectParam })

export const EventStreamHeaders = Schema.Struct({
  "last-event-id": Schema.optional(Schema.String.annotations({
    description: "Resume after this event: the stream sends every later event once, then live ones"
  }))
})
