/**
 * Webhook deliveries are claimed per org, in turn (docs/decisions/events-and-webhooks.md "Deliveries are claimed per org, in
 * turn"), against the real server process and real HTTP receivers: one delivery worker with small batches, an org
 * flooded with events for four endpoints, and another org's one event, which is delivered within a pass or two of
 * the worker over the orgs, not after the flood.
 */
import { CreatedWebhook } from "@acs/domain/Webhooks"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
import { type Receiver, startReceiver } from "./support/receiver.ts"
import { type Answer, call } from "./support/server.ts"
import { waitFor } from "./support/wait.ts"

const ORG_B = "org_turns_b"
const ORG_B_KEY = "acs_test_turns_org_b_0123456789abcdefghijklmnopqr"
const ENDPOINTS_A = 4
const FLOOD = 250
// One worker, four deliveries a claim: the flood is FLOOD claims of org A's.
const ENV = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true", WORKER_CONCURRENCY: "0", WEBHOOK_CONCURRENCY: "1", WEBHOOK_BATCH: "4" }

let p: Pipeline
let flooded: Receiver
let quiet: Receiver

beforeAll(async () => {
  ;[flooded, quiet] = await Promise.all([startReceiver(), startReceiver()])
  p = await startPipeline({ env: ENV })
  await p.sql("INSERT INTO orgs (org_id, name) VALUES ($1, 'Turns B')", [ORG_B])
  await p.sql(
    `INSERT INTO api_keys (key_id, org_id, name, secret_hash, scope, can_approve, binding_kind, project_ids, created_by)
     VALUES ('key_turns_b', $1, 'org B admin', encode(sha256($2::bytea), 'hex'), 'admin', false, 'org', '[]', 'operator')`,
    [ORG_B, ORG_B_KEY]
  )
  await p.restart(ENV)
}, 600_000)

afterAll(async () => {
  await p?.close()
  await Promise.all([flooded?.close(), quiet?.close()])
})

const created = (answer: Answer) => {
  expect(answer.status, answer.text).toBe(201)
  return Schema.decodeUnknownSync(CreatedWebhook)(answer.body).webhook.webhookId
}

/** `n` events of `orgId` committed at once, numbered from `from`, and the sequencer woken for them. */
const commitEvents = async (orgId: string, prefix: string, n: number) => {
  await p.sql(
    `INSERT INTO events (event_id, org_id, type, data) SELECT $2 || i, $1, 'sync.succeeded', jsonb_build_object('n', i) FROM generate_series(1, $3::int) i`,
    [orgId, prefix, n]
  )
  await p.sql("SELECT pg_notify('acs_events_written', 'test')")
}

describe("deliveries claimed per org, in turn", () => {
  it("delivers another org's event within a pass or two while one org's flood is delivered", async () => {
    const orgA = (await p.sql<{ org_id: string }>("SELECT org_id FROM accounts WHERE project_id = $1", [p.account.projectId]))[0]!.org_id
    for (let n = 0; n < ENDPOINTS_A; n++) {
      created(await p.as("key", "POST", "/webhooks", { url: `${flooded.url}?endpoint=${n}`, events: ["sync.succeeded"] }))
    }
    created(await call(`${p.server.api}/webhooks`, { method: "POST", key: ORG_B_KEY, body: { url: quiet.url, events: ["sync.succeeded"] } }))

    await commitEvents(orgA, "evt_flood_", FLOOD)
    await waitFor("the flood's first deliveries", () => Promise.resolve(flooded.received.length), (n) => n > 0, { intervalMs: 20 })
    const before = flooded.received.length
    await commitEvents(ORG_B, "evt_quiet_", 1)
    const got = await waitFor("org B's event", () => Promise.resolve(quiet.received), (received) => received.length > 0, {
      intervalMs: 20,
      show: () => `org A's ${flooded.received.length} of ${FLOOD * ENDPOINTS_A}\n${p.server.logs().slice(-3000)}`
    })
    const meanwhile = flooded.received.length - before
    console.info(`org B's event delivered after ${meanwhile} of org A's ${FLOOD * ENDPOINTS_A} deliveries (${before} before it)`)
    expect(got.map((r) => r.eventId)).toEqual(["evt_quiet_1"])
    // A pass gives each ready org one claim of four; a few passes' worth at most went to org A meanwhile, not the flood.
    expect(meanwhile).toBeLessThan((FLOOD * ENDPOINTS_A) / 4)

    // The flood is delivered all the same, each event once to each endpoint.
    await waitFor("the whole flood", () => Promise.resolve(flooded.received.length), (n) => n >= FLOOD * ENDPOINTS_A, {
      show: (n) => `${n} of ${FLOOD * ENDPOINTS_A}`
    })
    expect(new Set(flooded.received.map((r) => `${r.path} ${r.eventId}`)).size).toBe(FLOOD * ENDPOINTS_A)
  }, 600_000)
})
