/**
 * `acs events`: the org's events, newest first (`--type`, `--project`, `--limit`, `--after` for the next page);
 * with `--follow`, the live stream over RPC, oldest first, one line (or one JSON document) per event until
 * interrupted. `--after` with `--follow` resumes after that event: nothing missed, nothing repeated.
 */
import type { Event } from "@acs/domain/Events"
import { EventType } from "@acs/domain/Events"
import { Command, Options } from "@effect/cli"
import { Console, Effect, Option, Schema, Stream } from "effect"
import { UsageError } from "../CliError.ts"
import { clientOptions, withClient } from "../Client.ts"
import { emit, renderTable } from "../Output.ts"

const type = Options.text("type").pipe(Options.withDescription("only events of this type (action.proposed, sync.failed, …)"), Options.optional)
const project = Options.text("project").pipe(Options.withDescription("only events of this account (projectId)"), Options.optional)
const after = Options.text("after").pipe(
  Options.withDescription("the next page after this eventId (the printed next page); with --follow, resume after it"),
  Options.optional
)
const limit = Options.integer("limit").pipe(Options.withDescription("how many events (default 50, at most 500)"), Options.optional)
const follow = Options.boolean("follow").pipe(Options.withAlias("f"), Options.withDescription("follow the live stream until interrupted"))

/** What an event is about, in a few words. */
const subject = (event: Event): string => {
  const data = event.data
  const action = data["action"] as { readonly actionId?: string; readonly summary?: string } | undefined
  if (action !== undefined) return `${action.actionId ?? ""} ${action.summary ?? ""}`.trim()
  const sync = data["sync"] as { readonly syncId?: string; readonly error?: string | null } | undefined
  if (sync !== undefined) return `${sync.syncId ?? ""}${sync.error ? `: ${sync.error}` : ""}`
  const connection = data["connection"] as { readonly error?: string } | undefined
  return connection?.error ?? ""
}

const line = (event: Event): string => `${event.createdAt}  ${event.type.padEnd(17)}  ${event.projectId ?? "-"}  ${subject(event)}`

const decodeType = (value: Option.Option<string>) =>
  Option.match(value, {
    onNone: () => Effect.succeed(undefined),
    onSome: (text) =>
      Schema.decodeUnknown(EventType)(text).pipe(
        Effect.mapError(() => new UsageError({ message: `--type: "${text}" is not an event type (${EventType.literals.join(", ")})` }))
      )
  })

export const eventsCommand = Command.make("events", { type, project, after, limit, follow, ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const eventType = yield* decodeType(input.type)
      const projectId = Option.getOrUndefined(input.project)
      if (input.follow) {
        const lastEventId = Option.getOrUndefined(input.after)
        return yield* client.streamEvents({
          urlParams: { ...(eventType === undefined ? {} : { type: eventType }), ...(projectId === undefined ? {} : { projectId }) },
          ...(lastEventId === undefined ? {} : { headers: { "last-event-id": lastEventId } })
        }).pipe(Stream.runForEach((event) => Console.log(input.json ? JSON.stringify(event) : line(event))))
      }
      const page = yield* client.listEvents({
        urlParams: {
          ...(eventType === undefined ? {} : { type: eventType }),
          ...(projectId === undefined ? {} : { projectId }),
          ...Option.match(input.after, { onNone: () => ({}), onSome: (id) => ({ after: id }) }),
          ...Option.match(input.limit, { onNone: () => ({}), onSome: (n) => ({ limit: n }) })
        }
      })
      yield* emit(input.json, page, () =>
        [
          renderTable([
            { header: "AT", cell: (e: Event) => e.createdAt },
            { header: "TYPE", cell: (e: Event) => e.type },
            { header: "ACCOUNT", cell: (e: Event) => e.projectId ?? "-" },
            { header: "ABOUT", cell: subject },
            { header: "EVENT ID", cell: (e: Event) => e.eventId }
          ], page.events),
          page.nextAfter === null ? "" : `next page: --after ${page.nextAfter}`
        ].filter((text) => text !== "").join("\n"))
    }))
).pipe(Command.withDescription("the org's events, newest first; --follow streams them live (scope read)"))
