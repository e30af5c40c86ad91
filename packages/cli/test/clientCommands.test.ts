/**
 * The client commands (`acs accounts`, `acs propose`, …) run as real processes against a started server
 * syncing a simulator account, over `/rpc` with API keys: `--json` answers parsed back and compared with
 * REST, the exit codes scripts branch on, and the SPEC's safe automation sequence end to end.
 */
import { CreatedKey } from "@acs/domain/ApiKeys"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "../../server/test/support/pipeline.ts"
import { BOOTSTRAP_KEY } from "../../server/test/support/server.ts"
import { waitFor } from "../../server/test/support/wait.ts"
import { inBatches, jsonOf, type Run, runAcs } from "./support/runAcs.ts"

let p: Pipeline
let project: string
/** Org-wide keys: read; write without the approve grant; write with it. The bootstrap key is admin. */
const keys = { read: "", write: "", approver: "", readOne: "" }

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

beforeAll(async () => {
  p = await startPipeline({ seed: 71 })
  project = p.account.projectId
  keys.read = await createKey({ name: "cli reader", scope: "read" })
  keys.write = await createKey({ name: "cli script", scope: "write" })
  // Four eyes: the approver is no key the proposing script's creator made.
  keys.approver = await p.approverKey()
  keys.readOne = await createKey({ name: "cli one account", scope: "read", projectIds: [project] })
})

afterAll(async () => {
  await p?.close()
})

describe("acs client commands", () => {
  it("reads print the operation's answer as one JSON document, the same as REST", async () => {
    const campaigns = (await rest(`/accounts/${project}/campaigns?days=7&limit=3`)) as { campaigns: Array<{ campaignId: string }> }
    const campaignId = campaigns.campaigns[0]!.campaignId
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [["accounts"], "/accounts"],
      [["campaigns", project, "--days", "7", "--limit", "3"], `/accounts/${project}/campaigns?days=7&limit=3`],
      [["keywords", project, "--limit", "5", "--campaign", campaignId], `/accounts/${project}/keywords?limit=5&campaignId=${campaignId}`],
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
    const [accounts, campaigns, policy, byOptions] = await inBatches([
      () => acs(keys.read, "accounts"),
      () => acs(keys.read, "campaigns", project, "--limit", "2"),
      () => acs(keys.read, "policy", project),
      () => runAcs(["accounts", "--url", p.server.baseUrl, "--key", keys.read, "--json"], { ACS_URL: "http://127.0.0.1:9", ACS_KEY: "acs_wrong" })
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
})
