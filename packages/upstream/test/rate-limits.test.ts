/**
 * The platform's request budget per API client, as the simulator runs it (SimulatorRateLimit.ts) and as the v1 client
 * hears it (UpstreamRateLimits.ts): `RateLimit-*` headers count each client's requests across every account it calls,
 * another client has a budget of its own, an enforced budget answers 429 with `Retry-After` that the client waits out,
 * and the client tells its observer when the budget is spent and for how long.
 */
import { Effect, ManagedRuntime } from "effect"
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { UpstreamFailure } from "../src/Upstream.ts"
import type { RetryPolicy } from "../src/UpstreamHttp.ts"
import { type RateLimitObservation, RateLimitObserver } from "../src/UpstreamRateLimits.ts"
import { type UpstreamTransport, UpstreamTransportLive } from "../src/UpstreamTransport.ts"
import { type Simulator, startSimulator } from "../src/simulator/Simulator.ts"
import { makeAppleAdsPlatformClient } from "../src/v1/AppleAdsPlatformClient.ts"
import { rawV1 } from "./support/rawV1.ts"

const POLICY: RetryPolicy = { maxRetries: 3, baseDelayMs: 20, maxDelayMs: 5_000, timeoutMs: 5_000 }

describe("request budgets per API client", () => {
  const runtime = ManagedRuntime.make(UpstreamTransportLive)
  const run = <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>): Promise<A> => runtime.runPromise(effect)
  let simulator: Simulator

  beforeAll(async () => {
    simulator = await startSimulator({ seed: 11, size: "demo" })
  })
  afterAll(async () => {
    await simulator.close()
    await runtime.dispose()
  })

  it("counts each API client's requests across its accounts, apart from another client's", async () => {
    simulator.control.setRateLimit({ limit: 50, windowSeconds: 60, enforce: false })
    const [first, second] = simulator.accounts.map((a) => String(a.orgId))
    const remaining = async (account: string) => Number((await rawV1(simulator, "POST", "/campaigns/query", account, {})).headers.get("ratelimit-remaining"))
    // rawV1 signs in as the demo client each time; its count runs on across both accounts.
    const a = await remaining(first!)
    const b = await remaining(second!)
    expect(b).toBe(a - 1)
    expect(a).toBeLessThan(50)
    const reset = Number((await rawV1(simulator, "POST", "/campaigns/query", first!, {})).headers.get("ratelimit-reset"))
    expect(reset).toBeGreaterThan(0)
    expect(reset).toBeLessThanOrEqual(60)
    // Another API client (a key pair registered as an Apple Ads admin would) starts with its whole budget.
    const { privateKey, publicKey } = Crypto.generateKeyPairSync("ec", { namedCurve: "P-256" })
    const ids = simulator.control.registerApiClient(publicKey.export({ type: "spki", format: "pem" }).toString())!
    const other = { ...ids, privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() }
    const answer = await rawV1(simulator, "POST", "/campaigns/query", first!, {}, other)
    expect(answer.status).toBe(200)
    expect(Number(answer.headers.get("ratelimit-remaining"))).toBe(49)
  })

  it("answers 429 with Retry-After beyond an enforced budget; the client waits it out and tells its observer", async () => {
    simulator.control.setRateLimit({ limit: 3, windowSeconds: 2, enforce: true })
    simulator.control.clearCalls()
    const account = String(simulator.accounts[0]!.orgId)
    const observed: Array<RateLimitObservation> = []
    const observer = RateLimitObserver.of({ observe: (o) => Effect.sync(() => observed.push(o)) })
    const client = await run(
      makeAppleAdsPlatformClient({ apiBaseUrl: simulator.apiV1Url, tokenUrl: simulator.tokenUrl }, simulator.credentials, POLICY).pipe(
        Effect.provideService(RateLimitObserver, observer)
      )
    )
    // Four reads on a budget of three (the client's own sign-in check spent some): at least one is refused, then retried.
    const campaigns = await run(Effect.forEach([1, 2, 3, 4], () => client.campaigns(account)))
    expect(campaigns.every((list) => list.length > 0)).toBe(true)
    const refused = simulator.control.listCalls({ path: /^\/v1\// }).filter((c) => c.status === 429)
    expect(refused.length).toBeGreaterThan(0)
    expect(observed.map((o) => o.status)).toContain(429)
    for (const o of observed) {
      expect(o.clientId).toBe(simulator.credentials.clientId)
      expect(o.limitedForMs).toBeGreaterThan(0)
      expect(o.limitedForMs).toBeLessThanOrEqual(2_000)
    }
    // The answer that spent the last request says so too (RateLimit-Remaining: 0), before any 429.
    expect(observed[0]!.status).toBe(200)
    simulator.control.setRateLimit({ limit: 600, windowSeconds: 60, enforce: false })
  })
})
