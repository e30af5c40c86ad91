/**
 * Webhook endpoints isolated from each other, against the real server process (its own delivery
 * workers, default timeout and batch) and real HTTP receivers: an org may have at most
 * WEBHOOK_MAX_ENDPOINTS_PER_ORG endpoints (20), the next refused with 422 `validation_failed` while another org is
 * unaffected (REST and RPC; the CLI's own test says it too); and with 20 endpoints of one org that never answer, a healthy endpoint of another org and one of
 * the same org get a stream of events with a commit → delivery p95 under a second (the review saw 5–10 s and 47 s:
 * the workers waited out each timeout), while the hanging ones back off; an admin's ping is sent at once all the same.
 */
import { AcsClient } from "@acs/domain/AcsClient"
import { isProposalResponse } from "@acs/domain/Actions"
import { ErrorBodies } from "@acs/domain/Errors"
import { CreatedWebhook } from "@acs/domain/Webhooks"
import { Effect, Either, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ApiClient, withApi } from "./support/apiClient.ts"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
import { type Receiver, startReceiver } from "./support/receiver.ts"
import { type Answer, BOOTSTRAP_KEY, call } from "./support/server.ts"
import { sleep, waitFor } from "./support/wait.ts"

const ORG_B = "org_isolation_b"
const ORG_B_KEY = "acs_test_isolation_org_b_0123456789abcdefghijklmn"
const HANGING = 20
/** The stream runs past a timeout (10 s) and a back-off, so the hanging endpoints' probes are in it too. */
const STREAM_MS = 25_000

let p: Pipeline
let hanging: Receiver
let healthyA: Receiver
let healthyB: Receiver
let orgB: { readonly projectId: string; readonly campaignId: string; readonly dailyBudgetMicros: number }
let campaignA: { readonly campaignId: string; readonly dailyBudgetMicros: number }

const ENV = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true", WORKER_CONCURRENCY: "0" }

const asOrgB = (method: string, path: string, body?: unknown) => call(`${p.server.api}${path}`, { method, key: ORG_B_KEY, body })

/** A key's typed client of the server. */
const withKey = <A, E>(key: string, use: (client: ApiClient) => Effect.Effect<A, E>) => withApi(p.server.baseUrl, key, use)

const firstCampaign = async (projectId: string, key: string) => {
  const { campaigns } = await withKey(key, (client) => client.warehouse.listCampaigns({ path: { projectId }, urlParams: { limit: 5 } }))
  return campaigns.flatMap(({ campaignId, dailyBudgetMicros }) =>
    dailyBudgetMicros !== null && dailyBudgetMicros > 0 ? [{ campaignId, dailyBudgetMicros }] : []
  )[0]!
}

beforeAll(async () => {
  ;[hanging, healthyA, healthyB] = await Promise.all([startReceiver(), startReceiver(), startReceiver()])
  hanging.answer = () => "hang"
  p = await startPipeline({ env: ENV })
  // Another org: the demo's EUR account moved into it, with an admin key of its own.
  const { accounts } = await p.api("key", (client) => client.accounts.listAccounts())
  const euro = accounts.find((a) => a.currency === "EUR")!
  const campaign = await firstCampaign(euro.projectId, BOOTSTRAP_KEY)
  await p.sql("INSERT INTO orgs (org_id, name) VALUES ($1, 'Isolation B')", [ORG_B])
  await p.sql("UPDATE accounts SET org_id = $1 WHERE project_id = $2 RETURNING pg_notify('acs_invalidate', 'a:' || project_id)", [ORG_B, euro.projectId])
  await p.sql(
    `INSERT INTO api_keys (key_id, org_id, name, secret_hash, scope, can_approve, binding_kind, project_ids, created_by)
     VALUES ('key_isolation_b', $1, 'org B admin', encode(sha256($2::bytea), 'hex'), 'admin', false, 'org', '[]', 'operator')`,
    [ORG_B, ORG_B_KEY]
  )
  await p.restart(ENV)
  orgB = { projectId: euro.projectId, ...campaign }
  campaignA = await firstCampaign(p.account.projectId, BOOTSTRAP_KEY)
}, 600_000)

afterAll(async () => {
  hanging?.releaseHung()
  await p?.close()
  await Promise.all([hanging?.close(), healthyA?.close(), healthyB?.close()])
})

/** An org's endpoints, by its admin key. */
const webhooksOf = (key: string) => withKey(key, (client) => Effect.map(client.webhooks.listWebhooks(), (listed) => listed.webhooks))

