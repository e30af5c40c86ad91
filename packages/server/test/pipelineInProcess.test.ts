/**
 * The pipeline in one process (docs/decisions/pipeline.md): a key's proposal is held for review, a person
 * approves it, and the apply worker writes it to the upstream. Proposals, Approvals and Apply run on their
 * `Test` layers over the embedded database; the upstream is the simulator, over HTTP as in production; no
 * server process is started.
 */
import type { Principal } from "@acs/domain/Principal"
import { layer } from "./support/layerBlock.ts"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Duration, Effect, Layer, Option, Schedule } from "effect"
import { expect } from "vitest"
import { Accounts } from "../src/accounts/Accounts.ts"
import { Connections } from "../src/accounts/Connections.ts"
import { kindNamed } from "../src/actions/kinds/Catalog.ts"
import { Approvals } from "../src/actions/pipeline/Approvals.ts"
import { Proposals } from "../src/actions/pipeline/Proposals.ts"
import { UpstreamPortLive } from "../src/AppLayer.ts"
import { Access } from "../src/auth/Access.ts"
import { RateLimits } from "../src/limits/RateLimits.ts"
import { Jobs } from "../src/queue/Jobs.ts"
import { makeEntityWrites, readEntities } from "../src/warehouse/SyncEntities.ts"
import { Apply } from "../src/worker/Apply.ts"
import { ChangesetRun } from "../src/worker/ChangesetRun.ts"
import { WorkerLive } from "../src/worker/Worker.ts"
import { WAIT_MS } from "./support/wait.ts"

const ORG = "org_in_process"

/** A write key of the org (its proposals always wait for review) and an admin person, another root. */
const agent: Principal = {
  kind: "key",
  id: "key_in_process",
  name: "in-process agent",
  orgId: ORG,
  scope: "write",
  canApprove: false,
  binding: { kind: "org" },
  role: null,
  expiresAt: null,
  root: { kind: "key", id: "key_in_process", name: "in-process agent" }
}

const reviewer: Principal = {
  kind: "person",
  id: "psn_in_process",
  name: "in-process reviewer",
  orgId: ORG,
  scope: "admin",
  canApprove: true,
  binding: { kind: "org" },
  role: "admin",
  expiresAt: null,
  root: { kind: "person", id: "psn_in_process", name: "in-process reviewer" }
}

const TestLayer = WorkerLive.pipe(
  Layer.provideMerge(Access.Default),
  Layer.provideMerge(Layer.mergeAll(Accounts.Default, RateLimits.Default, Jobs.Default, ChangesetRun.Default)),
  // One embedded database under all three: their Test layers share it when built together.
  Layer.provideMerge(Layer.mergeAll(Proposals.Test, Approvals.Test, Apply.Test)),
  Layer.provide(UpstreamPortLive),
  Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([
    // The connection's credentials are sealed with this key, not one written under ./.acs.
    ["ACS_SECRETS_KEY", Buffer.alloc(32, 7).toString("base64")],
    ["WORKER_CONCURRENCY", "1"]
  ]))))
)

/** The org, connected to the simulator, with its first account imported and its entities in the warehouse. */
const arrange = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const connections = yield* Connections
  const accounts = yield* Accounts
  yield* sql`INSERT INTO orgs (org_id, name) VALUES (${ORG}, 'In-process org')`
  yield* connections.save(ORG, { provider: "simulator", apiVersion: "v1" })
  const client = yield* connections.clientFor(ORG)
  const upstream = (yield* client.accounts)[0]!
  const imported = yield* connections.importInto(ORG, [upstream.upstreamAccountId])
  const account = Option.getOrThrow(yield* accounts.find(imported.created[0]!))
  // What a sync writes of the entities (warehouse/SyncEntities.ts), read whole from the simulator.
  const campaigns = yield* client.campaigns(account.upstreamAccountId)
  const entities = yield* readEntities(client, account.upstreamAccountId, campaigns)
  yield* makeEntityWrites(sql).replaceEntities(account.projectId, { ...entities, readOnly: false })
  const campaign = campaigns.find((c) => c.dailyBudgetMicros !== null && c.status === "ENABLED" && !c.deleted)!
  return { account, campaign, client }
})

const statusOf = (actionId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly status: string }>`SELECT status FROM actions WHERE action_id = ${actionId}`.pipe(
      Effect.map((rows) => rows[0]?.status)
    ))

layer(TestLayer, { excludeTestServices: true, timeout: Duration.minutes(5) })("the pipeline in one process", (it) => {
  it.effect("applies a key's budget change once a person approves it, on the simulator", () =>
    Effect.gen(function*() {
      const access = yield* Access
      const proposals = yield* Proposals
      const approvals = yield* Approvals
      const { account, campaign, client } = yield* arrange
      const newDailyBudgetMicros = campaign.dailyBudgetMicros! + 100_000

      const proposed = yield* proposals.propose({
        grant: yield* access.checkAs(agent, "proposeBudgetChange", account.projectId, false),
        kind: kindNamed("budget_change"),
        body: { campaignId: campaign.campaignId, newDailyBudgetMicros, reason: "in-process pipeline" },
        idempotency: undefined
      })
      expect(proposed.response).toMatchObject({ kind: "budget_change", mode: "queued", status: "proposed" })
      const actionId = proposed.response.actionId

      const approved = yield* approvals.approve(yield* access.checkAs(reviewer, "approveAction", account.projectId, false), actionId)
      expect(approved).toMatchObject({ actionId, status: "approved" })

      // The worker claims the job the approval enqueued (woken in-process) and applies it.
      yield* statusOf(actionId).pipe(
        Effect.repeat({ schedule: Schedule.spaced(Duration.millis(100)), until: (status) => status !== "approved" && status !== "applying" }),
        Effect.timeoutFail({ duration: Duration.millis(WAIT_MS), onTimeout: () => new Error(`action ${actionId} was never applied`) })
      )
      expect(yield* statusOf(actionId)).toBe("applied")
      const upstream = yield* client.campaign(account.upstreamAccountId, campaign.campaignId)
      expect(upstream.dailyBudgetMicros).toBe(newDailyBudgetMicros)
    }).pipe(Effect.orDie))
})
