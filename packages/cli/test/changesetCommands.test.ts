/**
 * `acs changeset …` as real processes against a started server syncing a simulator account: a script's key
 * opens a changeset, adds members from a file and from stdin (each answered on its own, a refusal exiting 2),
 * submits it (the plan, impact and decision printed), and an approver's key approves the plan it fetched;
 * another changeset is rejected with a reason.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "../../server/test/support/pipeline.ts"
import { jsonOf, type Run, runAcs } from "./support/runAcs.ts"

let p: Pipeline
let project: string
let dir: string
const keys = { write: "", approver: "" }

const acs = (key: string, args: ReadonlyArray<string>, input?: string): Promise<Run> =>
  runAcs(args, { ACS_URL: p.server.baseUrl, ACS_KEY: key }, input === undefined ? {} : { input })

const rest = async (path: string): Promise<unknown> => {
  const answer = await p.as("key", "GET", path)
  expect(answer.status, answer.text).toBe(200)
  return answer.body
}

interface Changeset {
  readonly changesetId: string
  readonly status: string
  readonly planHash: string | null
  readonly decision: { readonly mode: string; readonly policyReasons: ReadonlyArray<string> } | null
  readonly impact: { readonly dailyBudgetDeltaMicros: number; readonly byKind: Record<string, number> } | null
  readonly plan: { readonly order: ReadonlyArray<string> } | null
  readonly members: { readonly total: number }
}

interface MemberResult {
  readonly index: number
  readonly status: number
  readonly actionId: string | null
  readonly error: { readonly code: string } | null
}

/** Keyword bid raises and campaign budget cuts on real rows of the synced account, each a new value. */
const proposals = async () => {
  const keywords = (await rest(`/accounts/${project}/keywords?limit=50`)) as {
    keywords: Array<{ keywordId: string; bidMicros: number | null }>
  }
  const bids = keywords.keywords.filter((k) => k.bidMicros !== null).slice(0, 2).map((k) => ({
    kind: "keyword_bid_change",
    body: { keywordIds: [k.keywordId], newBidMicros: k.bidMicros! + 100_000, reason: "raise the bid of a converting keyword" }
  }))
  const campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).filter((c) => c.dailyBudgetMicros !== null)
  const cuts = campaigns.slice(0, 2).map((c) => ({
    kind: "budget_change",
    body: { campaignId: c.campaignId, newDailyBudgetMicros: c.dailyBudgetMicros! - 1_000_000, reason: "trim the budget" }
  }))
  expect(bids).toHaveLength(2)
  expect(cuts).toHaveLength(2)
  return { bids, cuts }
}

beforeAll(async () => {
  p = await startPipeline({ seed: 73 })
  project = p.account.projectId
  const created = await p.as("key", "POST", "/keys", { name: "changeset script", scope: "write" })
  expect(created.status, created.text).toBe(201)
  keys.write = (created.body as { secret: string }).secret
  keys.approver = await p.approverKey()
  dir = await mkdtemp(join(tmpdir(), "acs-changeset-"))
})

afterAll(async () => {
  await p?.close()
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
})

