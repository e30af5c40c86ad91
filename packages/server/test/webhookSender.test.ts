/**
 * One delivery attempt against a real local receiver: a backlog larger than the connections acs keeps to one
 * endpoint waits for a free connection, and that wait is not counted against the attempt's timeout (nor in its
 * duration); an endpoint that does not answer within the timeout still fails the attempt; an answer is kept to
 * 1 KiB, and a connection whose answer was cut short is never used again, while one read to its end is.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { MAX_RESPONSE_BYTES, send, SOCKETS } from "../src/webhooks/WebhookSender.ts"

/**
 * A local receiver that calls `answer` once a request's body is in, counting the requests (received whole) and
 * the connections they came on.
 */
const startReceiving = async (answer: (response: Http.ServerResponse) => void) => {
  let received = 0
  let connections = 0
  const server = Http.createServer((request, response) => {
    request.resume()
    request.on("end", () => {
      received++
      answer(response)
    })
  })
  server.on("connection", () => connections++)
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received: () => received,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** Answers every request `holdMs` after it arrives (never, when `holdMs` is undefined). */
const startReceiver = (holdMs: number | undefined) =>
  startReceiving((response) => {
    if (holdMs !== undefined) setTimeout(() => response.writeHead(204).end(), holdMs)
  })

/** Answers 200 with `body`. */
const startAnswering = (body: string) => startReceiving((response) => response.writeHead(200, { "content-type": "text/plain" }).end(body))

const attempt = (url: string, index: number, timeoutMs: number) =>
  send({
    url,
    secret: "whsec_test",
    eventId: `evt_${index}`,
    rawBody: JSON.stringify({ eventId: `evt_${index}` }),
    unixSeconds: 1_800_000_000,
    timeoutMs,
    allowPrivate: true
  })

describe("a webhook delivery attempt", () => {
  const closing: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const close of closing.splice(0)) await close()
  })

  it("a backlog beyond the endpoint's connections waits for one without being timed out for it", async () => {
    // Each answer takes 2 s and the timeout is 5 s. Three waves of SOCKETS attempts: the third gets its
    // connections after about 4 s and its answers about 2 s later, in time only if the wait is not counted.
    const receiver = await startReceiver(2_000)
    closing.push(receiver.close)
    const attempts = 3 * SOCKETS
    const results = await Promise.all(Array.from({ length: attempts }, (_, index) => attempt(receiver.url, index, 5_000)))
    expect(results.filter((result) => !result.delivered).map((result) => result.error)).toEqual([])
    expect(receiver.received()).toBe(attempts)
    // The duration is the endpoint's time to answer, not the wait for a connection.
    for (const result of results) expect(result.durationMs).toBeLessThan(5_000)
  }, 60_000)

  it("an endpoint that does not answer within the timeout fails the attempt", async () => {
    const receiver = await startReceiver(undefined)
    closing.push(receiver.close)
    const result = await attempt(receiver.url, 0, 1_000)
    expect(result).toMatchObject({ delivered: false, statusCode: null, error: "no answer within 1000 ms" })
    expect(result.durationMs).toBeGreaterThanOrEqual(1_000)
  }, 30_000)

  it("keeps 1 KiB of a long answer and never reuses its connection; reuses one read to its end", async () => {
    const long = await startAnswering("x".repeat(64 * 1024))
    closing.push(long.close)
    for (let index = 0; index < 4; index++) {
      const result = await attempt(long.url, index, 5_000)
      expect(result).toMatchObject({ delivered: true, statusCode: 200, error: null })
      expect(result.response).toBe("x".repeat(MAX_RESPONSE_BYTES))
    }
    // Each request once, each on a connection of its own: a connection whose answer was cut short is destroyed.
    expect(long.received()).toBe(4)
    expect(long.connections()).toBeGreaterThanOrEqual(4)

    const short = await startAnswering("ok")
    closing.push(short.close)
    for (let index = 0; index < 6; index++) expect(await attempt(short.url, index, 5_000)).toMatchObject({ delivered: true, response: "ok" })
    // Kept alive (a second may open while the first is being released).
    expect(short.received()).toBe(6)
    expect(short.connections()).toBeLessThanOrEqual(2)
  }, 30_000)
})
