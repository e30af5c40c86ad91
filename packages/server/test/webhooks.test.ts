/**
 * Webhooks (docs/contract.md 6), against the real server and a real HTTP receiver: the signature verified with the
 * README's own snippet, each event received once per successful delivery, retries after 500s and timeouts,
 * nothing lost when the server is SIGKILLed mid-delivery, when an event commits while no instance runs, or when
 * two instances deliver; a commit waking the deliveries without their poll; the Slack format, the
 * endpoint disabled after its retry window and enabled again; and the SSRF guard refusing non-public addresses in
 * every form, at save and at connect, without saying what a name resolved to, and redirecting and
 * non-https targets.
 */
import * as Crypto from "node:crypto"
import * as Dns from "node:dns"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { isProposalResponse, type ProposalPreview, type ProposalResponse } from "@acs/domain/Actions"
import { ErrorBodies } from "@acs/domain/Errors"
import { CreatedWebhook } from "@acs/domain/Webhooks"
import { ConfigProvider, Effect, Layer, Option, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Transitions } from "../src/actions/pipeline/Transitions.ts"
import { databaseLayer } from "../src/db/Database.ts"
import { nonPublicRange } from "../src/webhooks/PublicAddress.ts"
import type { ApiClient } from "./support/apiClient.ts"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
import { type Receiver, startReceiver } from "./support/receiver.ts"
import { type Answer, BOOTSTRAP_KEY, call, repoRoot, type RunningServer } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

type Verify = (rawBody: string, header: string, secret: string, toleranceSeconds?: number) => boolean
type VerifiedEvent = (rawBody: string, header: string, secret: string) => { readonly eventId: string } | null

/** The README's verification snippet itself, run as a receiver would run it. */
const documentedSnippet = (): { readonly verify: Verify; readonly verifiedEvent: VerifiedEvent } => {
  const readme = Fs.readFileSync(Path.join(repoRoot, "README.md"), "utf8")
  const block = /```js\n([\s\S]*?\/\/ acs-verify-signature[\s\S]*?)```/.exec(readme)
  if (block === null) throw new Error("README has no acs-verify-signature snippet")
  const code = block[1]!.replace(/^import .*$/m, "")
  return new Function("crypto", `${code}\nreturn { verify: verifyAcsSignature, verifiedEvent: verifiedAcsEvent }`)(Crypto) as {
    verify: Verify
    verifiedEvent: VerifiedEvent
  }
}

/**
 * A name this machine resolves to non-public addresses only (its own name — loopback or the container's private
 * address — or Debian's ip6-localhost), with what it resolves to. `localhost` is refused by its name already.
 */
const privateName = async () => {
  for (const name of [Os.hostname(), "ip6-localhost", "ip6-loopback"]) {
    if (name === "localhost" || name.endsWith(".localhost")) continue
    const addresses = await Dns.promises.lookup(name, { all: true }).catch(() => [])
    if (addresses.length > 0 && addresses.every((a) => nonPublicRange(a.address) !== undefined)) return { name, addresses: addresses.map((a) => a.address) }
  }
  throw new Error("no name of this machine resolves to non-public addresses only: the connect-time check cannot be shown")
}

/** acs's own database layer in this process, on the pipeline's database. */
const databaseAt = (url: string) =>
  databaseLayer("webhooks test").pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url]])))))

let p: Pipeline
let receiver: Receiver
const { verify, verifiedEvent } = documentedSnippet()
let campaign: { readonly campaignId: string; readonly dailyBudgetMicros: number }
let step = 0

const FAST = {
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
  WEBHOOK_TIMEOUT_MS: "1500",
  WEBHOOK_RETRY_BASE_MS: "200",
  WEBHOOK_LEASE_MS: "4000",
  EVENTS_POLL_MS: "200",
  WORKER_CONCURRENCY: "0"
}

