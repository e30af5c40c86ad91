/**
 * The typed RPC surface (`/rpc`) with the client internal services use (`AcsClient` from packages/domain)
 * against the started server: reads, proposals with an idempotency key, decisions and revert round-trip, a
 * changeset opened, filled, submitted and read back, and refusals arrive as the SPEC error classes with their fields.
 */
import { isProposalResponse } from "@acs/domain/Actions"
import { AcsClient } from "@acs/domain/AcsClient"
import { CreatedKey } from "@acs/domain/ApiKeys"
import { Effect, Either, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"
import { BOOTSTRAP_KEY } from "./support/server.ts"

let p: Pipeline

const withClient = <A, E>(key: string, use: (client: AcsClient["Type"]) => Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.flatMap(AcsClient, use).pipe(Effect.provide(AcsClient.layer({ url: p.server.baseUrl, key })), Effect.scoped))

const asBootstrap = <A, E>(use: (client: AcsClient["Type"]) => Effect.Effect<A, E>) => withClient(BOOTSTRAP_KEY, use)

beforeAll(async () => {
  p = await startPipeline({ seed: 66 })
})

afterAll(async () => {
  await p?.close()
})

describe("RPC", () => {
  it("reads the same rows as REST", async () => {
    const viaRpc = await asBootstrap((client) =>
      client.listCampaigns({ path: { projectId: p.account.projectId }, urlParams: { days: 30, limit: 3 } })
    )
    const viaRest = await p.as("key", "GET", `/accounts/${p.account.projectId}/campaigns?days=30&limit=3`)
    expect(viaRpc).toEqual(viaRest.body)
    expect(viaRpc.campaigns).toHaveLength(3)
    const accounts = await asBootstrap((client) => client.listAccounts({}))
    expect(accounts.accounts.map((a) => a.projectId)).toContain(p.account.projectId)
  })

  it("proposes with an idempotency key, replays, approves, applies and reverts", async () => {
    const campaign = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).find((c) => c.dailyBudgetMicros !== null)!
    const target = Math.round((campaign.dailyBudgetMicros! * 0.9) / 10_000) * 10_000
    const propose = (client: AcsClient["Type"]) =>
      client.proposeBudgetChange({
        path: { projectId: p.account.projectId },
        payload: { campaignId: campaign.campaignId, newDailyBudgetMicros: target, reason: "rpc" },
        headers: { "idempotency-key": "rpc-round-trip" }
      }).pipe(Effect.filterOrDieMessage(isProposalResponse, "a preview, not a proposal"))
    const first = await asBootstrap(propose)
    expect(first).toMatchObject({ kind: "budget_change", mode: "queued", status: "proposed" })
    const replay = await asBootstrap(propose)
    expect(replay).toMatchObject({ actionId: first.actionId, replayed: true })

    const approve = (client: AcsClient["Type"]) =>
      client.approveAction({ path: { projectId: p.account.projectId, actionId: first.actionId } })
    // Four eyes: the proposer cannot approve its own change.
    const own = await asBootstrap((client) => Effect.either(approve(client)))
    expect(Either.isLeft(own) && own.left).toMatchObject({ _tag: "ForbiddenScope", required_grant: "second_approver" })
    const approved = await withClient(await p.approverKey(), approve)
    expect(approved.status).toBe("approved")
    expect((await p.settle(first.actionId)).status).toBe("applied")
    const record = await asBootstrap((client) => client.getAction({ path: { projectId: p.account.projectId, actionId: first.actionId } }))
    expect(record).toMatchObject({ status: "applied", payload: { newDailyBudgetMicros: target } })

    const revert = await asBootstrap((client) => client.revertAction({ path: { projectId: p.account.projectId, actionId: first.actionId } }))
    expect(revert).toMatchObject({ kind: "budget_change", mode: "auto_applied" })
    if (!isProposalResponse(revert)) throw new Error("a revert without preview answers the recorded action")
    expect((await p.settle(revert.actionId)).status).toBe("applied")

    const ledger = await asBootstrap((client) =>
      client.listActions({ path: { projectId: p.account.projectId }, urlParams: { limit: 2 } })
    )
    expect(ledger.actions.map((a) => a.actionId)).toEqual([revert.actionId, first.actionId])
  })

  it("rejects a pending action and answers a second decision with Conflict", async () => {
    const campaign = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).find((c) => c.dailyBudgetMicros !== null)!
    const proposed = await asBootstrap((client) =>
      client.proposeCampaignStatus({
        path: { projectId: p.account.projectId },
        payload: { campaignId: campaign.campaignId, status: campaign.status === "ENABLED" ? "PAUSED" : "ENABLED", reason: "rpc" }
      }).pipe(Effect.filterOrDieMessage(isProposalResponse, "a preview, not a proposal"))
    )
    const path = { projectId: p.account.projectId, actionId: proposed.actionId }
    const rejected = await asBootstrap((client) => client.rejectAction({ path, payload: { reason: "not now" } }))
    expect(rejected).toMatchObject({ status: "rejected", decisionReason: "not now" })
    const again = await asBootstrap((client) => Effect.either(client.approveAction({ path })))
    expect(Either.isLeft(again) && again.left._tag).toBe("Conflict")
  })

  it("opens a changeset, adds members (each answered on its own), submits its plan and reads it back", async () => {
    // Campaigns from the end of the list: the other tests here change the first one.
    const campaigns = (await p.run(p.upstream.campaigns(p.account.upstreamAccountId))).filter((c) => c.dailyBudgetMicros !== null).slice(-2)
    expect(campaigns).toHaveLength(2)
    const projectId = p.account.projectId
    const opened = await asBootstrap((client) => client.openChangeset({ path: { projectId }, payload: { title: "rpc pass", onFailure: "continue" } }))
    expect(opened).toMatchObject({ status: "open", onFailure: "continue", members: { total: 0 } })
    const path = { projectId, changesetId: opened.changesetId }

    const added = await asBootstrap((client) =>
      client.addChangesetMembers({
        path,
        payload: {
          proposals: [
            ...campaigns.map((c) => ({
              kind: "budget_change" as const,
              body: { campaignId: c.campaignId, newDailyBudgetMicros: c.dailyBudgetMicros! + 2_000_000, reason: "rpc changeset" }
            })),
            { kind: "budget_change" as const, body: { campaignId: campaigns[0]!.campaignId, reason: "no budget named" } }
          ]
        }
      }))
    expect(added).toMatchObject({ changesetId: opened.changesetId, added: 2, refused: 1 })
    expect(added.results.map((r) => r.status)).toEqual([201, 201, 400])
    expect(added.results[2]?.error?.code).toBe("invalid_request")

    const submitted = await asBootstrap((client) => client.submitChangeset({ path, urlParams: {} }))
    expect(submitted).toMatchObject({
      status: "queued",
      members: { total: 2, pending: 2 },
      impact: { dailyBudgetDeltaMicros: 4_000_000, byKind: { budget_change: 2 } },
      decision: { mode: "queued" }
    })
    expect(submitted.planHash).toEqual(expect.any(String))

    const detail = await asBootstrap((client) => client.getChangeset({ path }))
    expect(detail.changeset).toEqual(submitted)
    expect(detail.memberActions.map((a) => a.actionId)).toEqual(submitted.plan?.order)
    expect(detail.memberActions.map((a) => [a.changesetId, a.status])).toEqual([[opened.changesetId, "proposed"], [opened.changesetId, "proposed"]])
    // A submitted changeset's members are frozen: one more is a Conflict.
    const late = await asBootstrap((client) =>
      Effect.either(client.addChangesetMembers({
        path,
        payload: { proposals: [{ kind: "budget_change", body: { campaignId: campaigns[0]!.campaignId, newDailyBudgetMicros: 9_000_000, reason: "late" } }] }
      })))
    expect(Either.isLeft(late) && late.left._tag).toBe("Conflict")
  })

  it("refuses with the SPEC error classes: Unauthorized, ForbiddenScope with its fields, AccountMismatch", async () => {
    const unauthorized = await withClient("acs_not_a_key", (client) => Effect.either(client.listAccounts({})))
    expect(Either.isLeft(unauthorized) && unauthorized.left._tag).toBe("Unauthorized")

    const created = await p.as("key", "POST", "/keys", { name: "rpc reader", scope: "read", projectIds: [p.account.projectId] })
    const reader = Schema.decodeUnknownSync(CreatedKey)(created.body).secret
    const refused = await withClient(reader, (client) =>
      Effect.either(client.proposeCampaignStatus({
        path: { projectId: p.account.projectId },
        payload: { campaignId: "1", status: "PAUSED", reason: "x" }
      }))
    )
    expect(Either.isLeft(refused) && refused.left).toMatchObject({ _tag: "ForbiddenScope", required_scope: "write", key_scope: "read" })

    const mismatch = await withClient(reader, (client) =>
      Effect.either(client.listCampaigns({ path: { projectId: p.readOnlyAccount.projectId }, urlParams: {} }))
    )
    expect(Either.isLeft(mismatch) && mismatch.left._tag).toBe("AccountMismatch")
  })
})
