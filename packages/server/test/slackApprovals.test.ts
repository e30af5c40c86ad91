/**
 * Slack approvals (docs/contract.md 6.1) against a real server process and PostgreSQL: a `slack_app` webhook
 * posts Block Kit with Approve and Reject buttons to a local receiver standing in for Slack's incoming webhook;
 * each tap is sent to `/integrations/slack/interactions` form-encoded and signed exactly as Slack signs it
 * (`v0=` HMAC-SHA256 of `v0:<timestamp>:<raw body>`), and the receiver stands in for the interaction's
 * `response_url` too. Covered: the signature, the 5-minute window and a replay refused before anything is read;
 * an unknown Slack user; a person without the approval grant; the proposer approving their own change, or their
 * agent's where the workspace's four-eyes rule needs another person; two people
 * for high risk (the first tap leaves it queued, the second person's applies it); an expired action; a stale
 * changeset plan; and the happy paths replacing the message with the outcome.
 */
import { ActionRecord } from "@acs/domain/Actions"
import { DEFAULT_GUARDRAILS } from "@acs/domain/Guardrails"
import type { UpstreamCampaign } from "@acs/upstream/Upstream"
import { Schema } from "effect"
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type AccountView, type Pipeline, proposalOf, startPipeline } from "./support/pipeline.ts"
import { call, errorCode } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

const SIGNING_SECRET = "8f742231b10e8888abcd99edabcd00d1"
const ANN = { email: "ann@slack.example", name: "Ann Approver", role: "approver", password: "ann-password-0123456789", slack: "UANN00001" }
const ED = { email: "ed@slack.example", name: "Ed Editor", role: "editor", password: "ed-password-0123456789", slack: "UED000001" }
const ADMIN_SLACK = "UADMIN001"

let p: Pipeline
let receiver: Http.Server
let receiverUrl = ""
/** Every POST the receiver took, by path: the incoming webhook's (`/hook`) and each response URL's (`/respond/<n>`). */
const received = new Map<string, Array<Record<string, unknown>>>()
let replies = 0
/** Free campaigns with a daily budget, of both writable accounts: each test changes one no pending change holds. */
let campaigns: Array<{ readonly account: AccountView; readonly campaign: UpstreamCampaign }>

const sign = (secret: string, timestamp: string, body: string) =>
  `v0=${Crypto.createHmac("sha256", secret).update(`v0:${timestamp}:${body}`).digest("hex")}`

interface Button {
  readonly action_id: string
  readonly value: string
}

/** A tap on `button` by `user`, as Slack posts it: its answer, and where its reply goes. */
const tap = async (
  user: string,
  button: Button,
  options: { readonly secret?: string; readonly timestamp?: number; readonly raw?: { body: string; signature: string; timestamp: string } } = {}
) => {
  const respond = `/respond/${++replies}`
  const payload = {
    type: "block_actions",
    user: { id: user, username: user.toLowerCase(), team_id: "T0001" },
    team: { id: "T0001", domain: "acme" },
    response_url: `${receiverUrl}${respond}`,
    actions: [{ type: "button", block_id: "acs_decision", action_ts: "1", ...button }]
  }
  const body = options.raw?.body ?? `payload=${encodeURIComponent(JSON.stringify(payload))}`
  const timestamp = options.raw?.timestamp ?? String(options.timestamp ?? Math.floor(Date.now() / 1000))
  const signature = options.raw?.signature ?? sign(options.secret ?? SIGNING_SECRET, timestamp, body)
  const response = await fetch(`${p.server.baseUrl}/integrations/slack/interactions`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-slack-request-timestamp": timestamp, "x-slack-signature": signature },
    body
  })
  return { status: response.status, text: await response.text(), respond, body, signature, timestamp }
}

/** The reply posted to a tap's response URL. */
const replyTo = (respond: string) =>
  waitFor(`the reply at ${respond}`, async () => received.get(respond) ?? [], (got) => got.length > 0).then((got) => got[0]!)

const textOf = (message: Record<string, unknown>) => JSON.stringify(message)

const buttonsOf = (message: Record<string, unknown>): { approve: Button; reject: Button } | undefined => {
  const blocks = message["blocks"] as Array<{ type: string; elements?: Array<Button> }>
  const actions = blocks.find((b) => b.type === "actions")
  if (actions === undefined) return undefined
  return { approve: actions.elements!.find((e) => e.action_id === "acs_approve")!, reject: actions.elements!.find((e) => e.action_id === "acs_reject")! }
}

