/**
 * UpstreamTransport over a real local server: an answer read whole, the deadline covering the body, a URL
 * that cannot be sent to failing the call (never the process), connections kept for the next call and
 * destroyed when a call is interrupted.
 */
import { Duration, Effect, ManagedRuntime } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { UpstreamTransportLive, type TransportRequest, UpstreamTransport } from "../src/UpstreamTransport.ts"

describe("UpstreamTransport", () => {
  const runtime = ManagedRuntime.make(UpstreamTransportLive)
  let server: Http.Server
  let base: string
  /** Connections the server accepted; whether the last stalled answer's connection is closed. */
  let opened = 0
  let stalledClosed = false
  const send = (request: Omit<TransportRequest, "timeoutMs"> & { readonly timeoutMs?: number }) =>
    runtime.runPromise(Effect.either(Effect.flatMap(UpstreamTransport, (t) => t.send({ timeoutMs: 5_000, ...request }))))

  beforeAll(async () => {
    server = Http.createServer((request, response) => {
      if (request.url === "/stalls-mid-body") {
        // Headers and part of the body, then nothing: only a deadline over the whole exchange ends the call.
        stalledClosed = false
        request.socket.once("close", () => (stalledClosed = true))
        response.writeHead(200, { "content-type": "application/json" })
        response.write("{\"partial\":")
        return
      }
      let body = ""
      request.on("data", (chunk: Buffer) => (body += chunk.toString()))
      request.on("end", () => {
        response.writeHead(201, { "content-type": "application/json", "x-request-id": "req-1" })
        response.end(JSON.stringify({ method: request.method, url: request.url, context: request.headers["x-ap-context"], body }))
      })
    })
    server.on("connection", () => opened++)
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await runtime.dispose()
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })

  it("sends the method, headers and body, and answers the status, headers and whole body", async () => {
    const answer = await send({ method: "PUT", url: `${base}/campaigns/1?x=1`, headers: { "x-ap-context": "adAccountId=7" }, body: "{\"a\":1}" })
    expect(answer._tag).toBe("Right")
    if (answer._tag !== "Right") return
    expect(answer.right.status).toBe(201)
    expect(answer.right.headers["x-request-id"]).toBe("req-1")
    expect(JSON.parse(answer.right.body)).toEqual({ method: "PUT", url: "/campaigns/1?x=1", context: "adAccountId=7", body: "{\"a\":1}" })
  })

  it("fails with Timeout when the body stops coming, though the headers came", async () => {
    const answer = await send({ method: "GET", url: `${base}/stalls-mid-body`, headers: {}, timeoutMs: 300 })
    expect(answer._tag).toBe("Left")
    if (answer._tag === "Left") expect(answer.left).toMatchObject({ _tag: "TransportError", reason: "Timeout" })
  })

  it("fails with Network for a URL node cannot send to, and for a port nobody listens on", async () => {
    const malformed = await send({ method: "GET", url: "http://[not-a-host/v1/me", headers: {} })
    expect(malformed._tag).toBe("Left")
    if (malformed._tag === "Left") expect(malformed.left).toMatchObject({ _tag: "TransportError", reason: "Network" })
    const closed = Http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const refused = await send({ method: "GET", url: `http://127.0.0.1:${port}/v1/me`, headers: {} })
    expect(refused._tag).toBe("Left")
    if (refused._tag === "Left") expect(refused.left).toMatchObject({ _tag: "TransportError", reason: "Network" })
  })

  it("keeps a connection for the next call, and destroys the one of an interrupted call", async () => {
    const before = opened
    for (const path of ["/one", "/two", "/three"]) expect((await send({ method: "GET", url: `${base}${path}`, headers: {} }))._tag).toBe("Right")
    // One connection for the three (none when one kept from an earlier call was still open).
    expect(opened - before).toBeLessThanOrEqual(1)
    // Interrupted halfway through its answer (a timeout around the call, shorter than its own deadline): the
    // server sees that connection closed, long before its own deadline would have ended it.
    const interrupted = await runtime.runPromise(Effect.either(Effect.flatMap(UpstreamTransport, (t) =>
      t.send({ method: "GET", url: `${base}/stalls-mid-body`, headers: {}, timeoutMs: 60_000 }).pipe(Effect.timeout(Duration.millis(200))))))
    expect(interrupted._tag).toBe("Left")
    await expect.poll(() => stalledClosed, { timeout: 10_000 }).toBe(true)
    expect((await send({ method: "GET", url: `${base}/four`, headers: {} }))._tag).toBe("Right")
  })
})
