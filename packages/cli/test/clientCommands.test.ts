/**
 * The client commands (`acs accounts`, `acs propose`, …) run as real processes against a started server
 * syncing a simulator account, over `/rpc` with API keys: `--json` answers parsed back and compared with
 * REST, the exit codes scripts branch on, and the SPEC's safe automation sequence end to end.
 *
 * `acs changeset …`, in the same world's second account (its campaigns and keywords are its own): a script's key
 * opens a changeset, adds members from a file and from stdin (each answered on its own, a refusal exiting 2),
 * submits it (the plan, impact and decision printed), and an approver's key approves the plan it fetched;
 * another changeset is rejected with a reason.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { CreatedKey } from "@acs/domain/ApiKeys"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "../../server/test/support/pipeline.ts"
import { BOOTSTRAP_KEY } from "../../server/test/support/server.ts"
import { waitFor } from "../../server/test/support/wait.ts"
import { inBatches, jsonOf, type Run, runAcs } from "./support/runAcs.ts"

let p: Pipeline
let project: string
/** The second account, where the changeset commands work. */
let changesetProject: string
let dir: string
/**
 * Org-wide keys: read; write without the approve grant; write with it; the changeset script's (write). The
 * bootstrap key is admin.
 */
const keys = { read: "", write: "", approver: "", readOne: "", changesetScript: "" }

const createKey = async (body: Record<string, unknown>): Promise<string> => {
  const created = await p.as("key", "POST", "/keys", body)
  if (created.status !== 201) throw new Error(`POST /keys: ${created.status} ${created.text}`)
  return Schema.decodeUnknownSync(CreatedKey)(created.body).secret
}

const envOf = (key: string): Record<string, string> => ({ ACS_URL: p.server.baseUrl, ACS_KEY: key })

const acs = (key: string, ...args: ReadonlyArray<string>): Promise<Run> => runAcs(args, envOf(key))

const rest = async (path: string): Promise<unknown> => {
  const answer = await p.as("key", "GET", path)
  expect(answer.status, answer.text).toBe(200)
  return answer.body
}

/** `ageHours` is computed at each request (to 0.1 h): two calls may straddle a step. */
const steady = (document: unknown): unknown =>
  typeof document === "object" && document !== null && "dataFreshness" in document
    ? { ...document, dataFreshness: { ...(document.dataFreshness as object), ageHours: "any" } }
    : document

interface Proposal {
  readonly actionId: string
  readonly kind: string
  readonly mode: string
  readonly status: string
  readonly riskTier: string
  readonly policyReasons: ReadonlyArray<string>
  readonly summary: string
  readonly replayed?: boolean
}

interface ActionRecord extends Proposal {
  readonly decisionReason: string | null
  readonly warnings: ReadonlyArray<string>
}

const budgetCut = async (reason: string) => {
  const campaign = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).find((c) => c.dailyBudgetMicros !== null)!
  const newDailyBudgetMicros = Math.round((campaign.dailyBudgetMicros! * 0.9) / 10_000) * 10_000
  return { campaignId: campaign.campaignId, newDailyBudgetMicros, reason }
}

/** `acs` with its arguments as one list, and `input` on its stdin. */
const acsWith = (key: string, args: ReadonlyArray<string>, input?: string): Promise<Run> =>
  runAcs(args, envOf(key), input === undefined ? {} : { input })

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

/** Keyword bid raises and campaign budget cuts on real rows of the synced second account, each a new value. */
const proposals = async () => {
  const keywords = (await rest(`/accounts/${changesetProject}/keywords?limit=50`)) as {
    keywords: Array<{ keywordId: string; bidMicros: number | null }>
  }
  const bids = keywords.keywords.filter((k) => k.bidMicros !== null).slice(0, 2).map((k) => ({
    kind: "keyword_bid_change",
    body: { keywordIds: [k.keywordId], newBidMicros: k.bidMicros! + 100_000, reason: "raise the bid of a converting keyword" }
  }))
  const campaigns = (await p.run(p.upstream.campaigns(p.secondAccount.upstreamAccountId))).filter((c) => c.dailyBudgetMicros !== null)
  const cuts = campaigns.slice(0, 2).map((c) => ({
    kind: "budget_change",
    body: { campaignId: c.campaignId, newDailyBudgetMicros: c.dailyBudgetMicros! - 1_000_000, reason: "trim the budget" }
  }))
  expect(bids).toHaveLength(2)
  expect(cuts).toHaveLength(2)
  return { bids, cuts }
}

