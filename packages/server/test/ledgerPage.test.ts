/**
 * The ledger page is answered by the front door itself for a plain query (http/LedgerPage.ts) and by the API
 * for any other: both ways must answer the same bytes, headers included, and the same refusals.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"

let p: Pipeline

beforeAll(async () => {
  p = await startPipeline({ seed: 12 })
  const campaign = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).find((c) => c.dailyBudgetMicros !== null)!
  // A proposal, and a rejected one whose recorded payload is the body as sent (any JSON at all).
  const proposed = await p.propose("budget-change", {
    campaignId: campaign.campaignId,
    newDailyBudgetMicros: campaign.dailyBudgetMicros! - 10_000,
    reason: "page"
  })
  expect(proposed.status).toBe(201)
  const rejected = await p.propose("budget-change", {
    campaignId: campaign.campaignId,
    newDailyBudgetMicros: 1,
    reason: "page",
    odd_key: { inner_key: [{ a_b: 1 }] }
  })
  expect(rejected.status).toBe(422)
})

afterAll(async () => {
  await p?.close()
})

const page = (query: string) => p.as("key", "GET", `/accounts/${p.account.projectId}/actions${query}`)

/** The headers an answer's reader sees, without the ones that differ per request. */
const stableHeaders = (headers: Headers) =>
  [...headers.entries()].filter(([name]) => !["date", "x-request-id", "ratelimit-remaining", "ratelimit-reset"].includes(name)).sort()

describe("the ledger page", () => {
  it("answers a plain query (front door) as the API answers the same query spelled otherwise", async () => {
    // `%2D` is a plain `-` to the API, but not a plain query to the front door: the API answers it.
    for (const [plain, spelled] of [["?limit=5", "?limit=5&x=%2D"], ["", "?x=%2D"], ["?status=failed&limit=2", "?status=failed&limit=2&x=%2D"]]) {
      const [fast, api] = [await page(plain!), await page(spelled!)]
      expect(fast.status).toBe(200)
      expect(fast.text).toBe(api.text)
      expect(stableHeaders(fast.headers)).toEqual(stableHeaders(api.headers))
    }
    const all = (await page("?limit=5")).body as { actions: ReadonlyArray<{ status: string }> }
    expect(all.actions).toHaveLength(2)
    expect(all.actions.map((a) => a.status)).toContain("failed")
  })

  it("leaves a query the schema refuses to the API's error", async () => {
    for (const query of ["?limit=abc", "?status=nonsense", "?before=yesterday"]) {
      const answer = await page(query)
      expect(answer.status).toBe(400)
      expect((answer.body as { error: { code: string } }).error.code).toBe("invalid_request")
    }
  })
})
