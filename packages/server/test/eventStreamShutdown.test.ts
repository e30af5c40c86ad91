/**
 * SIGTERM with a live event stream open (docs/decisions/events-and-webhooks.md): GET /events/stream never ends by itself, so a server that
 * waited for its open requests to finish would sit until its shutdown deadline. It must end the stream and
 * exit at once: exit code 0 (the deadline's exit is 1, with its log line), and the client sees the stream end
 * cleanly, not a reset and not a hang.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase } from "./support/database.ts"
import { BOOTSTRAP_KEY, type RunningServer, startServer } from "./support/server.ts"
import { openSse } from "./support/sse.ts"

let server: RunningServer

beforeAll(async () => {
  // The default heartbeat (15 s) and a deadline far beyond it: neither may be what ends the stream.
  server = await startServer({ DATABASE_URL: await createDatabase(), ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY, SHUTDOWN_TIMEOUT_MS: "60000" })
})

afterAll(async () => {
  await server?.stop("SIGKILL")
})

describe("SIGTERM with an open event stream", () => {
  it("ends the stream cleanly and exits without waiting for its deadline", async () => {
    const client = await openSse(`${server.api}/events/stream`, { authorization: `Bearer ${BOOTSTRAP_KEY}` })
    expect(client.status).toBe(200)
    expect(client.contentType).toMatch(/^text\/event-stream/)
    expect(client.isEnded()).toBe(false)

    const code = await server.stop("SIGTERM")
    expect(code, server.logs()).toBe(0)
    expect(server.logs()).not.toContain("shutdown overran its deadline")
    // The exit closed the connection, so this resolves: the only question is how the stream ended.
    await client.ended
    expect(client.failure()).toBeUndefined()
  })
})
