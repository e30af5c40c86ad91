/**
 * docs/contract.md 8: per-principal buckets per instance, RateLimit-* headers on success, 429 with retry_after_ms.
 * docs/decisions/access-and-keys.md: the windows are forgotten once they end, sign-in charges the address before the email, and
 * the address comes from X-Forwarded-For only with TRUST_PROXY=true.
 */
import { CreatedKey } from "@acs/domain/ApiKeys"
import { ErrorBodies, RateLimited } from "@acs/domain/Errors"
import { ConfigProvider, Effect, Either, Layer, Schema, TestClock, TestContext } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { WINDOW } from "../src/limits/FixedWindows.ts"
import { RateLimits } from "../src/limits/RateLimits.ts"
import { createDatabase } from "./support/database.ts"
import { type Answer, BOOTSTRAP_KEY, call, errorCode, type RunningServer, startServer } from "./support/server.ts"

let server: RunningServer
let proxied: RunningServer

// One sign-in per email per minute, so ten per address.
const LOGIN_LIMIT = "1"
const ADDRESS_LIMIT = 10
const PERSON_EMAIL = "owner@limits.example"
const PERSON_PASSWORD = "rate limits owner password 0123"

beforeAll(async () => {
  const start = async (env: Record<string, string>) =>
    startServer({ DATABASE_URL: await createDatabase(), ADMIN_BOOTSTRAP_KEY: BOOTSTRAP_KEY, RATE_LIMIT_LOGIN: LOGIN_LIMIT, ...env })
  ;[server, proxied] = await Promise.all([
    start({ RATE_LIMIT_READ: "5", RATE_LIMIT_WRITE: "3" }),
    start({ TRUST_PROXY: "true", RATE_LIMIT_WRITE: "3", ADMIN_EMAIL: PERSON_EMAIL, ADMIN_PASSWORD: PERSON_PASSWORD })
  ])
})

afterAll(async () => {
  await Promise.all([server?.stop(), proxied?.stop()])
})

const login = (target: RunningServer, email: string, forwardedFor?: string): Promise<Answer> =>
  call(`${target.api}/auth/login`, {
    method: "POST",
    body: { email, password: "wrong password" },
    ...(forwardedFor !== undefined ? { headers: { "x-forwarded-for": forwardedFor } } : {})
  })

/** `count` failed sign-ins with fresh emails from one forwarded address: they use up its bucket. */
const exhaustAddress = async (target: RunningServer, forwardedFor: string, prefix: string) => {
  const statuses = []
  for (let i = 0; i < ADDRESS_LIMIT; i++) statuses.push((await login(target, `${prefix}-${i}@example.com`, forwardedFor)).status)
  expect(statuses).toEqual(Array.from({ length: ADDRESS_LIMIT }, () => 401))
}

/** Runs against a fresh RateLimits under TestClock, with RATE_LIMIT_LOGIN=10 (100 per address). */
const inProcess = <A, E>(program: Effect.Effect<A, E, RateLimits>): Promise<A> =>
  Effect.runPromise(program.pipe(
    Effect.provide(RateLimits.Default.pipe(
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["RATE_LIMIT_LOGIN", "10"]]))))
    )),
    Effect.provide(TestContext.TestContext)
  ))

const FLOOD = 50_000

describe("rate limits", () => {
  it("counts reads and writes in separate buckets per key and refuses the call past the limit", async () => {
    const created = await call(`${server.api}/keys`, { method: "POST", key: BOOTSTRAP_KEY, body: { name: "busy", scope: "admin" } })
    expect(created.status).toBe(201)
    expect(created.headers.get("ratelimit-policy")).toBe("3;w=60;name=\"write\"")
    const { secret } = Schema.decodeUnknownSync(CreatedKey)(created.body)

    const reads = []
    for (let i = 0; i < 6; i++) reads.push(await call(`${server.api}/settings`, { key: secret }))
    expect(reads.slice(0, 5).map((r) => r.status)).toEqual([200, 200, 200, 200, 200])
    expect(reads.slice(0, 5).map((r) => r.headers.get("ratelimit-remaining"))).toEqual(["4", "3", "2", "1", "0"])
    expect(reads[0]!.headers.get("ratelimit-limit")).toBe("5")
    expect(reads[0]!.headers.get("ratelimit-policy")).toBe("5;w=60;name=\"read\"")

    const refused = reads[5]!
    expect(refused.status).toBe(429)
    // The envelope as it travels (docs/contract.md 7): its schema checks `rate_limited`; `retry_after_ms` is top-level.
    const body = Schema.decodeUnknownSync(Schema.encodedSchema(ErrorBodies.RateLimited))(refused.body)
    expect(body.error.code).toBe("rate_limited")
    const retryAfterMs = body.retry_after_ms
    if (retryAfterMs === undefined) throw new Error(`no top-level retry_after_ms: ${refused.text}`)
    expect(retryAfterMs).toBeGreaterThan(0)
    expect(retryAfterMs).toBeLessThanOrEqual(60_000)
    expect(Number(refused.headers.get("retry-after"))).toBe(Math.ceil(retryAfterMs / 1000))

    // The write bucket is untouched by the reads; another key has its own buckets.
    const write = await call(`${server.api}/settings`, { method: "PUT", key: secret, body: { platformAutoApply: true } })
    expect(write.status).toBe(200)
    expect(write.headers.get("ratelimit-remaining")).toBe("2")
    expect((await call(`${server.api}/settings`, { key: BOOTSTRAP_KEY })).status).toBe(200)
  })
})

