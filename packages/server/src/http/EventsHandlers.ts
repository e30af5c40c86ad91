/**
 * Events over REST: a page (GET /events) and the live stream (GET /events/stream, Server-Sent Events). The
 * stream is checked like any operation before it starts, and takes one of its caller's stream slots (429 when
 * none is free); then, at each event and heartbeat, the request's credential is authenticated again, so a
 * revoked key's (or ended session's) stream ends there.
 */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import { Access } from "../auth/Access.ts"
import { EventStream, toSse } from "../feeds/EventStream.ts"
import { makeOperate } from "../operations/Operate.ts"
import { makeAuthenticate } from "./AuthenticationLive.ts"

const encoder = new TextEncoder()
const connected = encoder.encode(": connected\nretry: 2000\n\n")

export const EventsHandlers = HttpApiBuilder.group(Api, "events", (handlers) =>
  Effect.gen(function*() {
    const operate = yield* makeOperate
    const access = yield* Access
    const live = yield* EventStream
    const authenticate = yield* makeAuthenticate
    return handlers
      .handle("listEvents", operate.handler("listEvents"))
      .handle("streamEvents", (input) =>
        Effect.gen(function*() {
          // The front door checked access before the input was decoded; this takes its grant.
          const grant = yield* access.check("streamEvents")
          const request = yield* HttpServerRequest.HttpServerRequest
          const stillAllowed = Effect.isSuccess(Effect.suspend(() => authenticate(request)))
          // The stream the RPC procedure serves too; its slot is held in the request's scope, which closes
          // once the answer's body has ended.
          const events = yield* live.openFor(grant, input, stillAllowed)
          // A comment first: the client knows the stream is open before any event comes.
          const body = Stream.concat(Stream.make(connected), Stream.map(events, (item) => encoder.encode(toSse(item))))
          return HttpServerResponse.stream(body, {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-store", "x-accel-buffering": "no" }
          })
        }))
  }))
