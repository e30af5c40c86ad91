/**
 * Audits, the brief, reports and research on a seeded simulator account through the real server.
 *
 * Audit findings and keyword ideas are computed from the warehouse; their cases are crafted with SQL in this
 * file's own database (negatives removed, a budget lowered, keywords and search terms added), because the
 * simulator's seeded set-up cannot be reshaped through the platform's API without going through acs's own
 * proposals. Reports and app/geo search go to the simulator and are compared with what it answers directly.
 */
import type { CreateKeyRequest } from "@acs/domain/ApiKeys"
import type { Audit, Finding } from "@acs/domain/Audits"
import { Brief } from "@acs/domain/Brief"
import type { Report, ReportRequest } from "@acs/domain/Research"
import { type Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ApiClient, withApi } from "./support/apiClient.ts"
import { addKeyword, addSearchTerm, campaignTotals } from "./support/arrange.ts"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
import { type Answer, call, errorCode } from "./support/server.ts"

const CENT = 10_000

let p: Pipeline
let projectId: string
let readKey: string
let writeKey: string
/** An enabled campaign with three enabled ad groups, and another with two. */
let x: { campaignId: string; name: string; adGroups: [string, string, string] }
let y: { campaignId: string; name: string; adGroups: [string, string] }

const withKey = (key: string, method: string, path: string, body?: unknown): Promise<Answer> =>
  call(`${p.server.api}${path}`, { method, key, ...(body === undefined ? {} : { body }) })

const createKey = async (scope: CreateKeyRequest["scope"]): Promise<string> =>
  (await p.api("key", (client) => client.keys.createKey({ payload: { name: `audits ${scope}`, scope } }))).secret

/** The typed client with the read key. */
const reading = <A, E>(use: (client: ApiClient) => Effect.Effect<A, E>): Promise<A> => withApi(p.server.baseUrl, readKey, use)

const audit = (): Promise<Audit> => p.api("person", (client) => client.insights.runAudit({ path: { projectId } }))

const about = (findings: ReadonlyArray<Finding>, id: string) => findings.filter((f) => f.entity?.id === id)

