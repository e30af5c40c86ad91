/**
 * Shutdown does not wait on keep-alive: a connection still answering when the server closes (an event stream
 * ending, a request in flight) is closed as soon as its answer is done, not kept for the keep-alive time.
 * The keep-alive timer is switched off here, so a connection left open would hold `close` until the hang
 * detector below fails the test.
 */
import { Agent, type IncomingMessage, request, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "vitest"
import { createAcsServer } from "../../src/http/AcsNodeServer.ts"

/** One GET over `agent`, and when the connection it went over closes. */
const get = (port: number, path: string, agent: Agent) =>
  new Promise<{ status: number; body: string; connectionClosed: Promise<void> }>((resolve, reject) => {
    let connectionClosed = Promise.resolve()
    const req = request({ host: "127.0.0.1", port, path, agent }, (response) => {
      let body = ""
      response.on("data", (chunk: Buffer) => (body += chunk.toString()))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body, connectionClosed }))
    })
    req.on("socket", (socket) => (connectionClosed = new Promise((done) => socket.once("close", () => done()))))
    req.on("error", reject)
    req.end()
  })

describe("closing the HTTP server", () => {
  it("closes a connection that was answering when close began once its answer is done", { timeout: 120_000 }, async () => {
    const server = createAcsServer()
    server.keepAliveTimeout = 0
    let arrived: () => void = () => {}
    const slowArrived = new Promise<void>((resolve) => (arrived = resolve))
    let finishSlow: () => void = () => {}
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      if (req.url !== "/slow") return res.end("quick")
      finishSlow = () => res.end("slow")
      arrived()
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const { port } = server.address() as AddressInfo
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })

    // A connection that answered before close and now waits idle: close ends it itself.
    expect((await get(port, "/quick", agent)).body).toBe("quick")

    const slow = get(port, "/slow", agent)
    await slowArrived
    const closed = new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())))
    finishSlow()
    const answer = await slow
    expect(answer).toMatchObject({ status: 200, body: "slow" })
    await answer.connectionClosed
    await closed
    agent.destroy()
  })
})
