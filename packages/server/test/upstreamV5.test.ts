/**
 * The Campaign Management API v5 until Apple retires it (2027-01-26), and moving off it. The end-to-end suites
 * run on v1 (the default); this smaller suite runs a demo org connected over v5: apply, a partial failure's
 * warning, a composite rollback, revert and sync, with every write landing on v5's paths. Then the connection
 * moves to v1 (its v5 org ids made to differ, as Apple's org ids and ad account ids do): every project, ledger
 * row and warehouse row stays, the accounts take their v1 ids, and what was applied over v5 reverts over v1.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import type { Answer } from "./support/server.ts"
import { AD_GROUP_NEGATIVES_BULK_CREATE, KEYWORDS_BULK_CREATE } from "./support/upstreamPaths.ts"
import { waitFor } from "./support/wait.ts"

let p: Pipeline
/** An ad group pause applied over v5, reverted once the connection is on v1. */
let appliedOnV5: string

beforeAll(async () => {
  p = await startPipeline({ seed: 21, env: { SIMULATOR_API_VERSION: "v5" } })
})

afterAll(async () => {
  await p?.close()
})

const created = (answer: Answer) => {
  expect(answer.status, answer.text).toBe(201)
  return proposalOf(answer)
}

const v1Calls = () => p.simulator.control.listCalls({ path: /^\/v1\// }).length
/** Ad group updates: v5 `PUT /api/v5/campaigns/{id}/adgroups/{id}`, v1 `PUT /v1/adgroups/{id}`. */
const adGroupUpdates = (version: "v1" | "v5") =>
  p.simulator.control.listCalls({ method: "PUT", path: version === "v1" ? /^\/v1\/adgroups\/\d+$/ : /^\/api\/v5\/campaigns\/\d+\/adgroups\/\d+$/ }).length

const adGroups = async () => {
  const campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).filter((c) => !c.deleted && c.bidStrategy === "MANUAL_CPT")
  const all = await Promise.all(campaigns.map((c) => p.run(p.upstream.adGroups(p.account.upstreamAccountId, c.campaignId))))
  return all.flat().filter((g) => !g.deleted)
}

const revert = async (actionId: string) => {
  const answer = created(await p.as("person", "POST", `/accounts/${p.account.projectId}/actions/${actionId}/revert`))
  return p.settle(answer.actionId)
}

const startSync = async () => {
  const path = { projectId: p.account.projectId }
  const { syncId } = await p.api("key", (client) => client.warehouse.startSync({ path }))
  return waitFor(
    `sync ${syncId} to end`,
    () => p.api("key", (client) => client.warehouse.getSync({ path: { ...path, syncId } })),
    (sync) => sync.status !== "running"
  )
}

/** A digest of the account's warehouse: entity tables whole, metrics before the account's current day. */
const warehouseDigest = async () => {
  const today = p.simulator.today(p.account.upstreamAccountId)
  const digest = async (table: string, extra = "") =>
    (await p.sql<{ digest: string | null; n: number }>(
      `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS digest, count(*)::int AS n
       FROM (SELECT * FROM ${table} WHERE project_id = $1 ${extra}) t`,
      extra === "" ? [p.account.projectId] : [p.account.projectId, today]
    ))[0]!
  return {
    campaigns: await digest("campaigns"),
    adGroups: await digest("ad_groups"),
    keywords: await digest("keywords"),
    negatives: await digest("negative_keywords"),
    ads: await digest("ads"),
    metrics: await digest("(SELECT project_id, level, entity_key, day, impressions, taps, installs, spend_micros FROM daily_metrics) m", "AND day < $2::date")
  }
}

describe("an org connected over v5", () => {
  it("says so, and warns of Apple's sunset", async () => {
    const connection = await p.api("key", (client) => client.connection.getConnection())
    expect(connection.apiVersion).toBe("v5")
    expect(connection.warning).toContain("2027-01-26")
    expect(v1Calls()).toBe(0)
  })

  it("applies and reverts over v5's paths", async () => {
    const group = (await adGroups()).find((g) => g.status === "ENABLED")!
    const before = adGroupUpdates("v5")
    const action = created(await p.propose("ad-group-status", { adGroupId: group.adGroupId, status: "PAUSED", reason: "v5 pause" }))
    expect(action.mode).toBe("auto_applied")
    expect((await p.settle(action.actionId)).status).toBe("applied")
    expect((await p.run(p.upstream.adGroup(p.account.upstreamAccountId, group.campaignId, group.adGroupId))).status).toBe("PAUSED")
    expect(adGroupUpdates("v5")).toBe(before + 1)
    appliedOnV5 = action.actionId
    expect(v1Calls()).toBe(0)
  })

  it("turns a refused bulk row into a warning naming the keyword", async () => {
    const group = (await adGroups())[1]!
    p.simulator.control.addFault({ kind: "bulkRows", rows: [0], method: "POST", path: KEYWORDS_BULK_CREATE, message: "simulated row failure" })
    const keywords = ["v5 partial a", "v5 partial b"].map((text) => ({ text, matchType: "EXACT", bidMicros: 10_000 }))
    const action = created(await p.propose("add-keywords", { adGroupId: group.adGroupId, keywords, reason: "x" }))
    const applied = await p.settle(action.actionId)
    expect(applied.status).toBe("applied")
    expect(applied.warnings).toEqual(['keyword "v5 partial a" (EXACT): INTERNAL_ERROR: simulated row failure'])
  })

  it("rolls a composite back when a later step fails, naming the step", async () => {
    const group = (await adGroups())[2]!
    p.simulator.control.addFault({ kind: "status", status: 500, method: "POST", path: AD_GROUP_NEGATIVES_BULK_CREATE })
    const action = created(await p.propose("create-ad-group", {
      campaignId: group.campaignId,
      name: "v5 rollback probe",
      defaultBidMicros: 500_000,
      cpaGoalMicros: null,
      searchMatch: false,
      keywords: [{ text: "v5 rollback kw", matchType: "EXACT" }],
      negativeKeywords: [{ text: "v5 rollback neg", matchType: "EXACT" }],
      reason: "x"
    }))
    const approved = await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${action.actionId}/approve`)
    expect(approved.status, approved.text).toBe(200)
    const failed = await p.settle(action.actionId)
    expect(failed.status).toBe("failed")
    expect(failed.failure).toMatchObject({ step: 3, message: expect.stringMatching(/rolled back/) })
    const names = (await p.run(p.upstream.adGroups(p.account.upstreamAccountId, group.campaignId))).filter((g) => !g.deleted).map((g) => g.name)
    expect(names).not.toContain("v5 rollback probe")
  })

  it("harvests search terms with one bulk create per ad group, and reverts with one bulk delete per ad group", async () => {
    const [source, first, second] = (await adGroups()).slice(3, 6)
    if (source === undefined || first === undefined || second === undefined) throw new Error("the demo account has too few ad groups")
    const since = p.simulator.control.listCalls().at(-1)?.seq ?? 0
    const writes = () =>
      p.simulator.control.listCalls({ since }).filter((call) => call.path.startsWith("/api/v5/") && call.method !== "GET" && !call.path.endsWith("/find"))
        .map((call) => `${call.method} ${call.path.replace(/\/\d+(?=\/|$)/g, "/:id")}`)
    const terms = [["v5 harvest a", first], ["v5 harvest b", first], ["v5 harvest c", second]] as const
    const action = created(await p.propose("harvest-search-terms", {
      terms: terms.map(([text, target]) => ({ text, sourceAdGroupId: source.adGroupId, targetAdGroupId: target.adGroupId })),
      reason: "v5 harvest"
    }))
    const approved = await p.as("approver", "POST", `/accounts/${p.account.projectId}/approvals/${action.actionId}/approve`)
    expect(approved.status, approved.text).toBe(200)
    expect(await p.settle(action.actionId)).toMatchObject({ status: "applied", warnings: [] })
    expect(writes().sort()).toEqual([
      "POST /api/v5/campaigns/:id/adgroups/:id/negativekeywords/bulk",
      "POST /api/v5/campaigns/:id/adgroups/:id/targetingkeywords/bulk",
      "POST /api/v5/campaigns/:id/adgroups/:id/targetingkeywords/bulk"
    ])
    const negatives = (await p.run(p.upstream.negativeKeywords(p.account.upstreamAccountId, source.campaignId)))
      .filter((n) => n.adGroupId === source.adGroupId && n.text.startsWith("v5 harvest")).map((n) => n.text)
    expect(negatives.sort()).toEqual(["v5 harvest a", "v5 harvest b", "v5 harvest c"])
    const undone = await revert(action.actionId)
    expect(undone).toMatchObject({ status: "applied", kind: "unharvest_search_terms", warnings: [] })
    expect(writes().filter((w) => w.includes("/delete/")).sort()).toEqual([
      "POST /api/v5/campaigns/:id/adgroups/:id/negativekeywords/delete/bulk",
      "POST /api/v5/campaigns/:id/adgroups/:id/targetingkeywords/delete/bulk",
      "POST /api/v5/campaigns/:id/adgroups/:id/targetingkeywords/delete/bulk"
    ])
    expect(v1Calls()).toBe(0)
  })

  it("syncs", async () => {
    expect((await startSync()).status).toBe("succeeded")
    expect(v1Calls()).toBe(0)
  })
})

describe("moving the connection from v5 to v1", () => {
  it("keeps every project, ledger row and warehouse row; accounts take their v1 ids; v5's changes revert over v1", async () => {
    const accounts = await p.sql<{ project_id: string; upstream_account_id: string }>(
      "SELECT project_id, upstream_account_id FROM accounts ORDER BY project_id"
    )
    // On Apple an org id is not an ad account id: make the v5 ids differ from the v1 ones the simulator lists (by hand,
    // with the notification the accounts' owner sends: db/Invalidation.ts).
    await p.sql("UPDATE accounts SET upstream_account_id = '5' || upstream_account_id RETURNING pg_notify('acs_invalidate', 'a:' || project_id)")
    const ledger = await p.sql<{ action_id: string; status: string }>("SELECT action_id, status FROM actions ORDER BY action_id")
    const warehouse = await warehouseDigest()

    const moved = await p.as("key", "PUT", "/connection", { provider: "simulator", apiVersion: "v1" })
    expect(moved.status, moved.text).toBe(200)
    expect(moved.body).toMatchObject({ apiVersion: "v1", warning: null, connected: true })

    expect(await p.sql("SELECT project_id, upstream_account_id FROM accounts ORDER BY project_id")).toEqual(accounts)
    expect(await p.sql("SELECT action_id, status FROM actions ORDER BY action_id")).toEqual(ledger)
    expect(await warehouseDigest()).toEqual(warehouse)

    // A v1 sync writes the same warehouse rows the v5 one did.
    const v1Before = v1Calls()
    expect((await startSync()).status).toBe("succeeded")
    expect(v1Calls()).toBeGreaterThan(v1Before)
    expect(await warehouseDigest()).toEqual(warehouse)

    const [v5Before, v1Before2] = [adGroupUpdates("v5"), adGroupUpdates("v1")]
    const compensation = await revert(appliedOnV5)
    expect(compensation.status).toBe("applied")
    expect([adGroupUpdates("v5"), adGroupUpdates("v1")]).toEqual([v5Before, v1Before2 + 1])
  })
})
