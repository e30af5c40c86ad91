/**
 * How the apply worker treats upstream refusals: a 500 on an idempotent read before the write is retried
 * and the action applies, a 500 on the write is never retried, and a write refused because the role became
 * read-only marks the account `readOnly` (later proposals 403 `read_only_account`) until a sync sees the
 * role back. Upstream calls are counted in the simulator's call log.
 */
import { isProposalResponse } from "@acs/domain/Actions"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
import { errorCode } from "./support/server.ts"
import { WAIT_MS } from "./support/wait.ts"

let p: Pipeline
let campaigns: ReadonlyArray<UpstreamCampaign>
let next = 0

/** Polls `condition` until it holds; fails after `timeoutMs` with `what`. */
const until = async (what: string, condition: () => Promise<boolean>, timeoutMs = WAIT_MS) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await condition()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting until ${what}:\n${p.server.logs().slice(-3000)}`)
}

/** The next campaign, as the upstream holds it now. */
const freshCampaign = async () => {
  const campaign = campaigns[next++ % campaigns.length]!
  return p.run(p.upstream.campaign(p.account.upstreamAccountId, campaign.campaignId))
}

/** The budget 10% lower, in whole cents (the USD account refuses fractions of a cent). */
const tenPercentLess = (campaign: UpstreamCampaign) => Math.round(campaign.dailyBudgetMicros! * 0.9 / 10_000) * 10_000

const cut = (campaign: UpstreamCampaign) => ({
  campaignId: campaign.campaignId,
  newDailyBudgetMicros: tenPercentLess(campaign),
  reason: "trim"
})

/** Proposes a 10% cut as the person (auto-applies); the action id. */
const proposeCut = async (campaign: UpstreamCampaign) => {
  const answer = await p.api("person", (client) =>
    client.proposals.proposeBudgetChange({ path: { projectId: p.account.projectId }, payload: cut(campaign), urlParams: {}, headers: {} }))
  if (!isProposalResponse(answer)) throw new Error(`a preview where a proposal was expected: ${JSON.stringify(answer)}`)
  expect(answer).toMatchObject({ mode: "auto_applied" })
  return answer.actionId
}

const lastCall = () => p.simulator.control.listCalls().at(-1)?.seq ?? 0

/** Statuses of the calls on the campaign since `since` (a `lastCall()` taken before the proposal). */
const callsOn = (method: string, campaign: UpstreamCampaign, since: number) =>
  p.simulator.control.listCalls({ method, path: new RegExp(`/campaigns/${campaign.campaignId}$`), since }).map((call) => call.status)

const account = async () =>
  (await p.api("key", (client) => client.accounts.getAccount({ path: { projectId: p.account.projectId } }))).account

beforeAll(async () => {
  p = await startPipeline({ seed: 66 })
  campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).filter((c) => c.dailyBudgetMicros !== null)
})

afterAll(async () => {
  await p?.close()
})

describe("upstream 500s during an apply", () => {
  it("retries a 500 on the read before the write, and applies with one write", async () => {
    const campaign = await freshCampaign()
    const since = lastCall()
    p.simulator.control.addFault({ kind: "status", status: 500, method: "GET", path: `/campaigns/${campaign.campaignId}$`, times: 1 })
    const actionId = await proposeCut(campaign)
    const applied = await p.settle(actionId, ["applied", "failed"])
    expect(applied.status, JSON.stringify(applied.failure)).toBe("applied")
    expect(callsOn("GET", campaign, since).slice(0, 2)).toEqual([500, 200])
    expect(callsOn("PUT", campaign, since)).toEqual([200])
  })

  it("never retries a 500 on the write: the action fails after one call", async () => {
    const campaign = await freshCampaign()
    const since = lastCall()
    p.simulator.control.addFault({ kind: "status", status: 500, method: "PUT", path: `/campaigns/${campaign.campaignId}$`, times: 1 })
    const actionId = await proposeCut(campaign)
    const failed = await p.settle(actionId, ["applied", "failed"])
    expect(failed.status).toBe("failed")
    expect(failed.failure!.message).toMatch(/500/)
    expect(callsOn("PUT", campaign, since)).toEqual([500])
  })
})

describe("a write refused because the role became read-only", () => {
  it("marks the account readOnly until a sync sees the role back", async () => {
    const orgId = Number(p.account.upstreamAccountId)
    const roles = p.simulator.control.summary().accounts.find((a) => a.orgId === orgId)!.roleNames
    expect((await account()).readOnly).toBe(false)

    // The role changes upstream after the last sync: acs still believes the account writable.
    p.simulator.control.addFault({ kind: "readOnly", orgId })
    const campaign = await freshCampaign()
    const since = lastCall()
    const actionId = await proposeCut(campaign)
    const failed = await p.settle(actionId, ["applied", "failed"])
    expect(failed.status).toBe("failed")
    expect(failed.failure!.message).toMatch(/^read_only_account: /)
    expect(callsOn("PUT", campaign, since)).toEqual([403])

    expect((await account()).readOnly).toBe(true)
    const refused = await p.propose("budget-change", cut(await freshCampaign()))
    expect([refused.status, errorCode(refused)]).toEqual([403, "read_only_account"])

    // The role comes back; a sync sees it and proposals work again.
    p.simulator.control.setRoles(orgId, roles)
    const projectId = p.account.projectId
    // The typed client decodes a Sync only from the declared 202.
    const { syncId } = await p.api("key", (client) => client.warehouse.startSync({ path: { projectId } }))
    await until("the sync finished", async () =>
      (await p.api("key", (client) => client.warehouse.getSync({ path: { projectId, syncId } }))).status !== "running")
    expect((await account()).readOnly).toBe(false)
    const again = await proposeCut(await freshCampaign())
    expect((await p.settle(again, ["applied", "failed"])).status).toBe("applied")
  })
})