describe("rate-limit memory (in-process, TestClock)", () => {
  it("a flood of distinct emails from one address holds only the open windows, and none after the window", async () => {
    const held = await inProcess(Effect.gen(function*() {
      const limits = yield* RateLimits
      const outcomes = yield* Effect.forEach(
        Array.from({ length: FLOOD }, (_, i) => i),
        (i) => Effect.either(limits.consumeLogin(`flood-${i}@example.com`, "203.0.113.7"))
      )
      const allowed = outcomes.filter(Either.isRight).length
      const refused = outcomes.filter(Either.isLeft).map((outcome) => outcome.left)
      const duringFlood = yield* limits.openWindows
      yield* TestClock.adjust(WINDOW)
      const afterWindow = yield* limits.openWindows
      // The address may sign in again in the next window.
      const again = yield* Effect.either(limits.consumeLogin("again@example.com", "203.0.113.7"))
      return { allowed, refused, duringFlood, afterWindow, again: Either.isRight(again) }
    }))
    expect(held.allowed).toBe(100)
    expect(held.refused).toHaveLength(FLOOD - 100)
    expect(held.refused.every((error) => error instanceof RateLimited && error.retry_after_ms === 60_000)).toBe(true)
    // The address's window and one per email it let through: the refused emails opened nothing.
    expect(held.duringFlood).toBe(1 + 100)
    expect(held.afterWindow).toBe(0)
    expect(held.again).toBe(true)
  })

  it("a flood from distinct addresses over several minutes holds only the last minute's windows", async () => {
    const waves = 5
    const perWave = FLOOD / waves
    const held = await inProcess(Effect.gen(function*() {
      const limits = yield* RateLimits
      const sizes: Array<number> = []
      let allowed = 0
      for (let wave = 0; wave < waves; wave++) {
        yield* Effect.forEach(Array.from({ length: perWave }, (_, i) => i), (i) =>
          limits.consumeLogin(`w${wave}-${i}@example.com`, `10.${wave}.${i >> 8}.${i & 255}`).pipe(
            Effect.tap(() => Effect.sync(() => allowed++))
          ), { discard: true })
        sizes.push(yield* limits.openWindows)
        yield* TestClock.adjust("30 seconds")
      }
      yield* TestClock.adjust(WINDOW)
      return { allowed, sizes, afterWindow: yield* limits.openWindows }
    }))
    expect(held.allowed).toBe(FLOOD)
    // Each sign-in opens an address and an email window; a wave's windows end a minute later, so at
    // most the last two waves (30 s apart) are held however long the flood lasts.
    const perWaveWindows = 2 * perWave
    expect(held.sizes).toEqual([1, 2, 2, 2, 2].map((waves) => waves * perWaveWindows))
    expect(held.afterWindow).toBe(0)
  })
})

describe("sign-in address bucket", () => {
  it("ignores X-Forwarded-For without TRUST_PROXY: every forwarded value shares the socket's bucket", async () => {
    await exhaustAddress(server, "198.51.100.1", "shared")
    const other = await login(server, "shared-other@example.com", "198.51.100.2")
    expect(other.status).toBe(429)
    expect(errorCode(other)).toBe("rate_limited")
  })

  it("with TRUST_PROXY=true takes the last X-Forwarded-For entry: each client has its own bucket", async () => {
    await exhaustAddress(proxied, "198.51.100.1", "proxied")
    expect((await login(proxied, "proxied-again@example.com", "198.51.100.1")).status).toBe(429)
    // Another client behind the proxy, even one claiming the first one's address in front, is not refused.
    const other = await login(proxied, "proxied-other@example.com", "198.51.100.1, 198.51.100.2")
    expect(other.status).toBe(401)
    expect(other.headers.get("ratelimit-policy")).toBe("1;w=60;name=\"login\"")
  })

  it("refuses an address over its limit before opening a window for the email", async () => {
    await exhaustAddress(proxied, "198.51.100.3", "victim-probe")
    for (let i = 0; i < 3; i++) {
      const refused = await login(proxied, "victim@example.com", "198.51.100.3")
      expect(refused.status).toBe(429)
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    }
    // The refused attempts never charged the email: from another address it still has its one attempt.
    const first = await login(proxied, "victim@example.com", "198.51.100.4")
    expect(first.status).toBe(401)
    expect(first.headers.get("ratelimit-remaining")).toBe("0")
    expect((await login(proxied, "victim@example.com", "198.51.100.5")).status).toBe(429)
  })
})

describe("logout", () => {
  it("ends the session with the write bucket empty: logout is never rate-limited", async () => {
    const signedIn = await call(`${proxied.api}/auth/login`, {
      method: "POST",
      body: { email: PERSON_EMAIL, password: PERSON_PASSWORD },
      headers: { "x-forwarded-for": "198.51.100.9" }
    })
    expect(signedIn.status).toBe(200)
    const cookie = signedIn.headers.getSetCookie().find((line) => line.startsWith("acs_session="))!.split(";")[0]!
    const write = () => call(`${proxied.api}/settings`, { method: "PUT", headers: { cookie }, body: { platformAutoApply: true } })
    for (let i = 0; i < 3; i++) expect((await write()).status).toBe(200)
    const refused = await write()
    expect(refused.status).toBe(429)
    expect(errorCode(refused)).toBe("rate_limited")

    const out = await call(`${proxied.api}/auth/logout`, { method: "POST", headers: { cookie } })
    expect(out.status, out.text).toBe(204)
    expect(out.headers.get("set-cookie")).toMatch(/^acs_session=;/)
    const me = await call(`${proxied.api}/auth/me`, { headers: { cookie } })
    expect(me.status, "the session ended").toBe(401)
  })
})