beforeAll(async () => {
  p = await startPipeline({ seed: 71 })
  project = p.account.projectId
  keys.read = await createKey({ name: "cli reader", scope: "read" })
  keys.write = await createKey({ name: "cli script", scope: "write" })
  // Four eyes: the approver is no key the proposing script's creator made.
  keys.approver = await p.approverKey()
  keys.readOne = await createKey({ name: "cli one account", scope: "read", projectIds: [project] })
  changesetProject = p.secondAccount.projectId
  keys.changesetScript = await createKey({ name: "changeset script", scope: "write" })
  dir = await mkdtemp(join(tmpdir(), "acs-changeset-"))
})

afterAll(async () => {
  await p?.close()
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
})

describe("acs client commands", () => {
  it("reads print the operation's answer as one JSON document, the same as REST", async () => {
    const campaigns = (await rest(`/accounts/${project}/campaigns?days=7&limit=3`)) as { campaigns: Array<{ campaignId: string }> }
    const campaignId = campaigns.campaigns[0]!.campaignId
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [["accounts"], "/accounts"],
      [["campaigns", project, "--days", "7", "--limit", "3"], `/accounts/${project}/campaigns?days=7&limit=3`],
      [["keywords", project, "--limit", "5", "--campaign", campaignId], `/accounts/${project}/keywords?limit=5&campaignId=${campaignId}`],
      [["search-terms", project, "--limit", "4", "--campaign", campaignId], `/accounts/${project}/search-terms?limit=4&campaignId=${campaignId}`],
      [["policy", project], `/accounts/${project}/policy`],
      [["plan", project, "--limit", "3"], `/accounts/${project}/plan?limit=3`],
      [["approvals", project], `/accounts/${project}/approvals`]
    ]
    const runs = await inBatches(cases, 3, ([args]) => acs(keys.read, ...args, "--json"))
    for (const [i, run] of runs.entries()) {
      const [args, path] = cases[i]!
      expect({ args, answer: steady(jsonOf(run)) }).toEqual({ args, answer: steady(await rest(path)) })
    }
    expect(campaigns.campaigns.map((c) => c.campaignId)).toEqual(
      jsonOf<typeof campaigns>(runs[1]!).campaigns.map((c) => c.campaignId)
    )
  })

  it("prints human tables by default, and takes --url and --key over the environment", async () => {
    const [accounts, campaigns, policy, byOptions, terms] = await inBatches([
      () => acs(keys.read, "accounts"),
      () => acs(keys.read, "campaigns", project, "--limit", "2"),
      () => acs(keys.read, "policy", project),
      () => runAcs(["accounts", "--url", p.server.baseUrl, "--key", keys.read, "--json"], { ACS_URL: "http://127.0.0.1:9", ACS_KEY: "acs_wrong" }),
      () => acs(keys.read, "search-terms", project, "--limit", "1000")
    ], 2, (run) => run())
    expect(accounts!.code, accounts!.stderr).toBe(0)
    expect(accounts!.stdout.split("\n")[0]).toMatch(/^PROJECT ID\s+NAME\s+STATUS/)
    expect(accounts!.stdout).toContain(project)
    expect(campaigns!.code).toBe(0)
    expect(campaigns!.stdout.split("\n")[0]).toMatch(/^CAMPAIGN ID\s+NAME\s+STATUS\s+DAILY BUDGET/)
    expect(campaigns!.stdout).toMatch(/^2 of \d+ \(truncated/m)
    expect(campaigns!.stdout).toMatch(/^data: last sync .*requested days/m)
    expect(policy!.stdout).toMatch(/^kill switch: +platformAutoApply/m)
    expect(policy!.stdout).toMatch(/^auto-applies: +\d+ of 20 used in 24 h/m)
    expect(jsonOf<{ accounts: Array<{ projectId: string }> }>(byOptions!).accounts.map((a) => a.projectId)).toContain(project)
    // Each term with its source: a keyword's text and match type, Search Match, or the ad group's low-volume bucket.
    expect(terms!.code, terms!.stderr).toBe(0)
    expect(terms!.stdout.split("\n")[0]).toMatch(/^TERM\s+SOURCE\s+AD GROUP ID\s+SPEND\s+TAPS\s+INSTALLS\s+CPA/)
    expect(terms!.stdout).toMatch(/\((EXACT|BROAD)\)/)
    expect(terms!.stdout).toContain("Search Match")
    expect(terms!.stdout).toMatch(/^\(low volume\)\s+\(low volume: all sources\)/m)
  })

  it("exits 3 on a refusal, 2 on bad input or a missing thing, 1 when acs does not answer; stderr names the code", async () => {
    const body = JSON.stringify(await budgetCut("refused"))
    const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, number, RegExp]> = [
      [keys.read, ["propose", "budget_change", project, "--body", body], 3, /^acs: forbidden_scope: .*\n {2}required_scope: write\n {2}key_scope: read/],
      [keys.write, ["approve", project, "act_nope"], 3, /^acs: forbidden_scope: .*\n {2}required_grant: approve/],
      ["acs_not_a_key", ["accounts"], 3, /^acs: unauthorized: /],
      [keys.readOne, ["campaigns", p.readOnlyAccount.projectId], 3, /^acs: account_mismatch: /],
      [keys.approver, ["approve", project, "act_nope"], 2, /^acs: not_found: /],
      [keys.approver, ["revert", project, "act_nope"], 2, /^acs: not_found: /],
      [keys.write, ["propose", "budget-change", project, "--body", "{not json"], 2, /^acs: invalid_request: .*--body is not JSON/],
      [keys.write, ["propose", "budget_raise", project, "--body", body], 2, /^acs: invalid_request: .*no proposal kind "budget_raise"/],
      [keys.write, ["propose", "budget_change", project, "--body", JSON.stringify({ campaignId: "1", reason: "x" })], 2,
        /^acs: invalid_request: .*newDailyBudgetMicros/],
      [keys.write, ["propose", "budget_change", project, "--body", JSON.stringify({ campaignId: "999999", newDailyBudgetMicros: 1_000_000, reason: "x" })], 2,
        /^acs: (not_found|validation_failed): /],
      [keys.read, ["campaigns", project, "--days", "200"], 2, /^acs: invalid_request: .*days/],
      [keys.read, ["ledger", project, "--kind", "frobnicate"], 2, /^acs: invalid_request: .*kind/],
      ["", ["accounts"], 2, /no API key: set ACS_KEY or pass --key/]
    ]
    const runs = await inBatches(cases, 3, ([key, args]) => acs(key, ...args, "--json"))
    runs.forEach((run, i) => {
      const [, args, code, stderr] = cases[i]!
      expect({ args, code: run.code, stderr: run.stderr, stdout: run.stdout }).toEqual({
        args,
        code,
        stderr: expect.stringMatching(stderr),
        stdout: ""
      })
    })

    const down = await runAcs(["accounts", "--json"], { ACS_URL: "http://127.0.0.1:9", ACS_KEY: keys.read })
    expect(down.code).toBe(1)
    expect(down.stderr).toMatch(/^acs: unreachable: no answer from acs at http:\/\/127\.0\.0\.1:9/)
  })

  it("runs the safe automation sequence: policy, propose with an idempotency key, approvals, approve, ledger", async () => {
    const policy = jsonOf<{ killSwitch: { enabled: boolean }; autoApplies: { remaining: number } }>(
      await acs(keys.write, "policy", project, "--json")
    )
    expect(policy.killSwitch.enabled).toBe(true)
    expect(policy.autoApplies.remaining).toBeGreaterThan(0)

    const body = JSON.stringify(await budgetCut("CPA above target for 7 days"))
    const propose = () => acs(keys.write, "propose", "budget_change", project, "--body", body, "--idempotency-key", "cli-trim-1", "--json")
    const proposed = jsonOf<Proposal>(await propose())
    expect(proposed).toMatchObject({ kind: "budget_change", mode: "queued", status: "proposed" })
    expect(proposed.policyReasons.join("\n")).toMatch(/API key/)
    expect(proposed.replayed).toBeUndefined()
    const replay = jsonOf<Proposal>(await propose())
    expect(replay).toMatchObject({ actionId: proposed.actionId, replayed: true })

    const waiting = jsonOf<{ approvals: Array<{ actionId: string }> }>(await acs(keys.write, "approvals", project, "--json"))
    expect(waiting.approvals.map((a) => a.actionId)).toContain(proposed.actionId)

    const approved = jsonOf<ActionRecord>(await acs(keys.approver, "approve", project, proposed.actionId, "--json"))
    expect(approved).toMatchObject({ actionId: proposed.actionId, status: "approved" })
    expect((await p.settle(proposed.actionId, ["applied", "failed"])).status).toBe("applied")

    const ledger = jsonOf<{ actions: Array<ActionRecord>; nextBefore: string | null }>(
      await acs(keys.write, "ledger", project, "--kind", "budget-change", "--limit", "5", "--json")
    )
    expect(ledger.actions.find((a) => a.actionId === proposed.actionId)).toMatchObject({ status: "applied", warnings: [] })
    expect(ledger).toEqual(await rest(`/accounts/${project}/actions?kind=budget_change&limit=5`))

    // A second decision on the same action is a conflict; the undo applies at once.
    const [again, reverted] = await Promise.all([
      acs(keys.approver, "approve", project, proposed.actionId),
      acs(keys.approver, "revert", project, proposed.actionId, "--json")
    ])
    expect(again!.code).toBe(2)
    expect(again!.stderr).toMatch(/^acs: conflict: /)
    const revert = jsonOf<Proposal>(reverted!)
    expect(revert).toMatchObject({ kind: "budget_change", mode: "auto_applied" })
    expect((await p.settle(revert.actionId, ["applied", "failed"])).status).toBe("applied")
  })

  it("tells each caller what it may do with each pending change, and why, in words", async () => {
    const proposed = jsonOf<Proposal>(await acs(keys.write, "propose", "budget-change", project, "--body", JSON.stringify(await budgetCut("who may decide")), "--json"))
    const rowOf = (stdout: string) => stdout.split("\n").find((line) => line.startsWith(proposed.actionId) && !line.includes(": "))
    // The bootstrap key made the script's key: both answer to it, so it may withdraw the change, not approve it.
    const byCreator = await acs(BOOTSTRAP_KEY, "approvals", project, "--limit", "1000")
    expect(byCreator.code, byCreator.stderr).toBe(0)
    expect(rowOf(byCreator.stdout)).toMatch(/ reject /)
    expect(byCreator.stdout).toMatch(new RegExp(`^${proposed.actionId}: this key and the key that proposed the change \\("cli script"\\) both answer to the org key`, "m"))
    const byApprover = await acs(keys.approver, "approvals", project, "--limit", "1000")
    expect(rowOf(byApprover.stdout)).toMatch(/ approve /)
    expect(byApprover.stdout).not.toContain(`${proposed.actionId}: `)
    const byScript = await acs(keys.write, "approvals", project, "--limit", "1000")
    expect(rowOf(byScript.stdout)).toMatch(/ read /)
    expect(byScript.stdout).toMatch(new RegExp(`^${proposed.actionId}: deciding a change needs the canApprove grant`, "m"))
    expect((await acs(keys.approver, "reject", project, proposed.actionId)).code).toBe(0)
  })

  it("lists every reached account's queue without an account, as the console does", async () => {
    const proposed = jsonOf<Proposal>(await acs(keys.write, "propose", "budget-change", project, "--body", JSON.stringify(await budgetCut("across accounts")), "--json"))
    const accounts = (await rest("/accounts") as { accounts: Array<{ projectId: string; name: string }> }).accounts
    expect(accounts.length).toBeGreaterThan(1)
    const queues = await Promise.all(accounts.map(async (a) => (await rest(`/accounts/${a.projectId}/approvals?limit=1000`)) as { approvals: Array<{ actionId: string; created_at: string }> }))
    const waiting = queues.flatMap((q) => q.approvals).sort((a, b) => a.created_at.localeCompare(b.created_at) || a.actionId.localeCompare(b.actionId))

    const all = jsonOf<{ approvals: Array<{ actionId: string; projectId: string }>; total: number; accounts: Array<{ projectId: string; total: number }> }>(
      await acs(keys.read, "approvals", "--limit", "1000", "--json")
    )
    expect(all.approvals.map((a) => a.actionId)).toEqual(waiting.map((a) => a.actionId))
    expect(all.approvals.map((a) => a.actionId)).toContain(proposed.actionId)
    expect(all.accounts.map((a) => a.projectId).sort()).toEqual(accounts.map((a) => a.projectId).sort())
    expect(all.total).toBe(queues.reduce((sum, q) => sum + q.approvals.length, 0))

    const human = await acs(keys.read, "approvals", "--limit", "1000")
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout.split("\n")[0]).toMatch(/^ACCOUNT\s+ACTION ID\s+KIND/)
    const name = accounts.find((a) => a.projectId === project)!.name
    expect(human.stdout.split("\n").find((line) => line.includes(proposed.actionId) && !line.includes(": "))).toMatch(new RegExp(`^${name}\\s`))
    expect(human.stdout).toMatch(new RegExp(`^${waiting.length} of ${all.total} waiting in ${accounts.length} accounts$`, "m"))

    // A key that reaches one account lists that account's queue only, whether bound to it or given it as a subset.
    const bound = await p.as("key", "POST", `/accounts/${project}/keys`, { name: "cli bound approvals", scope: "read" })
    expect(bound.status, bound.text).toBe(201)
    const own = (await rest(`/accounts/${project}/approvals?limit=1000`)) as { approvals: Array<{ actionId: string }> }
    for (const key of [Schema.decodeUnknownSync(CreatedKey)(bound.body).secret, keys.readOne]) {
      const one = jsonOf<{ approvals: Array<{ actionId: string; projectId: string }>; accounts: Array<{ projectId: string }> }>(
        await acs(key, "approvals", "--limit", "1000", "--json")
      )
      expect(one.accounts.map((a) => a.projectId)).toEqual([project])
      expect(one.approvals.map((a) => a.actionId)).toEqual(own.approvals.map((a) => a.actionId))
    }
    expect((await acs(keys.approver, "reject", project, proposed.actionId)).code).toBe(0)
  })

  it("rejects with a reason, and pages the ledger with the printed nextBefore cursor", async () => {
    const proposed = jsonOf<Proposal>(await acs(keys.write, "propose", "budget-change", project, "--body", JSON.stringify(await budgetCut("to reject")), "--json"))
    const table = await acs(keys.approver, "reject", project, proposed.actionId, "--reason", "not this week")
    expect(table.code, table.stderr).toBe(0)
    expect(table.stdout).toMatch(/^status: +rejected$/m)
    expect(table.stdout).toMatch(/^decision reason: +not this week$/m)
    expect((await p.action(proposed.actionId)).status).toBe("rejected")

    const [first, human] = await Promise.all([
      acs(keys.read, "ledger", project, "--limit", "1", "--json"),
      acs(keys.read, "ledger", project, "--limit", "1")
    ])
    const page = jsonOf<{ actions: Array<{ actionId: string }>; nextBefore: string | null }>(first!)
    expect(page.actions.map((a) => a.actionId)).toEqual([proposed.actionId])
    expect(page.nextBefore).not.toBeNull()
    expect(human!.stdout.split("\n")[0]).toMatch(/^CREATED AT\s+ACTION ID\s+KIND\s+STATUS/)
    expect(human!.stdout).toContain(`next page: --before ${page.nextBefore}`)
    const next = jsonOf<{ actions: Array<{ actionId: string }> }>(
      await acs(keys.read, "ledger", project, "--limit", "1", "--before", page.nextBefore!, "--json")
    )
    expect(next).toEqual(await rest(`/accounts/${project}/actions?limit=1&before=${encodeURIComponent(page.nextBefore!)}`))
    expect(next.actions[0]?.actionId).not.toBe(proposed.actionId)
  })

  it("syncs: follows the sync to its end with progress lines on stderr, or returns at once with --no-wait", async () => {
    const run = await acs(BOOTSTRAP_KEY, "sync", project, "--json")
    const finished = jsonOf<{ syncId: string; status: string; finishedAt: string | null }>(run)
    expect(finished).toMatchObject({ status: "succeeded", finishedAt: expect.any(String) })
    expect(finished).toEqual(await rest(`/accounts/${project}/syncs/${finished.syncId}`))
    // Not a terminal: plain lines, no carriage-return redraws.
    expect(run.stderr).toMatch(new RegExp(`^sync ${finished.syncId}: `, "m"))
    expect(run.stderr).not.toContain("\r")

    const started = jsonOf<{ syncId: string; status: string }>(await acs(BOOTSTRAP_KEY, "sync", project, "--no-wait", "--json"))
    expect(started.status).toBe("running")
    const ended = await waitFor(
      `sync ${started.syncId} to end`,
      async () => (await rest(`/accounts/${project}/syncs/${started.syncId}`)) as { status: string },
      (sync) => sync.status !== "running",
      { intervalMs: 250 }
    )
    expect(ended.status).toBe("succeeded")

    const refused = await acs(keys.write, "sync", project)
    expect(refused.code).toBe(3)
    expect(refused.stderr).toMatch(/^acs: forbidden_scope: .*\n {2}required_scope: admin/)
  })

  it("sync-queue: the org's queue as REST answers it, and as a table", async () => {
    const queue = jsonOf<{ accounts: Array<{ projectId: string; state: string }> }>(await acs(keys.read, "sync-queue", "--json"))
    expect(queue).toEqual(await rest("/sync-queue"))
    expect(queue.accounts.map((a) => a.projectId)).toContain(project)
    const human = await acs(keys.read, "sync-queue")
    expect(human.stdout.split("\n")[1]).toMatch(/^PROJECT ID\s+NAME\s+STATE\s+WHY\s+UNTIL\s+DUE AT/)
  })
})

