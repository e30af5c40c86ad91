/**
 * Shutdown is bounded: on SIGTERM the server drains and the apply worker finishes the job in hand, but a job
 * stuck on an upstream call that never answers cannot hold the process past SHUTDOWN_TIMEOUT_MS.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
import { waitFor } from "./support/wait.ts"

let p: Pipeline

beforeAll(async () => {
  // An upstream call may take as long as it likes; only the shutdown deadline bounds the stop.
  p = await startPipeline({ seed: 13, env: { UPSTREAM_TIMEOUT_MS: "3600000", SHUTDOWN_TIMEOUT_MS: "2000" } })
})

afterAll(async () => {
  await p?.close()
})

describe("shutdown", () => {
  it("exits at the deadline, saying so, when the job in hand is stuck on the upstream", async () => {
    const campaigns = await p.run(p.upstream.campaigns(p.account.upstreamAccountId))
    const groups = (await Promise.all(campaigns.map((c) => p.run(p.upstream.adGroups(p.account.upstreamAccountId, c.campaignId))))).flat()
    const group = groups.find((g) => g.status === "ENABLED" && !g.deleted)!
    p.simulator.control.addFault({ kind: "timeout", delayMs: 3_600_000, method: "PUT", path: "/adgroups/\\d+$" })
    const proposed = await p.propose("ad-group-status", { adGroupId: group.adGroupId, status: "PAUSED", reason: "stuck apply" })
    expect(proposed.status, proposed.text).toBe(201)
    await waitFor(
      "the apply's upstream write to arrive",
      async () => p.simulator.control.listCalls({ method: "PUT", path: /\/adgroups\/\d+$/ }).length,
      (calls) => calls > 0
    )
    expect(await p.server.stop("SIGTERM")).toBe(1)
    expect(p.server.logs()).toContain("shutdown overran its deadline")
  })
})