/** The `slack_app` message the webhook posted for `id` (an action's or a changeset's). */
const messageFor = (id: string) =>
  waitFor(`the Slack message for ${id}`, async () => (received.get("/hook") ?? []).find((m) => textOf(m).includes(id)), (m) => m !== undefined)
    .then((m) => m!)

const freshCampaign = () => {
  const free = campaigns.shift()
  expect(free, "a campaign no other test's change still holds").toBeDefined()
  return free!
}

/** Two campaigns of one account, for a changeset. */
const twoInOneAccount = () => {
  const first = campaigns.findIndex((c, i) => campaigns.findIndex((d, j) => j > i && d.account === c.account) >= 0)
  expect(first, "two free campaigns of one account").toBeGreaterThanOrEqual(0)
  const [a] = campaigns.splice(first, 1)
  const [b] = campaigns.splice(campaigns.findIndex((d) => d.account === a!.account), 1)
  return [a!, b!] as const
}

/** A test's change ended (rejected, expired): its campaign is free for another test's. */
const release = (proposal: { readonly account: AccountView; readonly campaign: UpstreamCampaign }) =>
  campaigns.push({ account: proposal.account, campaign: proposal.campaign })

/** Ends a change a refused tap left waiting, and frees its campaign. */
const rejectLeftOver = async (proposal: { readonly actionId: string; readonly account: AccountView; readonly campaign: UpstreamCampaign }) => {
  const rejected = await p.as("person", "POST", `/accounts/${proposal.account.projectId}/approvals/${proposal.actionId}/reject`, {})
  expect(rejected.status, rejected.text).toBe(200)
  release(proposal)
}

/** A budget change by the bootstrap key (an API key's proposal always waits for a person). */
const keyRaise = async (pct: number) => {
  const { account, campaign } = freshCampaign()
  const answer = await p.propose("budget-change", {
    campaignId: campaign.campaignId,
    newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * (1 + pct / 100) / 10_000) * 10_000,
    reason: "more reach"
  }, { as: "key", projectId: account.projectId })
  const proposal = proposalOf(answer)
  expect(proposal.mode).toBe("queued")
  return { ...proposal, account, campaign }
}

const signIn = async (email: string, password: string) => {
  const login = await call(`${p.server.api}/auth/login`, { method: "POST", body: { email, password } })
  return login.headers.getSetCookie().find((l) => l.startsWith("acs_session="))!.split(";")[0]!
}