describe("acs harvest", () => {
  it("previews the delivery the negatives remove without recording, then proposes the harvest for review", async () => {
    const campaign = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).find((c) => c.bidStrategy === "MANUAL_CPT")!
    const [source, target] = await p.run(p.upstream.adGroups(p.account.upstreamAccountId, campaign.campaignId))
    if (source === undefined || target === undefined) throw new Error("the campaign has fewer than two ad groups")
    const args = ["harvest", project, "--term", `${source.adGroupId}:${target.adGroupId}:acs cli: harvest`, "--reason", "a converting term"]
    const before = await p.sql<{ n: number }>("SELECT count(*)::int AS n FROM actions WHERE kind = 'harvest_search_terms'")
    const previewed = await acs(keys.write, ...args, "--preview", "--json")
    expect(previewed.code, previewed.stderr).toBe(0)
    const preview = jsonOf(previewed) as { kind: string; mode: string; payload: { terms: Array<{ text: string }>; priorDelivery: { adGroups: Array<{ adGroupId: string }> } } }
    expect(preview).toMatchObject({ kind: "harvest_search_terms", mode: "queued" })
    expect(preview.payload.terms.map((t) => t.text)).toEqual(["acs cli: harvest"])
    expect(preview.payload.priorDelivery.adGroups.map((g) => g.adGroupId)).toEqual([source.adGroupId])
    expect(await p.sql("SELECT count(*)::int AS n FROM actions WHERE kind = 'harvest_search_terms'")).toEqual(before)
    const human = await acs(keys.write, ...args, "--preview")
    expect(human.stdout).toMatch(/over the last 30 days the negatives remove:\nSOURCE AD GROUP +NAME +SPEND +TAPS +INSTALLS\n/)
    expect(human.stdout).toContain(source.adGroupId)
    const proposed = await acs(keys.write, ...args, "--json")
    expect(proposed.code, proposed.stderr).toBe(0)
    expect(jsonOf(proposed)).toMatchObject({ kind: "harvest_search_terms", mode: "queued", status: "proposed" })
    const bad = await acs(keys.write, "harvest", project, "--term", "only-one-part", "--reason", "x")
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/^acs: invalid_request: --term: "only-one-part" is not SOURCE_AD_GROUP_ID:TARGET_AD_GROUP_ID:TEXT/)])
  })
})

