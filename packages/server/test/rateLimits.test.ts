/** SPEC 8: per-principal buckets per instance, RateLimit-* headers on success, 429 with retry_after_ms. */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase } from "./support/database.ts"
import { BOOTSTRAP_KEY, call, type RunningServer, startServer } from "./support/server.ts"

let server: RunningServer

beforeAll(async () => {
  server = await startServer({
    DATABASE_URL: await createDatabase(),
    ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    RATE_LIMIT_READ: "5",
    RATE_LIMIT_WRITE: "3"
  })
})

afterAll(async () => {
  await server?.stop()
})

describe("rate limits", () => {
  it("counts reads and writes in separate buckets per key and refuses the call past the limit", async () => {
    const created = await call(`${server.api}/keys`, { method: "POST", key: BOOTSTRAP_KEY, body: { name: "busy", scope: "admin" } })
    expect(created.status).toBe(201)
    expect(created.headers.get("ratelimit-policy")).toBe("3;w=60;name=\"write\"")
    const secret = (created.body as { secret: string }).secret

    const reads = []
    for (let i = 0; i < 6; i++) reads.push(await call(`${server.api}/settings`, { key: secret }))
    expect(reads.slice(0, 5).map((r) => r.status)).toEqual([200, 200, 200, 200, 200])
    expect(reads.slice(0, 5).map((r) => r.headers.get("ratelimit-remaining"))).toEqual(["4", "3", "2", "1", "0"])
    expect(reads[0]!.headers.get("ratelimit-limit")).toBe("5")
    expect(reads[0]!.headers.get("ratelimit-policy")).toBe("5;w=60;name=\"read\"")

    const refused = reads[5]!
    expect(refused.status).toBe(429)
    const body = refused.body as { error: { code: string; message: string }; retry_after_ms: number }
    expect(body.error.code).toBe("rate_limited")
    expect(body.retry_after_ms).toBeGreaterThan(0)
    expect(body.retry_after_ms).toBeLessThanOrEqual(60_000)
    expect(Number(refused.headers.get("retry-after"))).toBe(Math.ceil(body.retry_after_ms / 1000))

    // The write bucket is untouched by the reads; another key has its own buckets.
    const write = await call(`${server.api}/settings`, { method: "PUT", key: secret, body: { platformAutoApply: true } })
    expect(write.status).toBe(200)
    expect(write.headers.get("ratelimit-remaining")).toBe("2")
    expect((await call(`${server.api}/settings`, { key: BOOTSTRAP_KEY })).status).toBe(200)
  })
})