beforeAll(async () => {
  received.clear()
  receiver = Http.createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const list = received.get(request.url ?? "") ?? []
      list.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>)
      received.set(request.url ?? "", list)
      response.writeHead(200).end("ok")
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
  // Nothing applies (no worker): an approved change stays `approved`, and the tests read it so.
  p = await startPipeline({ seed: 38, env: { WORKER_CONCURRENCY: "0", WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true", WEBHOOK_RETRY_BASE_MS: "200" } })
  campaigns = []
  for (const account of [p.account, p.secondAccount]) {
    const own = (await p.run(p.upstream.campaigns(account.upstreamAccountId))).filter((c) => !c.deleted && c.dailyBudgetMicros !== null)
    campaigns.push(...own.map((campaign) => ({ account, campaign })))
    const put = await p.as("person", "PUT", `/accounts/${account.projectId}/guardrails`, {
      ...DEFAULT_GUARDRAILS,
      envelope: { maxDailyBudgetIncreaseMicros24h: 1_000_000_000_000, maxTotalDailyBudgetMicros: null },
      highRisk: { budgetIncreasePct: 25, removals: 10, enableCampaign: true }
    })
    expect(put.status, put.text).toBe(200)
  }
  expect(campaigns.length).toBeGreaterThanOrEqual(8)
  for (const person of [ANN, ED]) {
    const created = await p.as("person", "POST", "/people", { email: person.email, name: person.name, role: person.role, password: person.password })
    expect(created.status, created.text).toBe(201)
    const personId = (created.body as { person: { personId: string } }).person.personId
    // An admin links Ann's; Ed links his own, signed in.
    const linked = person === ANN
      ? await p.as("person", "PUT", `/people/${personId}`, { slackUserId: person.slack })
      : await call(`${p.server.api}/auth/slack-user`, { method: "PUT", body: { slackUserId: person.slack }, headers: { cookie: await signIn(person.email, person.password) } })
    expect(linked.status, linked.text).toBe(200)
    expect(linked.body).toMatchObject({ slackUserId: person.slack })
  }
  expect((await p.as("person", "PUT", "/auth/slack-user", { slackUserId: ADMIN_SLACK })).status).toBe(200)
  const secret = await p.as("person", "PUT", "/settings/slack/signing-secret", { signingSecret: SIGNING_SECRET })
  expect(secret.status, secret.text).toBe(200)
  const hook = await p.as("key", "POST", "/webhooks", { url: `${receiverUrl}/hook`, events: ["action.proposed", "changeset.queued"], format: "slack_app" })
  expect(hook.status, hook.text).toBe(201)
})

afterAll(async () => {
  await p?.close()
  await new Promise((resolve) => receiver?.close(resolve))
})

describe("linking and the signing secret", () => {
  it("never answers the secret, and keeps a Slack user one person's", async () => {
    const shown = await p.as("person", "GET", "/settings/slack")
    expect(shown.body).toMatchObject({ signingSecretSet: true, interactionsPath: "/integrations/slack/interactions" })
    expect(shown.text).not.toContain(SIGNING_SECRET)
    const stored = await p.sql<{ secret_sealed: string }>("SELECT secret_sealed FROM slack_signing_secrets")
    expect(stored[0]!.secret_sealed).not.toContain(SIGNING_SECRET)
    const taken = await p.as("person", "PUT", "/auth/slack-user", { slackUserId: ANN.slack })
    expect([taken.status, errorCode(taken)]).toEqual([409, "conflict"])
    const malformed = await p.as("person", "PUT", "/auth/slack-user", { slackUserId: "ann" })
    expect(malformed.status).toBe(400)
  })
})

describe("the request's signature", () => {
  it("refuses a wrong signature, a stale timestamp and a replay before reading the payload, and decides nothing", async () => {
    const proposal = await keyRaise(10)
    const { approve } = buttonsOf(await messageFor(proposal.actionId))!
    const forged = await tap(ANN.slack, approve, { secret: "0000000000000000000000000000dead" })
    expect(forged.status).toBe(401)
    expect(forged.text).toMatch(/signature does not match/)
    const stale = await tap(ANN.slack, approve, { timestamp: Math.floor(Date.now() / 1000) - 6 * 60 })
    expect(stale.status).toBe(401)
    expect(stale.text).toMatch(/more than 5 minutes/)
    // Signed right, but over another body than the one sent: the payload is not what Slack signed.
    const tampered = await tap(ANN.slack, approve)
    const altered = await tap(ANN.slack, approve, {
      raw: { body: tampered.body.replace(ANN.slack, ADMIN_SLACK), signature: tampered.signature, timestamp: tampered.timestamp }
    })
    expect(altered.status).toBe(401)
    expect(tampered.status).toBe(200)
    expect(textOf(await replyTo(tampered.respond))).toMatch(/Approved by Ann Approver in Slack/)
    const replayed = await tap(ANN.slack, approve, { raw: { body: tampered.body, signature: tampered.signature, timestamp: tampered.timestamp } })
    expect(replayed.status).toBe(401)
    expect(replayed.text).toMatch(/replay/)
    const missing = await fetch(`${p.server.baseUrl}/integrations/slack/interactions`, { method: "POST", body: tampered.body })
    expect(missing.status).toBe(401)
    expect((await p.action(proposal.actionId, proposal.account.projectId)).approvals.map((a) => a.by.name)).toEqual(["Ann Approver"])
  })
})

describe("who taps", () => {
  it("tells an unknown Slack user to link theirs, and decides nothing", async () => {
    const proposal = await keyRaise(10)
    const { approve } = buttonsOf(await messageFor(proposal.actionId))!
    const answer = await tap("UNOBODY01", approve)
    expect(answer.status).toBe(200)
    const reply = await replyTo(answer.respond)
    expect(reply).toMatchObject({ response_type: "ephemeral", replace_original: false })
    expect(reply["text"]).toMatch(/acs does not know your Slack user \(UNOBODY01\)\. Link it in the acs console/)
    expect((await p.action(proposal.actionId, proposal.account.projectId)).status).toBe("proposed")
    await rejectLeftOver(proposal)
  })

  it("refuses a person whose role does not approve, in plain words", async () => {
    const proposal = await keyRaise(10)
    const { approve } = buttonsOf(await messageFor(proposal.actionId))!
    const reply = await replyTo((await tap(ED.slack, approve)).respond)
    expect(reply).toMatchObject({ replace_original: false })
    expect(reply["text"]).toBe("You cannot approve or reject changes: your role in acs (editor) does not include approving. An admin can make you an approver.")
    expect((await p.action(proposal.actionId, proposal.account.projectId)).status).toBe("proposed")
    await rejectLeftOver(proposal)
  })

  it("refuses the proposer approving their own change", async () => {
    const { account, campaign } = freshCampaign()
    // Ann's own raise past the high-risk line: a person's proposal that waits.
    const answer = await call(`${p.server.api}/accounts/${account.projectId}/actions/budget-change`, {
      method: "POST",
      body: { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 1.5 / 10_000) * 10_000, reason: "mine" },
      headers: { cookie: await signIn(ANN.email, ANN.password) }
    })
    const proposal = proposalOf(answer)
    expect(proposal.mode).toBe("queued")
    const { approve } = buttonsOf(await messageFor(proposal.actionId))!
    const reply = await replyTo((await tap(ANN.slack, approve)).respond)
    expect(reply["text"]).toMatch(/^You cannot approve this change: four eyes: you proposed this change yourself: another approver must approve it/)
    expect((await p.action(proposal.actionId, account.projectId)).approvals).toEqual([])
  })
})

describe("an agent's change", () => {
  it("refuses the person whose own key proposed it where the workspace needs another person (distinct_person)", async () => {
    const created = await p.as("person", "POST", "/keys", { name: "admin's agent", scope: "write" })
    expect(created.status, created.text).toBe(201)
    const secret = (created.body as { secret: string }).secret
    const { account, campaign } = freshCampaign()
    const proposal = proposalOf(await call(`${p.server.api}/accounts/${account.projectId}/actions/budget-change`, {
      method: "POST",
      key: secret,
      body: { campaignId: campaign.campaignId, newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 1.1 / 10_000) * 10_000, reason: "agent" }
    }))
    expect((await p.as("person", "PUT", "/settings", { fourEyes: "distinct_person" })).status).toBe(200)
    try {
      const { approve } = buttonsOf(await messageFor(proposal.actionId))!
      const reply = await replyTo((await tap(ADMIN_SLACK, approve)).respond)
      expect(reply["text"]).toMatch(/^You cannot approve this change: four eyes: your key "admin's agent" proposed this change/)
      expect((await p.action(proposal.actionId, account.projectId)).status).toBe("proposed")
    } finally {
      expect((await p.as("person", "PUT", "/settings", { fourEyes: "distinct_actor" })).status).toBe(200)
    }
  })
})

