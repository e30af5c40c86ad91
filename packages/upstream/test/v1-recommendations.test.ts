/**
 * Apple's recommendations on the v1 face of the simulator, through the v1 client over HTTP: scoped by the promoted
 * app (the filter is required), seeded from the campaigns' last week with an expiry, applied with an override as a
 * campaign write the change history attributes to the API client, applied or dismissed once only, refused once
 * expired; the v5 client has none.
 */
import { Effect, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeAppleSearchAdsClient } from "../src/AppleSearchAdsClient.ts"
import type { UpstreamClient, UpstreamFailure, UpstreamRecommendation } from "../src/Upstream.ts"
import { type RetryPolicy } from "../src/UpstreamHttp.ts"
import { type Simulator, startSimulator } from "../src/simulator/Simulator.ts"
import { rawV1 } from "./support/rawV1.ts"
import { makeAppleAdsPlatformClient } from "../src/v1/AppleAdsPlatformClient.ts"
import { UpstreamTransportLive, type UpstreamTransport } from "../src/UpstreamTransport.ts"

const POLICY: RetryPolicy = { maxRetries: 0, baseDelayMs: 20, maxDelayMs: 200, timeoutMs: 30_000 }

describe("Apple's recommendations (v1) on the simulator", () => {
  const runtime = ManagedRuntime.make(UpstreamTransportLive)
  const now = Date.now()
  let simulator: Simulator
  let client: UpstreamClient
  let org: string

  const run = <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>): Promise<A> => runtime.runPromise(effect)
  const failure = <A>(effect: Effect.Effect<A, UpstreamFailure, UpstreamTransport>): Promise<string> =>
    runtime.runPromise(Effect.flip(effect)).then((error) => error.message)

  /** Every recommendation of the account: one query per promoted app of its campaigns. */
  const all = async (): Promise<ReadonlyArray<UpstreamRecommendation>> => {
    const apps = [...new Set((await run(client.campaigns(org))).map((c) => c.adamId))]
    return (await Promise.all(apps.map((adamId) => run(client.recommendations!(org, adamId))))).flat()
  }

  beforeAll(async () => {
    simulator = await startSimulator({ seed: 11, size: "demo", port: 0, clock: () => now })
    client = await run(makeAppleAdsPlatformClient({ apiBaseUrl: simulator.apiV1Url, tokenUrl: simulator.tokenUrl }, simulator.credentials, POLICY))
    org = String(simulator.accounts.find((a) => a.currency === "USD" && !a.readOnly)!.orgId)
  })
  afterAll(async () => {
    await simulator.close()
    await runtime.dispose()
  })

  it("requires the promoted app and lists each one's, with the last week, the expected week and the expiry", async () => {
    const unscoped = await rawV1(simulator, "POST", "/recommendations/daily-budgets/query", org, { filters: [] })
    expect(unscoped.status).toBe(400)
    expect(unscoped.text).toContain("promotedObjectId")

    const listed = await all()
    const campaigns = new Map((await run(client.campaigns(org))).map((c) => [c.campaignId, c]))
    const caps = listed.filter((r) => r.type === "daily_cap")
    expect(caps.length).toBeGreaterThanOrEqual(3)
    for (const r of listed) {
      const campaign = campaigns.get(r.campaignId)!
      expect(r.adamId).toBe(campaign.adamId)
      expect(r.state).toBe("available")
      expect(r.currentMicros).toBe(r.type === "daily_cap" ? campaign.dailyBudgetMicros : campaign.targetCpaMicros)
      expect(r.lastWeek.spendMicros).toBeGreaterThan(0)
      expect(r.expected.spendMicros).toBeGreaterThan(0)
    }
    // Two live daily caps and one that expired an hour ago.
    expect(caps.filter((r) => Date.parse(r.expiresAt) > now).length).toBe(2)
    expect(caps.filter((r) => Date.parse(r.expiresAt) <= now).length).toBe(1)
    const one = caps[0]!
    expect((await run(client.recommendations!(org, one.adamId))).some((r) => r.recommendationId === one.recommendationId)).toBe(true)
  })

  it("applies with the override as an API write of the campaign, once; dismisses once; refuses an expired one", async () => {
    const since = new Date(now - 1000).toISOString()
    const caps = (await all()).filter((r) => r.type === "daily_cap")
    const live = caps.filter((r) => Date.parse(r.expiresAt) > now)
    const [applied, dismissed] = [live[0]!, live[1]!]
    const expired = caps.find((r) => Date.parse(r.expiresAt) <= now)!
    const override = applied.currentMicros! + 10_000_000

    const record = await run(client.applyRecommendation!(org, applied, override))
    expect(record).toMatchObject({ recommendationId: applied.recommendationId, state: "applied" })
    expect((await run(client.campaign(org, applied.campaignId))).dailyBudgetMicros).toBe(override)
    const history = await run(client.changeHistory!(org, since))
    expect(history.filter((change) => change.entityId === applied.campaignId)).toEqual([
      expect.objectContaining({ userType: "CUSTOMER_API", modifiedBy: client.clientId, entityType: "Campaign" })
    ])
    expect(await failure(client.applyRecommendation!(org, applied, override))).toContain("already APPLIED")

    expect(await run(client.dismissRecommendation!(org, dismissed))).toMatchObject({ state: "dismissed" })
    expect((await run(client.campaign(org, dismissed.campaignId))).dailyBudgetMicros).toBe(dismissed.currentMicros)
    expect(await failure(client.dismissRecommendation!(org, dismissed))).toContain("already DISMISSED")

    expect(await failure(client.applyRecommendation!(org, expired, expired.recommendedMicros))).toContain("expired at")
    const after = new Map((await all()).map((r) => [r.recommendationId, r.state]))
    expect(after.get(applied.recommendationId)).toBe("applied")
    expect(after.get(dismissed.recommendationId)).toBe("dismissed")
    expect(after.get(expired.recommendationId)).toBe("available")
  })

  it("is absent from the v5 client", async () => {
    const v5 = await run(makeAppleSearchAdsClient({ apiBaseUrl: simulator.apiUrl, tokenUrl: simulator.tokenUrl }, simulator.credentials, POLICY))
    expect(v5.recommendations).toBeUndefined()
    expect(v5.applyRecommendation).toBeUndefined()
  })
})