beforeAll(async () => {
  receiver = await startReceiver()
  p = await startPipeline({ env: FAST })
  const { campaigns } = await p.api("key", (client) => client.warehouse.listCampaigns({ path: { projectId: p.account.projectId }, urlParams: { limit: 5 } }))
  campaign = campaigns.flatMap(({ campaignId, dailyBudgetMicros }) =>
    dailyBudgetMicros !== null && dailyBudgetMicros > 0 ? [{ campaignId, dailyBudgetMicros }] : []
  )[0]!
}, 600_000)

afterAll(async () => {
  await p?.close()
  await receiver?.close()
})

/** A proposal's action id, through the typed client (a preview's answer, having none, fails the test). */
const proposed = async (propose: (client: ApiClient) => Effect.Effect<ProposalResponse | ProposalPreview, unknown>): Promise<string> => {
  const answer = await p.api("key", propose)
  if (!isProposalResponse(answer)) throw new Error(`a preview where a proposal was expected: ${JSON.stringify(answer)}`)
  return answer.actionId
}

const queue = (): Promise<string> => {
  step++
  return proposed((client) =>
    client.proposals.proposeBudgetChange({
      path: { projectId: p.account.projectId },
      payload: { campaignId: campaign.campaignId, newDailyBudgetMicros: campaign.dailyBudgetMicros + step * 1_000_000, reason: "webhook test" },
      urlParams: {},
      headers: {}
    }))
}

/** POST /webhooks on the wire: the SSRF tests assert its status and exact body. */
const createWebhook = async (body: Record<string, unknown>, server: RunningServer = p.server) =>
  call(`${server.api}/webhooks`, { method: "POST", key: BOOTSTRAP_KEY, body })

/** A created endpoint, decoded with the contract's schema. */
const createdOf = (answer: Answer) => {
  expect(answer.status, answer.text).toBe(201)
  return Schema.decodeUnknownSync(CreatedWebhook)(answer.body)
}

/** A refusal to save an endpoint: 422, decoded to its error class (which checks `validation_failed`). */
const refusalOf = (answer: Answer, url: string) => {
  expect(answer.status, `${url}: ${answer.text}`).toBe(422)
  return Schema.decodeUnknownSync(ErrorBodies.ValidationFailed)(answer.body)
}

/** The action an event is about, if any (an event's data is any JSON object). */
const ActionData = Schema.Struct({ action: Schema.Struct({ actionId: Schema.String }) })
const actionIdOf = (data: unknown) => Option.getOrUndefined(Schema.decodeUnknownOption(ActionData)(data))?.action.actionId

/** The latest action.proposed events, through the typed client. */
const proposedEvents = (limit: number) =>
  p.api("key", (client) => Effect.map(client.events.listEvents({ urlParams: { type: "action.proposed", limit } }), (page) => page.events))

/** The org's endpoints, through the typed client. */
const listWebhooks = () => p.api("key", (client) => Effect.map(client.webhooks.listWebhooks(), (listed) => listed.webhooks))

/** An endpoint's delivery log, newest first, through the typed client. */
const deliveriesOf = (webhookId: string, limit?: number) =>
  p.api("key", (client) =>
    Effect.map(client.webhooks.listWebhookDeliveries({ path: { webhookId }, urlParams: limit === undefined ? {} : { limit } }), (log) => log.deliveries))

const deleteAll = async () => {
  for (const w of await listWebhooks()) await p.as("key", "DELETE", `/webhooks/${w.webhookId}`)
}

/** The requests the receiver got for the action's action.proposed event. */
const requestsFor = (actionId: string) => receiver.received.filter((r) => actionIdOf(r.body["data"]) === actionId)

const deliveredOnce = (actionId: string) =>
  waitFor(`a successful delivery of ${actionId}'s event`, () => Promise.resolve(requestsFor(actionId)), (requests) =>
    requests.some((r) => r.answered === 200), { show: (r) => JSON.stringify(r.map((x) => x.answered)) })