describe("the decision", () => {
  it("approves in one tap and replaces the message with the outcome", async () => {
    const proposal = await keyRaise(10)
    const message = await messageFor(proposal.actionId)
    const escaped = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    expect(textOf(message)).toContain(`Account: ${escaped(proposal.account.name)} (${proposal.account.projectId})`)
    expect(textOf(message)).toContain(`#/change/${proposal.account.projectId}/${proposal.actionId}`)
    expect(textOf(message)).toMatch(new RegExp(`dailyBudget: \\d+\\.\\d\\d ${proposal.account.currency} → \\d+\\.\\d\\d ${proposal.account.currency}`))
    expect(textOf(message)).toMatch(/Expires \d{4}-\d\d-\d\dT\d\d:\d\dZ unless decided/)
    const answer = await tap(ANN.slack, buttonsOf(message)!.approve)
    expect(answer.status).toBe(200)
    const reply = await replyTo(answer.respond)
    expect(reply).toMatchObject({ replace_original: true })
    expect(reply["text"]).toMatch(/^Approved by Ann Approver in Slack \(now approved\)/)
    expect(buttonsOf(reply), "the buttons go once it is decided").toBeUndefined()
    const decided = await p.action(proposal.actionId, proposal.account.projectId)
    expect(decided.status).toBe("approved")
    expect(decided.decidedBy).toMatchObject({ kind: "person", name: "Ann Approver" })
  })

  it("rejects in one tap", async () => {
    const proposal = await keyRaise(10)
    const reply = await replyTo((await tap(ANN.slack, buttonsOf(await messageFor(proposal.actionId))!.reject)).respond)
    expect(reply["text"]).toMatch(/^Rejected by Ann Approver in Slack/)
    expect((await p.action(proposal.actionId, proposal.account.projectId)).status).toBe("rejected")
    release(proposal)
  })

  it("leaves a high-risk change queued after the first approval; the same person again is refused; another person's applies it", async () => {
    const proposal = await keyRaise(50)
    expect(proposal.riskTier).toBe("high")
    const { approve } = buttonsOf(await messageFor(proposal.actionId))!
    const first = await replyTo((await tap(ANN.slack, approve)).respond)
    expect(first).toMatchObject({ replace_original: true })
    expect(first["text"]).toMatch(/^Approved once by Ann Approver: this high-risk change needs a second person/)
    expect(buttonsOf(first), "the buttons stay for the second person").toBeDefined()
    expect((await p.action(proposal.actionId, proposal.account.projectId)).status).toBe("proposed")
    const again = await replyTo((await tap(ANN.slack, approve)).respond)
    expect(again["text"]).toMatch(/^You cannot approve this change: two people: Ann Approver approved this high-risk change already/)
    const second = await replyTo((await tap(ADMIN_SLACK, buttonsOf(first)!.approve)).respond)
    expect(second["text"]).toMatch(/^Approved by .* in Slack \(now approved\)/)
    const approved = Schema.decodeUnknownSync(ActionRecord)(await p.action(proposal.actionId, proposal.account.projectId))
    expect(approved.status).toBe("approved")
    expect(approved.approvals.map((a) => a.by.name)).toEqual(["Ann Approver", expect.any(String)])
  })

  it("refuses an expired action, which expires then", async () => {
    const proposal = await keyRaise(10)
    const { approve } = buttonsOf(await messageFor(proposal.actionId))!
    // Queued long ago: past the org's approvalTtlHours.
    await p.sql("UPDATE actions SET queued_at = now() - interval '30 days', created_at = now() - interval '30 days' WHERE action_id = $1", [proposal.actionId])
    const reply = await replyTo((await tap(ANN.slack, approve)).respond)
    expect(reply["text"]).toMatch(/^Not done: Action act_\w+ is expired, not pending/)
    expect((await p.action(proposal.actionId, proposal.account.projectId)).status).toBe("expired")
    release(proposal)
  })

  it("refuses a plan the account moved under and a button of an earlier plan; two people approve the changeset's current plan", async () => {
    const members = twoInOneAccount()
    const account = members[0].account
    const at = (rest: string) => `/accounts/${account.projectId}${rest}`
    const opened = await p.as("key", "POST", at("/changesets"), { title: "two raises" })
    expect(opened.status, opened.text).toBe(201)
    const changesetId = (opened.body as { changesetId: string }).changesetId
    for (const { campaign } of members) {
      proposalOf(await p.propose("budget-change", {
        campaignId: campaign.campaignId,
        newDailyBudgetMicros: Math.round(campaign.dailyBudgetMicros! * 1.05 / 10_000) * 10_000,
        reason: "a little more",
        changesetId
      }, { as: "key", projectId: account.projectId }))
    }
    const submit = async () => {
      const submitted = await p.as("key", "POST", at(`/changesets/${changesetId}/submit`))
      expect(submitted.status, submitted.text).toBe(200)
      return (submitted.body as { planHash: string }).planHash
    }
    const firstPlan = await submit()
    const first = buttonsOf(await messageFor(firstPlan))!
    expect(JSON.parse(first.approve.value)).toEqual({ projectId: account.projectId, changesetId, planHash: firstPlan })

    // Someone changes the first member's campaign in Apple's web UI; the sync brings it into the ledger.
    const moved = members[0].campaign
    p.setBudgetOutsideAcs(moved.campaignId, Math.round(moved.dailyBudgetMicros! * 0.8 / 10_000) * 10_000, account)
    expect((await p.as("key", "POST", at("/syncs"))).status).toBe(202)
    await waitFor("the outside change in the ledger", () =>
      p.sql<{ n: string }>("SELECT count(*) AS n FROM actions WHERE kind = 'external_change' AND payload->'entity'->>'id' = $1", [moved.campaignId]),
      (rows) => Number(rows[0]!.n) > 0, { intervalMs: 250 })
    const movedUnder = await replyTo((await tap(ANN.slack, first.approve)).respond)
    expect(movedUnder).toMatchObject({ replace_original: false })
    expect(movedUnder["text"]).toMatch(/^Not done: The account changed under the plan of changeset cs_\w+ since it was submitted: 1 member\(s\) moved; submit it again/)

    // Submitted again: a new plan and a new message; the first message's button names the earlier plan.
    const secondPlan = await submit()
    expect(secondPlan).not.toBe(firstPlan)
    const stale = await replyTo((await tap(ANN.slack, first.approve)).respond)
    expect(stale["text"]).toMatch(/^Not done: .*plan/i)
    // From the budget the outside change left, the raise is now past the high-risk line: two people approve it.
    const once = await replyTo((await tap(ANN.slack, buttonsOf(await messageFor(secondPlan))!.approve)).respond)
    expect(once["text"]).toMatch(/^Approved once by Ann Approver: this high-risk change needs a second person/)
    const approved = await replyTo((await tap(ADMIN_SLACK, buttonsOf(once)!.approve)).respond)
    expect(approved["text"]).toMatch(/^Approved by .* in Slack \(now approved\)/)
    const after = await p.as("key", "GET", at(`/changesets/${changesetId}`))
    expect((after.body as { changeset: { status: string } }).changeset.status).toBe("approved")
  })
})