const isoDay = (date: string, days: number) => {
  const d = new Date(`${date}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + days)
  return d.toISOString().slice(0, 10)
}

beforeAll(async () => {
  p = await startPipeline({ seed: 37 })
  projectId = p.account.projectId
  const campaigns = await p.sql<{ campaignId: string; name: string; adGroups: Array<string> }>(
    `SELECT c.campaign_id AS "campaignId", c.name,
       array_agg(g.ad_group_id ORDER BY g.ad_group_id) FILTER (WHERE g.status = 'ENABLED') AS "adGroups"
     FROM campaigns c JOIN ad_groups g ON g.project_id = c.project_id AND g.campaign_id = c.campaign_id
     WHERE c.project_id = $1 AND c.status = 'ENABLED' GROUP BY c.campaign_id, c.name ORDER BY c.campaign_id`,
    [projectId]
  )
  const withSpend: Array<(typeof campaigns)[number]> = []
  for (const c of campaigns) if ((await campaignTotals(p, c.campaignId)).spendMicros > 0) withSpend.push(c)
  const first = withSpend.find((c) => (c.adGroups?.length ?? 0) >= 3)
  const second = withSpend.find((c) => c !== first && (c.adGroups?.length ?? 0) >= 2)
  if (first === undefined || second === undefined) throw new Error("the seeded account lacks enabled campaigns with enough ad groups")
  x = { campaignId: first.campaignId, name: first.name, adGroups: [first.adGroups[0]!, first.adGroups[1]!, first.adGroups[2]!] }
  y = { campaignId: second.campaignId, name: second.name, adGroups: [second.adGroups[0]!, second.adGroups[1]!] }
  ;[readKey, writeKey] = await Promise.all([createKey("read"), createKey("write")])
})

afterAll(async () => {
  await p?.close()
})

describe("audits", () => {
  it("finds nothing stale on a fresh sync, and stale data once the last sync is over a day old", async () => {
    const fresh = await audit()
    expect(fresh.findings.filter((f) => f.entity === null && /stale|never synced/.test(f.title))).toEqual([])
    const [{ lastSyncedAt }] = await p.sql<{ lastSyncedAt: Date }>(
      `SELECT last_synced_at AS "lastSyncedAt" FROM accounts WHERE project_id = $1`,
      [projectId]
    ) as [{ lastSyncedAt: Date }]
    // By hand, with the notification the accounts' owner sends (db/Invalidation.ts).
    await p.sql("UPDATE accounts SET last_synced_at = now() - interval '30 hours' WHERE project_id = $1 RETURNING pg_notify('acs_invalidate', 'a:' || project_id)", [projectId])
    try {
      const stale = await audit()
      expect(stale.findings).toContainEqual(expect.objectContaining({ severity: "medium", title: "The account's data is stale", entity: null }))
    } finally {
      await p.sql("UPDATE accounts SET last_synced_at = $2 WHERE project_id = $1 RETURNING pg_notify('acs_invalidate', 'a:' || project_id)", [projectId, lastSyncedAt])
    }
  })

  it("finds ad groups without negatives, Search Match without negatives, duplicates, budget caps and broad-only ad groups", async () => {
    const [noNegatives, searchMatch, covered] = x.adGroups
    const [broad, mixed] = y.adGroups
    // Negatives: the campaign's and two ad groups' go; the third keeps one of its own (control).
    await p.sql(
      "DELETE FROM negative_keywords WHERE project_id = $1 AND campaign_id = $2 AND (ad_group_id IS NULL OR ad_group_id = ANY($3::text[]))",
      [projectId, x.campaignId, [noNegatives, searchMatch]]
    )
    await p.sql("UPDATE ad_groups SET search_match = (ad_group_id = $2) WHERE project_id = $1 AND ad_group_id = ANY($3::text[])", [
      projectId,
      searchMatch,
      [noNegatives, searchMatch]
    ])
    await p.sql(
      `INSERT INTO negative_keywords (project_id, negative_keyword_id, campaign_id, ad_group_id, text, match_type, status)
       VALUES ($1, 'neg_audit_1', $2, $3, 'auditneg', 'EXACT', 'ACTIVE')`,
      [projectId, x.campaignId, covered]
    )
    // Duplicates: the same text and match type in two ad groups; the same text with another match type (control).
    await addKeyword(p, { keywordId: "kw_audit_1", campaignId: x.campaignId, adGroupId: noNegatives, text: "auditdup term", matchType: "EXACT" })
    await addKeyword(p, { keywordId: "kw_audit_2", campaignId: x.campaignId, adGroupId: covered, text: "Auditdup Term", matchType: "EXACT" })
    await addKeyword(p, { keywordId: "kw_audit_3", campaignId: x.campaignId, adGroupId: noNegatives, text: "auditdup other", matchType: "EXACT" })
    await addKeyword(p, { keywordId: "kw_audit_4", campaignId: x.campaignId, adGroupId: covered, text: "auditdup other", matchType: "BROAD" })
    // Budget: x spends 95% of a lowered budget; y has ten times its spend (control).
    const xDaily = (await campaignTotals(p, x.campaignId)).spendMicros / 30
    await p.sql("UPDATE campaigns SET daily_budget_micros = $3 WHERE project_id = $1 AND campaign_id = $2", [
      projectId,
      x.campaignId,
      Math.floor(xDaily / 0.95 / CENT) * CENT
    ])
    const yDaily = (await campaignTotals(p, y.campaignId)).spendMicros / 30
    await p.sql("UPDATE campaigns SET daily_budget_micros = $3 WHERE project_id = $1 AND campaign_id = $2", [
      projectId,
      y.campaignId,
      Math.ceil((10 * yDaily) / CENT) * CENT + CENT
    ])
    // Broad-only: every keyword of one ad group BROAD; the other gets an EXACT one (control).
    await p.sql("UPDATE keywords SET match_type = 'BROAD', status = 'ACTIVE' WHERE project_id = $1 AND ad_group_id = $2", [projectId, broad])
    await addKeyword(p, { keywordId: "kw_audit_5", campaignId: y.campaignId, adGroupId: mixed, text: "auditexact", matchType: "EXACT" })

    const answer = await audit()
    expect(answer.auditId).toMatch(/^aud_/)
    const findings = answer.findings
    const ranks = findings.map((f) => ({ high: 0, medium: 1, low: 2 })[f.severity as "high" | "medium" | "low"])
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b))

    expect(about(findings, searchMatch)).toEqual([expect.objectContaining({
      severity: "high",
      title: expect.stringMatching(/^Search Match is on in ad group ".+" with no negative keyword$/),
      entity: expect.objectContaining({ type: "adGroup", id: searchMatch })
    })])
    expect(about(findings, noNegatives)).toEqual([expect.objectContaining({
      severity: "low",
      title: expect.stringMatching(/has no negative keyword$/)
    })])
    expect(about(findings, covered)).toEqual([])

    const duplicated = about(findings, x.campaignId).filter((f) => f.title.includes("auditdup"))
    expect(duplicated).toEqual([expect.objectContaining({
      severity: "medium",
      title: `Keyword "auditdup term" (EXACT) is in 2 ad groups of campaign "${x.name}"`,
      entity: { type: "campaign", id: x.campaignId, name: x.name }
    })])
    expect(duplicated[0]!.detail).toContain("kw_audit_1, kw_audit_2")

    expect(about(findings, x.campaignId)).toContainEqual(expect.objectContaining({
      severity: "medium",
      title: `Campaign "${x.name}" is limited by its budget`
    }))
    expect(about(findings, y.campaignId).filter((f) => f.title.includes("budget"))).toEqual([])

    expect(about(findings, broad)).toEqual([expect.objectContaining({ severity: "low", title: expect.stringMatching(/has only BROAD keywords$/) })])
    expect(about(findings, mixed).filter((f) => f.title.includes("BROAD"))).toEqual([])

    const again = await p.as("key", "GET", `/accounts/${projectId}/audits/${answer.auditId}`)
    expect(again.status).toBe(200)
    expect(again.body).toEqual(answer)
    const read = await withKey(readKey, "GET", `/accounts/${projectId}/audits/${answer.auditId}`)
    expect(read.status).toBe(200)
  })

  it("answers 404 for an unknown audit and 403 to a read key running one", async () => {
    const unknown = await p.as("key", "GET", `/accounts/${projectId}/audits/aud_nothing`)
    expect([unknown.status, errorCode(unknown)]).toEqual([404, "not_found"])
    const refused = await withKey(readKey, "POST", `/accounts/${projectId}/audits`)
    expect([refused.status, errorCode(refused)]).toEqual([403, "forbidden_scope"])
    expect(refused.body).toMatchObject({ error: { required_scope: "write", key_scope: "read" } })
    const written = await withKey(writeKey, "POST", `/accounts/${projectId}/audits`)
    expect(written.status).toBe(201)
  })
})

describe("the brief", () => {
  it("starts empty, round-trips a text and refuses keys below admin", async () => {
    const empty = await withKey(readKey, "GET", `/accounts/${projectId}/brief`)
    expect(empty.status).toBe(200)
    expect(empty.body).toEqual({ text: "", updatedAt: null, updatedBy: null })

    const text = "Grow installs in the US; keep CPA under 3 USD.\nNo brand bidding."
    const put = await p.as("person", "PUT", `/accounts/${projectId}/brief`, { text })
    expect(put.status, put.text).toBe(200)
    expect(put.body).toMatchObject({ text, updatedBy: expect.stringMatching(/^person:/) })
    const got = await withKey(readKey, "GET", `/accounts/${projectId}/brief`)
    expect(got.body).toEqual(put.body)
    expect(Date.parse(Schema.decodeUnknownSync(Brief)(got.body).updatedAt ?? "")).toBeGreaterThan(Date.now() - 60_000)

    for (const key of [readKey, writeKey]) {
      const refused = await withKey(key, "PUT", `/accounts/${projectId}/brief`, { text: "mine" })
      expect([refused.status, errorCode(refused)]).toEqual([403, "forbidden_scope"])
      expect(refused.body).toMatchObject({ error: { required_scope: "admin" } })
    }
    const long = await p.as("key", "PUT", `/accounts/${projectId}/brief`, { text: "x".repeat(20_001) })
    expect([long.status, errorCode(long)]).toEqual([400, "invalid_request"])
    expect(long.text).toContain("text")
    const longest = await p.as("key", "PUT", `/accounts/${projectId}/brief`, { text: "y".repeat(20_000) })
    expect(longest.status).toBe(200)
    expect(longest.body).toMatchObject({ updatedBy: expect.stringMatching(/^key:/) })
  })
})

describe("reports", () => {
  let start: string
  let end: string

  beforeAll(async () => {
    end = (await p.sql<{ end: string }>(
      "SELECT ((now() AT TIME ZONE time_zone)::date - 1)::text AS end FROM accounts WHERE project_id = $1",
      [projectId]
    ))[0]!.end
    start = isoDay(end, -6)
  })

  const report = (body: Record<string, unknown>) => p.as("key", "POST", `/accounts/${projectId}/reports`, body)
  const typedReport = (payload: ReportRequest): Promise<Report> =>
    p.api("key", (client) => client.research.runReport({ path: { projectId }, payload }))

  it("pages campaigns the way the simulator does, with grand totals over every row", async () => {
    const direct = await p.run(p.upstream.report(p.account.upstreamAccountId, {
      level: "campaigns",
      startDate: start,
      endDate: end,
      granularity: "DAILY",
      offset: 0,
      limit: 1000
    }))
    expect(direct.totalResults).toBeGreaterThan(2)
    const seen: Array<Report["rows"][number]> = []
    let grand: Report["grandTotals"] | undefined
    for (let offset = 0; offset < direct.totalResults; offset += 2) {
      const page = await typedReport({ level: "campaigns", startDate: start, endDate: end, granularity: "DAILY", offset, limit: 2 })
      expect(page.pagination).toEqual({ offset, limit: 2, totalResults: direct.totalResults })
      expect(page.rows.length).toBe(Math.min(2, direct.totalResults - offset))
      grand ??= page.grandTotals
      expect(page.grandTotals).toEqual(grand)
      seen.push(...page.rows)
    }
    expect(seen.map((r) => r.campaignId)).toEqual(direct.rows.map((r) => r.campaignId))
    seen.forEach((row, i) => expect(row.total).toMatchObject(direct.rows[i]!.total))
    const sum = direct.rows.reduce((a, r) => ({
      impressions: a.impressions + r.total.impressions,
      taps: a.taps + r.total.taps,
      installs: a.installs + r.total.installs,
      spendMicros: a.spendMicros + r.total.spendMicros
    }), { impressions: 0, taps: 0, installs: 0, spendMicros: 0 })
    expect(grand).toMatchObject(sum)
    expect(seen[0]!.periods.length).toBeGreaterThan(0)
  })

  it("reports keywords of one campaign, WEEKLY, with the simulator's total", async () => {
    // A limit above the most a page holds is clamped to it.
    const page = await typedReport({ level: "keywords", campaignId: x.campaignId, startDate: start, endDate: end, granularity: "WEEKLY", limit: 5000 })
    const direct = await p.run(p.upstream.report(p.account.upstreamAccountId, {
      level: "keywords",
      campaignId: x.campaignId,
      startDate: start,
      endDate: end,
      granularity: "WEEKLY",
      offset: 0,
      limit: 1000
    }))
    expect(page.pagination).toEqual({ offset: 0, limit: 1000, totalResults: direct.totalResults })
    expect(page.rows.length).toBe(direct.rows.length)
    expect(page.rows.every((r) => r.keywordId !== null && r.campaignId === x.campaignId)).toBe(true)
  })

  it("refuses bad requests with 400 naming the field", async () => {
    const cases: ReadonlyArray<[Record<string, unknown>, RegExp]> = [
      [{ level: "keywords", startDate: start, endDate: end, granularity: "DAILY" }, /campaignId/],
      [{ level: "campaigns", startDate: "2026-02-30", endDate: end, granularity: "DAILY" }, /startDate/],
      [{ level: "campaigns", startDate: "yesterday", endDate: end, granularity: "DAILY" }, /startDate/],
      [{ level: "campaigns", startDate: end, endDate: start, granularity: "DAILY" }, /startDate/],
      [{ level: "campaigns", startDate: isoDay(end, 5), endDate: isoDay(end, 6), granularity: "DAILY" }, /startDate/],
      [{ level: "campaigns", startDate: isoDay(end, -95), endDate: end, granularity: "DAILY" }, /endDate|startDate/],
      [{ level: "ads", startDate: start, endDate: end, granularity: "DAILY" }, /level/],
      [{ level: "campaigns", startDate: start, endDate: end, granularity: "HOURLY" }, /granularity/],
      [{ level: "campaigns", startDate: start, endDate: end }, /granularity/],
      [{ level: "campaigns", startDate: start, endDate: end, granularity: "DAILY", offset: -1 }, /offset/]
    ]
    for (const [body, field] of cases) {
      const answer = await report(body)
      expect([answer.status, errorCode(answer)], JSON.stringify(body)).toEqual([400, "invalid_request"])
      expect(answer.text, JSON.stringify(body)).toMatch(field)
    }
    const monthly = await report({ level: "campaigns", startDate: isoDay(end, -120), endDate: end, granularity: "MONTHLY" })
    expect(monthly.status, monthly.text).toBe(200)
  })
})

describe("research", () => {
  it("searches apps and places through the org's connection", async () => {
    const appName = x.name.split(" - ")[0]!
    const found = (await reading((client) => client.research.searchApps({ payload: { query: appName.toLowerCase(), limit: 5 } }))).apps
    expect(found.map((a) => a.appName)).toContain(appName)
    expect(found.length).toBeLessThanOrEqual(5)

    const geo = await reading((client) => client.research.searchGeo({ payload: { query: "cupertino", countryCode: "us" } }))
    expect(geo.geo.map((g) => g.displayName)).toEqual([
      "Cupertino, California, United States"
    ])
    const elsewhere = await withKey(readKey, "POST", "/research/geo", { query: "cupertino", countryCode: "DE" })
    expect(elsewhere.body).toEqual({ geo: [] })

    for (const [path, body, field] of [
      ["/research/apps", { query: "" }, /query/],
      ["/research/apps", {}, /query/],
      ["/research/geo", { query: "x", countryCode: "USA" }, /countryCode/]
    ] as const) {
      const refused = await withKey(readKey, "POST", path, body)
      expect([refused.status, errorCode(refused)], JSON.stringify(body)).toEqual([400, "invalid_request"])
      expect(refused.text).toMatch(field)
    }
  })

  it("mines keyword ideas from search terms, ranked by installs then spend, without known keywords or negatives", async () => {
    const [first, second] = x.adGroups
    const place = (adGroupId: string) => ({ campaignId: x.campaignId, adGroupId, keywordId: null })
    await addSearchTerm(p, place(first), "ideaseed golden", { spendMicros: 10_000_000, taps: 20, installs: 5 })
    await addSearchTerm(p, place(second), "Ideaseed Golden", { spendMicros: 4_000_000, taps: 8, installs: 2 })
    await addSearchTerm(p, place(first), "ideaseed silver", { spendMicros: 50_000_000, taps: 60, installs: 1 })
    await addSearchTerm(p, place(first), "ideaseed quiet", { spendMicros: 5_000_000, taps: 9, installs: 0 })
    await addSearchTerm(p, place(first), "ideaseed known", { spendMicros: 5_000_000, taps: 9, installs: 9 })
    await addKeyword(p, { keywordId: "kw_idea_1", campaignId: x.campaignId, adGroupId: second, text: "Ideaseed Known", matchType: "BROAD" })
    await addSearchTerm(p, place(first), "ideaseed blocked", { spendMicros: 5_000_000, taps: 9, installs: 9 })
    await p.sql(
      `INSERT INTO negative_keywords (project_id, negative_keyword_id, campaign_id, ad_group_id, text, match_type, status)
       VALUES ($1, 'neg_idea_1', $2, NULL, 'ideaseed blocked', 'EXACT', 'ACTIVE')`,
      [projectId, x.campaignId]
    )
    await addSearchTerm(p, place(first), "seedless unrelated", { spendMicros: 5_000_000, taps: 9, installs: 9 })

    const body = await reading((client) => client.research.keywordIdeas({ payload: { projectId, seeds: ["IdeaSeed!"] } }))
    expect(body.ideas.map((i) => i.text)).toEqual(["ideaseed golden", "ideaseed silver", "ideaseed quiet"])
    expect(body.ideas[0]).toMatchObject({ installs: 7, adGroups: 2, spendMicros: 14_000_000, cpaMicros: 2_000_000 })
    expect(body).toMatchObject({ total: 3, truncated: false, dataFreshness: { coverage: "30 of 30 requested days" } })

    const one = await withKey(readKey, "POST", "/research/keyword-ideas", { projectId, seeds: ["ideaseed"], limit: 1 })
    expect(one.body).toMatchObject({ total: 3, truncated: true, ideas: [{ text: "ideaseed golden" }] })
  })

  it("refuses malformed keyword-idea requests and accounts out of reach", async () => {
    for (const [body, field] of [
      [{ projectId, seeds: [] }, /seeds/],
      [{ projectId, seeds: ["!"] }, /seeds/],
      [{ seeds: ["x"] }, /projectId/],
      [{ projectId: "current", seeds: ["ideaseed"] }, /current/],
      [{ projectId, seeds: ["ideaseed"], days: 91 }, /days/]
    ] as const) {
      const refused = await withKey(readKey, "POST", "/research/keyword-ideas", body)
      expect([refused.status, errorCode(refused)], JSON.stringify(body)).toEqual([400, "invalid_request"])
      expect(refused.text).toMatch(field)
    }
    const { secret } = await p.api("key", (client) =>
      client.keys.createAccountKey({ path: { projectId: p.readOnlyAccount.projectId }, payload: { name: "other account", scope: "read" } })
    )
    const mismatch = await withKey(secret, "POST", "/research/keyword-ideas", { projectId, seeds: ["ideaseed"] })
    expect([mismatch.status, errorCode(mismatch)]).toEqual([403, "account_mismatch"])
    const current = await withKey(secret, "POST", "/research/keyword-ideas", { projectId: "current", seeds: ["ideaseed"] })
    expect(current.status, current.text).toBe(200)
  })
})
