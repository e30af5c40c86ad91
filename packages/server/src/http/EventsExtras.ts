/**
 * What the live stream adds over REST (GET /events/stream): Server-Sent Events. The stream is checked like
 * any operation before it starts, and takes one of its caller's stream slots (429 when none is free); then,
 * at each event and heartbeat, the request's credential is authenticated again, so a revoked key's (or ended
 * session's) stream ends there. The page (GET /events) is its operation alone.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import { Access } from "../auth/Access.ts"
import { EventStream, toSse } from "../feeds/EventStream.ts"
import { makeAuthenticate } from "./AuthenticationLive.ts"
import type { RestExtras } from "./RestExtras.ts"

const encoder = new TextEncoder()
const connected = encoder.encode(": connected\nretry: 2000\n\n")

export const EventsExtras = Effect.gen(function*() {
  const access = yield* Access
  const live = yield* EventStream
  const authenticate = yield* makeAuthenticate
  const extras: RestExtras = {
    streamEvents: (input) =>
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
      })
  }
  return extras
})