describe("deliveries", () => {
  let secret: string
  let webhookId: string

  beforeAll(async () => {
    ;({ secret, webhook: { webhookId } } = createdOf(await createWebhook({ url: receiver.url, events: ["action.proposed", "action.rejected"], description: "test" })))
    expect(secret).toMatch(/^whsec_/)
    // The secret is shown once: never listed again.
    const listed = await p.as("key", "GET", "/webhooks")
    expect(listed.text).not.toContain(secret)
  })

  it("signs each delivery (verified with the README's snippet) and delivers each event once", async () => {
    receiver.answer = () => ({ status: 200 })
    const actions = [await queue(), await queue(), await queue()]
    for (const actionId of actions) await deliveredOnce(actionId)
    for (const actionId of actions) {
      const requests = requestsFor(actionId)
      expect(requests.length).toBe(1)
      const request = requests[0]!
      expect(request.eventId).toBe(request.body["eventId"])
      expect(request.body["type"]).toBe("action.proposed")
      expect(verify(request.rawBody, request.signature!, secret)).toBe(true)
      expect(verify(request.rawBody, request.signature!, "whsec_wrong")).toBe(false)
      expect(verify(`${request.rawBody} `, request.signature!, secret)).toBe(false)
    }
    const deliveries = await deliveriesOf(webhookId)
    expect(deliveries.filter((d) => d.eventType === "action.proposed").slice(0, 3).every((d) => d.status === "delivered" && d.lastStatusCode === 200))
      .toBe(true)
  })

  it("the README's snippet gives the event id from the signed body: dedupe on it, whatever the Acs-Event-Id header says", async () => {
    receiver.answer = () => ({ status: 200 })
    const actionId = await queue()
    await deliveredOnce(actionId)
    const request = requestsFor(actionId)[0]!
    const event = (await proposedEvents(50)).find((e) => actionIdOf(e.data) === actionId)!
    expect(verifiedEvent(request.rawBody, request.signature!, secret)?.eventId).toBe(event.eventId)
    // A receiver deduping as the README says: a replay of the delivery under another Acs-Event-Id header (which
    // the signature does not cover, and the snippet does not read) is the same event; a body whose eventId was
    // changed is no delivery at all.
    const seen = new Set<string>()
    const receive = (rawBody: string, _acsEventIdHeader: string) => {
      const verified = verifiedEvent(rawBody, request.signature!, secret)
      if (verified === null) return "refused"
      if (seen.has(verified.eventId)) return "duplicate"
      seen.add(verified.eventId)
      return "processed"
    }
    expect(receive(request.rawBody, request.eventId!)).toBe("processed")
    expect(receive(request.rawBody, "evt_forged")).toBe("duplicate")
    expect(receive(request.rawBody.replace(event.eventId, "evt_forged000000000000"), "evt_forged000000000000")).toBe("refused")
    expect([...seen]).toEqual([event.eventId])
  })

  it("retries after 500s and after a timeout, with backoff, until a 2xx", async () => {
    receiver.answer = (_eventId, attempt) => attempt === 0 ? { status: 500 } : attempt === 1 ? "hang" : { status: 204 }
    const actionId = await queue()
    await waitFor("the third attempt's 204", () => Promise.resolve(requestsFor(actionId)), (r) => r.some((x) => x.answered === 204))
    expect(requestsFor(actionId).map((r) => r.answered)).toEqual([500, "hang", 204])
    receiver.releaseHung()
    const delivery = (await deliveriesOf(webhookId, 5)).find((d) => d.eventId === requestsFor(actionId)[0]!.eventId)!
    expect(delivery).toMatchObject({ status: "delivered", attempts: 3, lastStatusCode: 204 })
    receiver.answer = () => ({ status: 200 })
  })

  it("records a receiver's answer holding a NUL byte (shown as U+FFFD) instead of failing to record the delivery", async () => {
    receiver.answer = () => ({ status: 200, body: "ok\u0000done" })
    const actionId = await queue()
    const eventId = (await deliveredOnce(actionId))[0]!.eventId
    const delivery = await waitFor("the delivery recorded as delivered", async () => (await deliveriesOf(webhookId, 20)).find((d) => d.eventId === eventId),
      (d) => d?.status === "delivered")
    expect(delivery).toMatchObject({ attempts: 1, lastResponse: "ok\uFFFDdone" })
    expect(requestsFor(actionId)).toHaveLength(1)
    receiver.answer = () => ({ status: 200 })
  })

  it("the delivery log holds first attempts and retried deliveries alike, newest first, cut at its limit", async () => {
    const logOf = (limit: number) => deliveriesOf(webhookId, limit)
    const all = await logOf(200)
    // The earlier tests' first attempts (recorded with their batch) and the delivery retried three times (a queue row).
    expect(all.filter((d) => d.status === "delivered" && d.attempts === 1).length).toBeGreaterThanOrEqual(4)
    expect(all.some((d) => d.status === "delivered" && d.attempts === 3)).toBe(true)
    const times = all.map((d) => Date.parse(d.createdAt))
    expect(times).toEqual([...times].sort((a, b) => b - a))
    expect(new Set(all.map((d) => d.eventId)).size).toBe(all.length)
    for (const limit of [1, 2, 4]) expect((await logOf(limit)).map((d) => d.eventId)).toEqual(all.slice(0, limit).map((d) => d.eventId))
  })

  it("a ping is delivered on request", async () => {
    // The typed client decodes a Delivery only from the declared 202.
    const { eventId } = await p.api("key", (client) => client.webhooks.testWebhook({ path: { webhookId } }))
    await waitFor("the ping", () => Promise.resolve(receiver.received.filter((r) => r.eventId === eventId)), (r) => r.length > 0)
    expect(receiver.received.find((r) => r.eventId === eventId)!.body["type"]).toBe("ping")
  })

  it("nothing is lost when the server is SIGKILLed mid-delivery: another instance delivers it after the lease", async () => {
    receiver.answer = (_eventId, attempt) => attempt === 0 ? "hang" : { status: 200 }
    const actionId = await queue()
    await waitFor("the first attempt to arrive", () => Promise.resolve(requestsFor(actionId)), (r) => r.length > 0)
    await p.server.stop("SIGKILL")
    receiver.releaseHung()
    await p.restart(FAST)
    await deliveredOnce(actionId)
    expect(requestsFor(actionId).filter((r) => r.answered === 200).length).toBe(1)
    receiver.answer = () => ({ status: 200 })
  })

  it("two instances deliver every event exactly once when every attempt succeeds", async () => {
    const twin = await p.startTwin(FAST)
    const actions: Array<string> = []
    for (let i = 0; i < 8; i++) actions.push(await queue())
    for (const actionId of actions) await deliveredOnce(actionId)
    for (const actionId of actions) expect(requestsFor(actionId).length).toBe(1)
    await twin.stop()
  })

  it("an event committed while no instance runs is delivered, once, when one starts", async () => {
    receiver.answer = () => ({ status: 200 })
    const actionId = await queue()
    await deliveredOnce(actionId)
    await p.server.stop("SIGKILL")
    // The change commits with no acs process alive: nothing has sequenced its event or queued its delivery.
    const rejected = await Effect.runPromise(
      Effect.flatMap(Transitions, (transitions) => transitions.reject({ projectId: p.account.projectId, actionId }, { kind: "person", id: "psn_test", name: "Pat" }, "withdrawn while acs was down")).pipe(
        Effect.provide(Transitions.Default.pipe(Layer.provideMerge(databaseAt(p.database))))
      )
    )
    expect(rejected).toBe(true)
    const waiting = await p.sql<{ position: string | null }>(
      "SELECT position::text FROM events WHERE type = 'action.rejected' AND data -> 'action' ->> 'actionId' = $1",
      [actionId]
    )
    expect(waiting).toEqual([{ position: null }])
    await p.restart(FAST)
    const rejectedEvents = () => Promise.resolve(requestsFor(actionId).filter((r) => r.body["type"] === "action.rejected"))
    await waitFor("the action.rejected delivery", rejectedEvents, (r) => r.length > 0)
    expect((await rejectedEvents()).map((r) => r.answered)).toEqual([200])
  })

  // A poll of a day: only the notifications can deliver within the wait. One restart into it for both tests.
  describe("with a poll of a day", () => {
    beforeAll(() => p.restart({ ...FAST, EVENTS_POLL_MS: "86400000" }))
    afterAll(() => p.restart(FAST))

    it("a commit wakes the sequencer and the deliveries at once (LISTEN/NOTIFY), not at their poll", async () => {
      const actionId = await queue()
      await deliveredOnce(actionId)
      expect(requestsFor(actionId).length).toBe(1)
    })

    it("an event committed while its endpoint's batch is out is delivered once that batch is recorded, not at the poll", async () => {
      let held = false
      receiver.answer = () => held ? { status: 200 } : ((held = true), "hang")
      const first = await queue()
      await waitFor("the first event's attempt, held", () => Promise.resolve(requestsFor(first)), (r) => r.length > 0)
      // Sequenced while the first's batch is out: the claim it wakes skips the endpoint (one batch out at a time).
      const second = await queue()
      await waitFor("the second event sequenced", () => proposedEvents(200), (events) => events.some((e) => actionIdOf(e.data) === second))
      receiver.releaseHung(200)
      await deliveredOnce(second)
      expect(requestsFor(second)).toHaveLength(1)
      receiver.answer = () => ({ status: 200 })
    })
  })

  it("slack format: an incoming-webhook message with the summary, the reasons, the proposer and a console link", async () => {
    const created = createdOf(await createWebhook({ url: `${receiver.url}/slack`, events: ["action.proposed"], format: "slack" }))
    const actionId = await queue()
    const action = await p.action(actionId)
    const message = await waitFor("the Slack message", () =>
      Promise.resolve(receiver.received.find((r) => JSON.stringify(r.body).includes(actionId) && "blocks" in r.body)), (r) => r !== undefined)
    expect(String(message!.body["text"])).toContain(action.summary)
    const blocks = JSON.stringify(message!.body["blocks"])
    expect(blocks).toContain(action.policyReasons[0]!.slice(0, 30))
    expect(blocks).toContain("Proposed by")
    expect(blocks).toContain(`/#/change/${p.account.projectId}/${action.actionId}`)
    await p.as("key", "DELETE", `/webhooks/${created.webhook.webhookId}`)
  })

  it("slack format: a campaign name with Slack markup arrives as text, escaped in every field (the exact body)", async () => {
    await deleteAll()
    const created = createdOf(await createWebhook({ url: `${receiver.url}/slack-escaped`, events: ["action.proposed"], format: "slack" }))
    const projectId = p.account.projectId
    const { campaigns } = await p.api("key", (client) => client.warehouse.listCampaigns({ path: { projectId }, urlParams: { limit: 5 } }))
    const target = campaigns.find((c) => c.campaignId !== campaign.campaignId)!
    const name = `<!channel> <https://evil.example/?a=1&b=2|click> & co ${step}`
    const actionId = await proposed((client) =>
      client.proposals.proposeRename({
        path: { projectId },
        payload: { entity: "campaign", id: target.campaignId, name, reason: "<@U024BE7LH> please & thanks" },
        urlParams: {},
        headers: {}
      }))
    const action = await p.api("key", (client) => client.actions.getAction({ path: { projectId, actionId } }))
    const message = await waitFor("the Slack message", () =>
      Promise.resolve(receiver.received.find((r) => r.rawBody.includes(action.actionId) && "blocks" in r.body)), (r) => r !== undefined)
    const escaped = (value: string) => value.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    const summary = `Rename campaign "${escaped(target.name)}" to "&lt;!channel&gt; &lt;https://evil.example/?a=1&amp;b=2|click&gt; &amp; co ${step}"`
    expect(escaped(action.summary)).toBe(summary)
    expect(JSON.parse(message!.rawBody)).toEqual({
      text: `A change waits for approval: ${summary}`,
      blocks: [
        { type: "header", text: { type: "plain_text", text: "A change waits for approval" } },
        {
          type: "section",
          text: {
            type: "mrkdwn",
            text: [
              `*${summary}*`,
              `Proposed by ${escaped(action.proposedBy.name)}: “&lt;@U024BE7LH&gt; please &amp; thanks”`,
              ...action.policyReasons.map((reason) => `• ${escaped(reason)}`),
              `<${p.server.baseUrl}/#/change/${p.account.projectId}/${action.actionId}|Open ${action.actionId} in acs>`
            ].join("\n")
          }
        },
        { type: "context", elements: [{ type: "mrkdwn", text: `action.proposed · ${message!.eventId}` }] }
      ]
    })
    await p.as("key", "DELETE", `/webhooks/${created.webhook.webhookId}`)
  })

  it("an endpoint failing for its whole retry window is disabled, and an admin enables it again", async () => {
    await deleteAll()
    await p.restart({ ...FAST, WEBHOOK_RETRY_WINDOW_SECONDS: "2" })
    const id = createdOf(await createWebhook({ url: `${receiver.url}/down`, events: ["action.proposed"] })).webhook.webhookId
    receiver.answer = () => ({ status: 503 })
    await queue()
    const disabled = await waitFor("the endpoint to be disabled", async () => (await listWebhooks()).find((w) => w.webhookId === id)!,
      (w) => w.disabledAt !== null)
    expect(disabled.disabledReason).toMatch(/retry window/)
    // A refusal is the error class of its status (409 `conflict`); a Delivery decodes only from the declared 202.
    const refusedPing = await p.api("key", (client) => Effect.flip(client.webhooks.testWebhook({ path: { webhookId: id } })))
    expect(refusedPing).toMatchObject({ _tag: "Conflict" })
    receiver.answer = () => ({ status: 200 })
    const enabled = await p.api("key", (client) => client.webhooks.enableWebhook({ path: { webhookId: id } }))
    expect(enabled.disabledAt).toBeNull()
    const ping = await p.api("key", (client) => client.webhooks.testWebhook({ path: { webhookId: id } }))
    expect(ping.eventType).toBe("ping")
  })
})

