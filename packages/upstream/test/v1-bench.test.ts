/**
 * The v1 face at benchmark size: every keyword of the 100,000-keyword account read through v1's paged
 * `keywords/query` equals what v5 reads. Which is faster is the benchmark's to say (`pnpm bench --only sync`,
 * "sync over v1"), not a timed assertion here.
 */
import { type Effect, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeAppleSearchAdsClient } from "../src/AppleSearchAdsClient.ts"
import type { UpstreamClient, UpstreamFailure, UpstreamKeyword } from "../src/Upstream.ts"
import { type Simulator, startSimulator } from "../src/simulator/Simulator.ts"
import { makeAppleAdsPlatformClient } from "../src/v1/AppleAdsPlatformClient.ts"
import { UpstreamTransportLive, type UpstreamTransport } from "../src/UpstreamTransport.ts"

describe("v1 at benchmark size", () => {
  const runtime = ManagedRuntime.make(UpstreamTransportLive)
  let simulator: Simulator
  let v1: UpstreamClient
  let v5: UpstreamClient
  const run = <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>): Promise<A> => runtime.runPromise(effect)

  beforeAll(async () => {
    simulator = await startSimulator({ seed: 3, size: "bench", port: 0 })
    v1 = await run(makeAppleAdsPlatformClient({ apiBaseUrl: simulator.apiV1Url, tokenUrl: simulator.tokenUrl }, simulator.credentials))
    v5 = await run(makeAppleSearchAdsClient({ apiBaseUrl: simulator.apiUrl, tokenUrl: simulator.tokenUrl }, simulator.credentials))
  })
  afterAll(async () => {
    await simulator.close()
    await runtime.dispose()
  })

  it("reads every keyword of the largest account as v5 reads them", async () => {
    const largest = simulator.accounts.map((a) => ({ org: String(a.orgId), n: simulator.control.summary().accounts.find((s) => s.orgId === a.orgId)?.keywords ?? 0 }))
      .sort((a, b) => b.n - a.n)[0]!
    expect(largest.n).toBeGreaterThanOrEqual(100_000)
    const readAll = async (client: UpstreamClient) => {
      const campaigns = await run(client.campaigns(largest.org))
      const keywords: Array<UpstreamKeyword> = []
      for (const campaign of campaigns) keywords.push(...await run(client.campaignKeywords(largest.org, campaign.campaignId)))
      return { keywords }
    }
    const viaV5 = await readAll(v5)
    const viaV1 = await readAll(v1)
    const sorted = (rows: ReadonlyArray<UpstreamKeyword>) => [...rows].sort((a, b) => Number(a.keywordId) - Number(b.keywordId))
    expect(viaV1.keywords.length).toBe(viaV5.keywords.length)
    expect(sorted(viaV1.keywords)).toEqual(sorted(viaV5.keywords))
  }, 120_000)
})