/** The URLs of an org's endpoints. */
const urlsOf = async (key: string) => (await webhooksOf(key)).map((w) => w.url)

const hangingUrl = (n: number) => `${hanging.url}?endpoint=${n}`

const created = (answer: Answer) => {
  expect(answer.status, answer.text).toBe(201)
  return Schema.decodeUnknownSync(CreatedWebhook)(answer.body).webhook.webhookId
}

/** Restarts the server with room for one endpoint more than the hanging ones, once, whichever test asks first. */
let limitRaised = false
const raiseLimit = async () => {
  if (limitRaised) return
  await p.restart({ ...ENV, WEBHOOK_MAX_ENDPOINTS_PER_ORG: String(HANGING + 1) })
  limitRaised = true
}

describe("endpoints per org", () => {
  it("refuses an org's 21st endpoint with 422 validation_failed, and another org is unaffected", async () => {
    for (let n = 0; n < HANGING; n++) {
      created(await p.as("key", "POST", "/webhooks", { url: hangingUrl(n), events: ["action.proposed"] }))
    }
    const refused = await p.as("key", "POST", "/webhooks", { url: healthyA.url, events: ["action.proposed"] })
    expect(refused.status, refused.text).toBe(422)
    // Decoding to the error class checks its code (`validation_failed`).
    const error = Schema.decodeUnknownSync(ErrorBodies.ValidationFailed)(refused.body)
    expect(error.message).toMatch(/20 webhook endpoints, the most it may have/)
    expect(error.validation_errors).toHaveLength(1)
    // The same over RPC, as the error class with its fields.
    const viaRpc = await Effect.runPromise(
      Effect.flatMap(AcsClient, (client) => Effect.either(client.createWebhook({ payload: { url: healthyA.url, events: ["action.proposed"] } }))).pipe(
        Effect.provide(AcsClient.layer({ url: p.server.baseUrl, key: BOOTSTRAP_KEY })),
        Effect.scoped
      )
    )
    expect(Either.isLeft(viaRpc) && viaRpc.left).toMatchObject({ _tag: "ValidationFailed", message: error.message })
    // Nothing was saved.
    expect(await webhooksOf(BOOTSTRAP_KEY)).toHaveLength(HANGING)
    // Another org creates its own.
    created(await asOrgB("POST", "/webhooks", { url: healthyB.url, events: ["action.proposed"] }))
  })

  it("takes its limit from WEBHOOK_MAX_ENDPOINTS_PER_ORG", async () => {
    await raiseLimit()
    created(await p.as("key", "POST", "/webhooks", { url: healthyA.url, events: ["action.proposed"] }))
    const refused = await p.as("key", "POST", "/webhooks", { url: `${healthyA.url}?again`, events: ["action.proposed"] })
    expect(refused.status, refused.text).toBe(422)
  })
})