describe("the SSRF guard", () => {
  /**
   * Against the server with the guard's default (private networks refused), restarted into it once for these
   * tests and back to FAST after them. The DNS rebinding case's endpoint is saved first, while private networks
   * are still allowed: as if its name had resolved to a public address then.
   */
  describe("with private networks refused", () => {
    let rebound: { readonly id: string; readonly name: string; readonly addresses: ReadonlyArray<string> }

    beforeAll(async () => {
      await deleteAll()
      const { name, addresses } = await privateName()
      const created = createdOf(await createWebhook({ url: `https://${name}:${new URL(receiver.url).port}/rebound`, events: ["action.proposed"] }))
      rebound = { id: created.webhook.webhookId, name, addresses }
      await p.restart({ ...FAST, WEBHOOK_ALLOW_PRIVATE_NETWORKS: "false" })
    })

    afterAll(async () => {
      await p.restart(FAST)
      await p.as("key", "DELETE", `/webhooks/${rebound.id}`)
    })

    it("refuses non-https targets and every form of a non-public address (IPv6 forms embedding an IPv4 too)", async () => {
      for (const url of [
        "http://hooks.example.com/acs",
        "https://localhost/hook",
        "https://localhost./hook",
        "ftp://hooks.example.com/"
      ]) {
        expect(refusalOf(await createWebhook({ url, events: ["action.proposed"] }), url)).toMatchObject({ _tag: "ValidationFailed" })
      }
      for (const [url, range] of [
        ["https://127.0.0.1/hook", /loopback/],
        ["https://2130706433/hook", /loopback/],
        ["https://10.1.2.3/hook", /private/],
        ["https://192.168.1.1/hook", /private/],
        ["https://172.16.0.1/hook", /private/],
        ["https://100.64.0.1/hook", /carrier-grade NAT/],
        ["https://169.254.169.254/latest/meta-data", /link-local/],
        ["https://0.0.0.0/hook", /unspecified/],
        ["https://224.0.0.251/hook", /multicast/],
        ["https://[::1]/hook", /loopback/],
        ["https://[::]/hook", /unspecified/],
        ["https://[fe80::1]/hook", /link-local/],
        ["https://[::ffff:127.0.0.1]/hook", /IPv4-mapped loopback/],
        ["https://[::127.0.0.1]/x", /IPv4-compatible/],
        ["https://[64:ff9b::a9fe:a9fe]/hook", /NAT64 link-local/],
        ["https://[64:ff9b:1::a00:1]/hook", /local-use NAT64/],
        ["https://[2002:a00:1::1]/hook", /6to4/],
        ["https://[2001:0:4136:e378:8000:63bf:f5ff:fefe]/hook", /Teredo/],
        ["https://[fd12:3456::1]/hook", /unique local/],
        ["https://[fec0::1]/hook", /site-local/],
        ["https://[ff02::1]/hook", /multicast/]
      ] as const) {
        const error = refusalOf(await createWebhook({ url, events: ["action.proposed"] }), url)
        expect(error._tag).toBe("ValidationFailed")
        expect(error.message, url).toMatch(/url: the host \S+ is not a public address/)
        expect(error.message, url).toMatch(range)
      }
    })

    it("refuses a name that resolves to a non-public address without saying the address", async () => {
      const { name, addresses } = await privateName()
      const url = `https://${name}/hook`
      const refused = await createWebhook({ url, events: ["action.proposed"] })
      const error = refusalOf(refused, url)
      expect(error.message).toBe(`the webhook cannot be saved: url: the host ${name} does not resolve to a public address`)
      for (const address of addresses) expect(refused.text).not.toContain(address)
    })

    it("refuses at connect time a saved name that now resolves to a non-public address (DNS rebinding), without saying the address", async () => {
      const { addresses, id, name } = rebound
      const seen = receiver.received.length
      expect((await p.as("key", "POST", `/webhooks/${id}/test`)).status).toBe(202)
      const log = await waitFor("the refused attempt", () => deliveriesOf(id), (d) => d.length > 0 && d[0]!.lastError !== null, {
        show: (d) => JSON.stringify(d)
      })
      expect(log[0]).toMatchObject({ status: "pending", lastStatusCode: null, lastError: `the host ${name} does not resolve to a public address` })
      for (const address of addresses) expect(JSON.stringify(log)).not.toContain(address)
      expect(receiver.received.length).toBe(seen)
    })
  })

  it("does not follow a redirect: the delivery fails with the 3xx and the redirect's target sees nothing", async () => {
    await deleteAll()
    const id = createdOf(await createWebhook({ url: `${receiver.url}/redirecting`, events: ["action.proposed"] })).webhook.webhookId
    receiver.answer = () => ({ status: 302, location: `${receiver.url}/elsewhere` })
    const actionId = await queue()
    await waitFor("the redirected attempt", () => Promise.resolve(requestsFor(actionId)), (r) => r.length > 0)
    const log = await waitFor("the delivery log", () => deliveriesOf(id), (d) => d.length > 0 && d[0]!.lastStatusCode !== null)
    expect(log[0]).toMatchObject({ status: "pending", lastStatusCode: 302 })
    expect(log[0]!.lastError).toMatch(/not followed/)
    expect(receiver.received.some((r) => r.rawBody.length > 0 && r.answered === 200 && JSON.stringify(r.body).includes(actionId))).toBe(false)
    receiver.answer = () => ({ status: 200 })
  })
})