describe("acs changeset", () => {
  it("opens, adds from a file and stdin, submits with the plan's impact, and approves the plan it fetched", async () => {
    const opened = jsonOf<Changeset>(await acs(keys.write, [
      "changeset", "open", project, "--title", "Trim and raise", "--reason", "weekly pass", "--on-failure", "continue", "--json"
    ]))
    expect(opened).toMatchObject({ status: "open", planHash: null, members: { total: 0 } })
    const id = opened.changesetId

    const { bids, cuts } = await proposals()
    const file = join(dir, "proposals.json")
    // The third proposal names a campaign the account does not have: refused on its own, the others added.
    const unknownCampaign = { kind: "budget_change", body: { campaignId: "999999999", newDailyBudgetMicros: 5_000_000, reason: "no such campaign" } }
    await writeFile(file, JSON.stringify({ proposals: [...bids, unknownCampaign] }))
    const fromFile = await acs(keys.write, ["changeset", "add", project, id, "--file", file, "--json"])
    expect(fromFile.code).toBe(2)
    expect(fromFile.stderr).toMatch(/^acs: members_refused: 1 of 3 proposals refused/)
    const added = JSON.parse(fromFile.stdout) as { added: number; refused: number; results: Array<MemberResult> }
    expect(added).toMatchObject({ added: 2, refused: 1 })
    expect(added.results.map((r) => [r.index, r.status])).toEqual([[0, 201], [1, 201], [2, expect.any(Number)]])
    expect(added.results[2]!.error?.code).toMatch(/^(not_found|validation_failed)$/)

    // From stdin, as a table: the members and the count.
    const fromStdin = await acs(keys.write, ["changeset", "add", project, id, "--file", "-"], JSON.stringify({ proposals: cuts }))
    expect(fromStdin.code, fromStdin.stderr).toBe(0)
    expect(fromStdin.stdout.split("\n")[0]).toMatch(/^#\s+STATUS\s+ACTION ID\s+KIND\s+SUMMARY OR ERROR/)
    expect(fromStdin.stdout).toMatch(/^0\s+201\s+act_\S+\s+budget_change\s+/m)
    expect(fromStdin.stdout).toContain(`2 added, 0 refused to ${id}`)

    const badDocument = await acs(keys.write, ["changeset", "add", project, id, "--file", "-"], JSON.stringify({ proposals: [{ kind: "frobnicate", body: {} }] }))
    expect(badDocument.code).toBe(2)
    expect(badDocument.stderr).toMatch(/^acs: invalid_request: proposals\.0\.kind: /)

    // The dry run prints what a reviewer approves; nothing is frozen.
    const preview = await acs(keys.write, ["changeset", "submit", project, id, "--preview"])
    expect(preview.code, preview.stderr).toBe(0)
    expect(preview.stdout).toMatch(/^preview: nothing was frozen/)
    expect(preview.stdout).toMatch(/^plan: +4 members in apply order$/m)
    expect(preview.stdout).toMatch(/^daily budget: +-2\.00 USD a day$/m)
    expect(preview.stdout).toMatch(/^ {2}keyword_bid_change: 2$/m)
    expect(preview.stdout).toMatch(/^ {2}budget_change: 2$/m)
    expect(preview.stdout).toMatch(/^policy reasons:\n {2}- /m)
    expect(((await rest(`/accounts/${project}/changesets/${id}`)) as { changeset: Changeset }).changeset.status).toBe("open")

    const submitted = jsonOf<Changeset>(await acs(keys.write, ["changeset", "submit", project, id, "--json"]))
    expect(submitted).toMatchObject({
      status: "queued",
      decision: { mode: "queued" },
      impact: { dailyBudgetDeltaMicros: -2_000_000, byKind: { keyword_bid_change: 2, budget_change: 2 } }
    })
    expect(submitted.plan?.order).toHaveLength(4)
    expect(submitted.decision?.policyReasons.join("\n")).toMatch(/API key/)

    const [shown, listed] = await Promise.all([
      acs(keys.write, ["changeset", "show", project, id]),
      acs(keys.write, ["changeset", "list", project, "--status", "queued", "--json"])
    ])
    expect(shown!.code, shown!.stderr).toBe(0)
    expect(shown!.stdout).toMatch(/^status: +queued$/m)
    expect(shown!.stdout).toContain(`plan hash:`)
    for (const actionId of submitted.plan!.order) expect(shown!.stdout).toMatch(new RegExp(`^${actionId}\\s+\\w+\\s+proposed\\s`, "m"))
    expect(jsonOf(listed!)).toEqual(await rest(`/accounts/${project}/changesets?status=queued`))

    // The script's key may not approve its own work; the approver's approves the plan it fetched.
    const refused = await acs(keys.write, ["changeset", "approve", project, id])
    expect(refused.code).toBe(3)
    expect(refused.stderr).toMatch(/^acs: forbidden_scope: .*\n {2}required_grant: approve/)
    const approved = jsonOf<Changeset>(await acs(keys.approver, ["changeset", "approve", project, id, "--json"]))
    expect(approved.changesetId).toBe(id)
    expect(["approved", "applying", "applied"]).toContain(approved.status)
    const again = await acs(keys.approver, ["changeset", "approve", project, id, "--plan-hash", "not-the-plan"])
    expect(again.code).toBe(2)
    expect(again.stderr).toMatch(/^acs: conflict: /)
  })

  it("rejects with a reason, and will not approve a changeset with no plan", async () => {
    const opened = jsonOf<Changeset>(await acs(keys.write, ["changeset", "open", project, "--title", "Not this week", "--json"]))
    const unplanned = await acs(keys.approver, ["changeset", "approve", project, opened.changesetId])
    expect(unplanned.code).toBe(2)
    expect(unplanned.stderr).toMatch(new RegExp(`^acs: conflict: ${opened.changesetId} is open, with no plan to approve: submit it first`))

    const rejected = await acs(keys.approver, ["changeset", "reject", project, opened.changesetId, "--reason", "not this week"])
    expect(rejected.code, rejected.stderr).toBe(0)
    expect(rejected.stdout).toMatch(/^status: +rejected$/m)
    expect(rejected.stdout).toMatch(/^decision reason: +not this week$/m)
    const table = await acs(keys.write, ["changeset", "list", project, "--status", "rejected"])
    expect(table.stdout.split("\n")[0]).toMatch(/^CREATED AT\s+CHANGESET ID\s+STATUS\s+MEMBERS\s+OPENED BY\s+TITLE/)
    expect(table.stdout).toMatch(new RegExp(`\\s${opened.changesetId}\\s+rejected\\s+0\\s+key changeset script\\s+Not this week$`, "m"))
  })
})
