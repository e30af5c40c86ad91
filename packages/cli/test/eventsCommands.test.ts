/**
 * `acs events` and `acs webhooks` as real processes against a started server (docs/contract.md 6): the page as REST
 * answers it, `--follow` printing a proposal's event as it happens (the RPC streaming procedure), and the
 * webhook commands (the secret printed once; an endpoint past the org's limit refused).
 */
import { spawn } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { nodeArgs, repoRoot } from "../../server/test/support/entries.ts"
import { type Pipeline, proposalOf, startPipeline } from "../../server/test/support/pipeline.ts"
import { BOOTSTRAP_KEY } from "../../server/test/support/server.ts"
import { waitFor } from "../../server/test/support/wait.ts"
import { jsonOf, runAcs } from "./support/runAcs.ts"

let p: Pipeline
const env = () => ({ ACS_URL: p.server.baseUrl, ACS_KEY: BOOTSTRAP_KEY })

beforeAll(async () => {
  p = await startPipeline({ env: { WEBHOOK_CONCURRENCY: "0", EVENTS_POLL_MS: "200", WORKER_CONCURRENCY: "0" } })
}, 600_000)

afterAll(async () => {
  await p?.close()
})

let step = 0
const queue = async (): Promise<string> => {
  const campaign = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).find((c) => c.dailyBudgetMicros !== null)!
  step++
  const answer = await p.propose("budget-change", {
    campaignId: campaign.campaignId,
    newDailyBudgetMicros: campaign.dailyBudgetMicros! + step * 1_000_000,
    reason: "cli events"
  }, { as: "key" })
  expect(answer.status, answer.text).toBe(201)
  return proposalOf(answer).actionId
}

describe("acs events", () => {
  it("prints the page REST answers, and --follow prints a new event as it happens", async () => {
    const first = await queue()
    const page = await waitFor("the proposal's event", async () => jsonOf<{ events: Array<{ data: { action?: { actionId: string } } }> }>(
      await runAcs(["events", "--type", "action.proposed", "--json"], env())
    ), (listed) => listed.events.some((e) => e.data.action?.actionId === first))
    const rest = await p.as("key", "GET", "/events?type=action.proposed")
    expect(page).toEqual(rest.body)

    const follower = spawn(process.execPath, [...nodeArgs("cli"), "events", "--follow", "--json"], {
      cwd: repoRoot,
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", NO_COLOR: "1", ...env() },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    follower.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()))
    follower.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()))
    try {
      // The stream starts after what is sequenced when it opens: keep proposing until one arrives.
      const seen = await waitFor("acs events --follow to print a new proposal", async () => {
        const actionId = await queue()
        await new Promise((resolve) => setTimeout(resolve, 300))
        return { actionId, out }
      }, ({ out }) => out.includes("action.proposed"), { show: () => `stdout: ${out}\nstderr: ${err}` })
      const line = JSON.parse(seen.out.split("\n").find((l) => l.includes("action.proposed"))!) as { type: string; eventId: string }
      expect(line.type).toBe("action.proposed")
      expect(line.eventId).toMatch(/^evt_/)
    } finally {
      follower.kill("SIGTERM")
    }
  })

  it("refuses an unknown --type as a usage error", async () => {
    const run = await runAcs(["events", "--type", "nope"], env())
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("--type")
  })
})

describe("acs webhooks", () => {
  it("creates (the secret printed once), lists, tests and deletes an endpoint", async () => {
    const created = jsonOf<{ webhook: { webhookId: string; url: string; events: Array<string> }; secret: string }>(
      await runAcs(["webhooks", "create", "https://93.184.216.34/acs", "--event", "action.proposed", "--event", "action.failed", "--json"], env())
    )
    expect(created.secret).toMatch(/^whsec_/)
    expect(created.webhook.events).toEqual(["action.proposed", "action.failed"])
    const listed = await runAcs(["webhooks", "list"], env())
    expect(listed.code, listed.stderr).toBe(0)
    expect(listed.stdout).toContain(created.webhook.webhookId)
    expect(listed.stdout).not.toContain(created.secret)
    const pinged = jsonOf<{ eventType: string }>(await runAcs(["webhooks", "test", created.webhook.webhookId, "--json"], env()))
    expect(pinged.eventType).toBe("ping")
    const deleted = await runAcs(["webhooks", "delete", created.webhook.webhookId], env())
    expect(deleted.code, deleted.stderr).toBe(0)
    const refused = await runAcs(["webhooks", "create", "https://10.0.0.1/acs", "--json"], env())
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain("validation_failed")
  })

  it("refuses an endpoint past the org's limit (WEBHOOK_MAX_ENDPOINTS_PER_ORG), saying so", async () => {
    await p.restart({ WEBHOOK_MAX_ENDPOINTS_PER_ORG: "1" })
    const created = jsonOf<{ webhook: { webhookId: string } }>(
      await runAcs(["webhooks", "create", "https://93.184.216.34/one", "--event", "action.proposed", "--json"], env())
    )
    const refused = await runAcs(["webhooks", "create", "https://93.184.216.34/two", "--event", "action.proposed"], env())
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain("validation_failed")
    expect(refused.stderr).toContain("1 webhook endpoints, the most it may have (1)")
    expect((await runAcs(["webhooks", "delete", created.webhook.webhookId], env())).code).toBe(0)
    await p.restart()
  })
})