describe("twenty endpoints that never answer", () => {
  it("leave the healthy endpoints of another org and of their own org a commit → delivery p95 under a second", async () => {
    // Org A: 20 hanging endpoints and a healthy one; org B: a healthy one (as the tests above left them, when
    // they ran).
    await raiseLimit()
    const inA = await urlsOf(BOOTSTRAP_KEY)
    for (const url of [...Array.from({ length: HANGING }, (_, n) => hangingUrl(n)), healthyA.url].filter((u) => !inA.includes(u))) {
      created(await p.as("key", "POST", "/webhooks", { url, events: ["action.proposed"] }))
    }
    if (!(await urlsOf(ORG_B_KEY)).includes(healthyB.url)) {
      created(await asOrgB("POST", "/webhooks", { url: healthyB.url, events: ["action.proposed"] }))
    }
    const listed = await webhooksOf(BOOTSTRAP_KEY)
    const firstHanging = listed.find((w) => w.url === hangingUrl(0))!.webhookId
    const proposed = { A: [] as Array<string>, B: [] as Array<string> }
    const propose = async (org: "A" | "B", step: number) => {
      const [key, projectId, campaign] = org === "A" ? [BOOTSTRAP_KEY, p.account.projectId, campaignA] : [ORG_B_KEY, orgB.projectId, orgB]
      const answer = await withKey(key, (client) =>
        client.proposals.proposeBudgetChange({
          path: { projectId },
          payload: { campaignId: campaign.campaignId, newDailyBudgetMicros: campaign.dailyBudgetMicros + step * 10_000, reason: "isolation" },
          urlParams: {},
          headers: {}
        }))
      if (!isProposalResponse(answer)) throw new Error(`a preview where a proposal was expected: ${JSON.stringify(answer)}`)
      proposed[org].push(answer.actionId)
    }
    const started = Date.now()
    // At least 50 events an org, over at least STREAM_MS: a loaded machine takes longer, not fewer.
    for (let step = 1; step <= 50 || Date.now() - started < STREAM_MS; step++) {
      await propose("A", step)
      await propose("B", step)
      await sleep(50)
    }

    /** Each of `org`'s events at `receiver`, once received: ms from its commit (its createdAt) to receipt. */
    const latencies = (receiver: Receiver, actionIds: ReadonlyArray<string>) => {
      const wanted = new Set(actionIds)
      const seen = new Map<string, number>()
      for (const r of receiver.received) {
        const actionId = (r.body["data"] as { action?: { actionId?: string } } | undefined)?.action?.actionId
        if (actionId !== undefined && wanted.has(actionId) && !seen.has(actionId)) seen.set(actionId, r.receivedAt - Date.parse(String(r.body["createdAt"])))
      }
      return [...seen.values()]
    }
    const p95 = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.max(0, Math.ceil(values.length * 0.95) - 1)] ?? NaN
    const received = () => Promise.resolve({ A: latencies(healthyA, proposed.A), B: latencies(healthyB, proposed.B) })
    const { A, B } = await waitFor("both healthy endpoints to receive every event of their org", received, (l) =>
      l.A.length === proposed.A.length && l.B.length === proposed.B.length, {
      show: (l) =>
        `org A's ${l.A.length} of ${proposed.A.length} (p95 of those ${p95(l.A)} ms), org B's ${l.B.length} of ${proposed.B.length} (p95 ${p95(l.B)} ms)`
    })
    const measured = { A: p95(A), B: p95(B), events: proposed.A.length + proposed.B.length }
    console.info(`commit → delivery p95 with ${HANGING} hanging endpoints: org A ${measured.A} ms, org B ${measured.B} ms (${measured.events} events)`)
    expect(measured.A).toBeLessThan(1_000)
    expect(measured.B).toBeLessThan(1_000)

    // The hanging endpoints were really tried, and backed off: their deliveries pending, with the timeout as
    // their last error, not each of the stream's events sent into them.
    expect(new Set(hanging.received.map((r) => r.path)).size).toBe(HANGING)
    expect(hanging.received.length).toBeLessThan((HANGING * proposed.A.length) / 4)
    const { deliveries } = await p.api("key", (client) => client.webhooks.listWebhookDeliveries({ path: { webhookId: firstHanging }, urlParams: { limit: 200 } }))
    expect(deliveries.length).toBeGreaterThan(0)
    expect(deliveries.every((d) => d.status === "pending")).toBe(true)
    expect(deliveries.some((d) => d.lastError === "no answer within 10000 ms")).toBe(true)
    const states = await p.sql<{ unanswered: number }>(
      "SELECT unanswered FROM webhooks WHERE org_id = (SELECT org_id FROM accounts WHERE project_id = $1) AND url LIKE $2",
      [p.account.projectId, `${hanging.url}?%`]
    )
    expect(states.map((s) => s.unanswered >= 1)).toEqual(Array.from({ length: HANGING }, () => true))
  }, 600_000)

  it("an admin's ping is a backing-off endpoint's next probe, sent at once", async () => {
    const listed = await webhooksOf(BOOTSTRAP_KEY)
    const webhookId = listed.find((w) => w.url === hangingUrl(1))!.webhookId
    // An hour of back-off, with nothing of the endpoint out whose record could shorten it.
    const backOffAnHour = () => p.sql("UPDATE webhooks SET backoff_until = now() + interval '1 hour' WHERE webhook_id = $1", [webhookId])
    await backOffAnHour()
    hanging.releaseHung()
    await waitFor("the endpoint's attempts out to be recorded", () =>
      p.sql<{ out: number }>(
        `SELECT (SELECT count(*)::int FROM webhook_batches WHERE webhook_id = $1)
           + (SELECT count(*)::int FROM webhooks WHERE webhook_id = $1 AND retries_held_until > now()) AS out`,
        [webhookId]
      ), (rows) => rows[0]!.out === 0)
    await backOffAnHour()
    // The typed client decodes a Delivery only from the declared 202.
    const { eventId } = await p.api("key", (client) => client.webhooks.testWebhook({ path: { webhookId } }))
    await waitFor("the ping at the hanging endpoint", () => Promise.resolve(hanging.received.filter((r) => r.eventId === eventId)), (r) => r.length > 0)
  })
})