describe("acs changeset", () => {
  it("opens, adds from a file and stdin, submits with the plan's impact, and approves the plan it fetched", async () => {
    const opened = jsonOf<Changeset>(await acsWith(keys.changesetScript, [
      "changeset", "open", changesetProject, "--title", "Trim and raise", "--reason", "weekly pass", "--on-failure", "continue", "--json"
    ]))
    expect(opened).toMatchObject({ status: "open", planHash: null, members: { total: 0 } })
    const id = opened.changesetId

    const { bids, cuts } = await proposals()
    const file = join(dir, "proposals.json")
    // The third proposal names a campaign the account does not have: refused on its own, the others added.
    const unknownCampaign = { kind: "budget_change", body: { campaignId: "999999999", newDailyBudgetMicros: 5_000_000, reason: "no such campaign" } }
    await writeFile(file, JSON.stringify({ proposals: [...bids, unknownCampaign] }))
    const fromFile = await acsWith(keys.changesetScript, ["changeset", "add", changesetProject, id, "--file", file, "--json"])
    expect(fromFile.code).toBe(2)
    expect(fromFile.stderr).toMatch(/^acs: members_refused: 1 of 3 proposals refused/)
    const added = JSON.parse(fromFile.stdout) as { added: number; refused: number; results: Array<MemberResult> }
    expect(added).toMatchObject({ added: 2, refused: 1 })
    expect(added.results.map((r) => [r.index, r.status])).toEqual([[0, 201], [1, 201], [2, expect.any(Number)]])
    expect(added.results[2]!.error?.code).toMatch(/^(not_found|validation_failed)$/)

    // From stdin, as a table: the members and the count.
    const fromStdin = await acsWith(keys.changesetScript, ["changeset", "add", changesetProject, id, "--file", "-"], JSON.stringify({ proposals: cuts }))
    expect(fromStdin.code, fromStdin.stderr).toBe(0)
    expect(fromStdin.stdout.split("\n")[0]).toMatch(/^#\s+STATUS\s+ACTION ID\s+KIND\s+SUMMARY OR ERROR/)
    expect(fromStdin.stdout).toMatch(/^0\s+201\s+act_\S+\s+budget_change\s+/m)
    expect(fromStdin.stdout).toContain(`2 added, 0 refused to ${id}`)

    const badDocument = await acsWith(keys.changesetScript, ["changeset", "add", changesetProject, id, "--file", "-"], JSON.stringify({ proposals: [{ kind: "frobnicate", body: {} }] }))
    expect(badDocument.code).toBe(2)
    expect(badDocument.stderr).toMatch(/^acs: invalid_request: proposals\.0\.kind: /)

    // The dry run prints what a reviewer approves; nothing is frozen.
    const preview = await acsWith(keys.changesetScript, ["changeset", "submit", changesetProject, id, "--preview"])
    expect(preview.code, preview.stderr).toBe(0)
    expect(preview.stdout).toMatch(/^preview: nothing was frozen/)
    expect(preview.stdout).toMatch(/^plan: +4 members in apply order$/m)
    expect(preview.stdout).toMatch(/^daily budget: +-2\.00 EUR a day$/m)
    expect(preview.stdout).toMatch(/^ {2}keyword_bid_change: 2$/m)
    expect(preview.stdout).toMatch(/^ {2}budget_change: 2$/m)
    expect(preview.stdout).toMatch(/^policy reasons:\n {2}- /m)
    expect(((await rest(`/accounts/${changesetProject}/changesets/${id}`)) as { changeset: Changeset }).changeset.status).toBe("open")

    const submitted = jsonOf<Changeset>(await acsWith(keys.changesetScript, ["changeset", "submit", changesetProject, id, "--json"]))
    expect(submitted).toMatchObject({
      status: "queued",
      decision: { mode: "queued" },
      impact: { dailyBudgetDeltaMicros: -2_000_000, byKind: { keyword_bid_change: 2, budget_change: 2 } }
    })
    expect(submitted.plan?.order).toHaveLength(4)
    expect(submitted.decision?.policyReasons.join("\n")).toMatch(/API key/)

    const [shown, listed] = await Promise.all([
      acsWith(keys.changesetScript, ["changeset", "show", changesetProject, id]),
      acsWith(keys.changesetScript, ["changeset", "list", changesetProject, "--status", "queued", "--json"])
    ])
    expect(shown!.code, shown!.stderr).toBe(0)
    expect(shown!.stdout).toMatch(/^status: +queued$/m)
    expect(shown!.stdout).toContain(`plan hash:`)
    for (const actionId of submitted.plan!.order) expect(shown!.stdout).toMatch(new RegExp(`^${actionId}\\s+\\w+\\s+proposed\\s`, "m"))
    expect(jsonOf(listed!)).toEqual(await rest(`/accounts/${changesetProject}/changesets?status=queued`))

    // The script's key may not approve its own work; the approver's approves the plan it fetched.
    const refused = await acsWith(keys.changesetScript, ["changeset", "approve", changesetProject, id])
    expect(refused.code).toBe(3)
    expect(refused.stderr).toMatch(/^acs: forbidden_scope: .*\n {2}required_grant: approve/)
    const approved = jsonOf<Changeset>(await acsWith(keys.approver, ["changeset", "approve", changesetProject, id, "--json"]))
    expect(approved.changesetId).toBe(id)
    expect(["approved", "applying", "applied"]).toContain(approved.status)
    const again = await acsWith(keys.approver, ["changeset", "approve", changesetProject, id, "--plan-hash", "not-the-plan"])
    expect(again.code).toBe(2)
    expect(again.stderr).toMatch(/^acs: conflict: /)
  })

  it("rejects with a reason, and will not approve a changeset with no plan", async () => {
    const opened = jsonOf<Changeset>(await acsWith(keys.changesetScript, ["changeset", "open", changesetProject, "--title", "Not this week", "--json"]))
    const unplanned = await acsWith(keys.approver, ["changeset", "approve", changesetProject, opened.changesetId])
    expect(unplanned.code).toBe(2)
    expect(unplanned.stderr).toMatch(new RegExp(`^acs: conflict: ${opened.changesetId} is open, with no plan to approve: submit it first`))

    const rejected = await acsWith(keys.approver, ["changeset", "reject", changesetProject, opened.changesetId, "--reason", "not this week"])
    expect(rejected.code, rejected.stderr).toBe(0)
    expect(rejected.stdout).toMatch(/^status: +rejected$/m)
    expect(rejected.stdout).toMatch(/^decision reason: +not this week$/m)
    const table = await acsWith(keys.changesetScript, ["changeset", "list", changesetProject, "--status", "rejected"])
    expect(table.stdout.split("\n")[0]).toMatch(/^CREATED AT\s+CHANGESET ID\s+STATUS\s+MEMBERS\s+OPENED BY\s+TITLE/)
    expect(table.stdout).toMatch(new RegExp(`\\s${opened.changesetId}\\s+rejected\\s+0\\s+key changeset script\\s+Not this week$`, "m"))
  })
})
