/** Events (API.md "Events"): what happened in an org, as `GET /events`, the stream and webhooks carry it. */
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
  "sync.succeeded",
  "sync.failed",
  "connection.broken"
).annotations({ identifier: "EventType" })
export type EventType = typeof EventType.Type

export const eventTypes: ReadonlyArray<EventType> = EventType.literals

export const Event = Schema.Struct({
  eventId: Schema.String.annotations({ description: "Unique; what `after`, `Last-Event-ID` and `Acs-Event-Id` carry" }),
  type: Schema.Union(EventType, Schema.Literal("ping")),
  createdAt: Schema.String.annotations({ description: "When the change committed its transaction (ISO 8601)" }),
  orgId: Schema.String,
  projectId: Schema.NullOr(Schema.String).annotations({ description: "The account; null for org-level events" }),
  data: jsonObject(
    "`{action}` for action.* (the action as GET …/actions/{actionId} answers it), `{sync}` for sync.* " +
      "(as GET …/syncs/{syncId}), `{connection}` for connection.broken ({status, error})"
  )
}).annotations({ identifier: "Event" })
export type Event = typeof Event.Type

export const EVENTS_DEFAULT_LIMIT = 50
export const EVENTS_MAX_LIMIT = 500

const typeParam = Schema.optional(EventType.annotations({ description: "Only events of this type" }))
const projectParam = Schema.optional(Schema.String.annotations({ description: "Only events of this account" }))

export const EventsParams = Schema.Struct({
  limit: Schema.optional(IntegerParam(Schema.Int, {
    minimum: 1,
    maximum: EVENTS_MAX_LIMIT,
    default: EVENTS_DEFAULT_LIMIT,
    description: `How many events to answer (default ${EVENTS_DEFAULT_LIMIT}); a value outside 1–${EVENTS_MAX_LIMIT} is clamped`
  })),
  after: Schema.optional(Schema.String.annotations({
    description: "The `nextAfter` of the previous page: the events that come after it in this list (older ones)"
  })),
  type: typeParam,
  projectId: projectParam
})

export const EventList = Schema.Struct({
  events: Schema.Array(Event),
  nextAfter: Schema.NullOr(Schema.String).annotations({ description: "Pass as `after` for the next page; null on the last" })
}).annotations({ identifier: "EventList" })

export const EventStreamParams = Schema.Struct({ type: typeParam, projectId: projectParam })

export const EventStreamHeaders = Schema.Struct({
  "last-event-id": Schema.optional(Schema.String.annotations({
    description: "Resume after this event: the stream sends every later event once, then live ones"
  }))
})
