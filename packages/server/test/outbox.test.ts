/**
 * The outbox (docs/contract.md 6), against a real Postgres: a transition writes its event in the transaction of the
 * change, so an event exists if and only if the change committed — a transition rolled back with its
 * transaction leaves neither the change nor the event; one that does not happen (its guard) writes none.
 */
import { layer } from "./support/layerBlock.ts"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { expect } from "vitest"
import { Transitions } from "../src/actions/pipeline/Transitions.ts"
import { databaseLayer } from "../src/db/Database.ts"
import { createDatabase, insertAccount, insertOrg } from "./support/database.ts"

const ORG = "org_outbox"
const PROJECT = "prj_outbox"
const PERSON = { kind: "person" as const, id: "p_1", name: "Pat" }

const TestDatabase = Layer.unwrapEffect(Effect.promise(async () => {
  const url = await createDatabase()
  await insertOrg(url, ORG)
  await insertAccount(url, ORG, PROJECT)
  return databaseLayer("outbox test").pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url]]))))
  )
}))

const TestLayer = Transitions.Default.pipe(Layer.provideMerge(TestDatabase))

const queued = (transitions: Transitions, revertOf?: string) =>
  transitions.append({
    orgId: ORG,
    projectId: PROJECT,
    kind: "budget_change",
    mode: "queued",
    status: "proposed",
    riskTier: "safe",
    policyReasons: ["proposed with an API key"],
    summary: "Change the daily budget",
    reason: "outbox test",
    payload: { campaignId: "1", newDailyBudgetMicros: 1 },
    proposedBy: PERSON,
    countsTowardCap: false,
    ...(revertOf === undefined ? {} : { revertOf })
  })

const eventsOf = (actionId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly type: string; readonly orgId: string; readonly projectId: string; readonly data: { readonly action: { readonly actionId: string; readonly status: string } } }>`
      SELECT type, org_id, project_id, data FROM events WHERE data -> 'action' ->> 'actionId' = ${actionId} ORDER BY seq`).pipe(Effect.orDie)

const statusOf = (actionId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ readonly status: string }>`SELECT status FROM actions WHERE action_id = ${actionId}`).pipe(
    Effect.orDie,
    Effect.map((rows) => rows[0]!.status)
  )

layer(TestLayer, { timeout: 120_000 })("the outbox", (it) => {
  it.effect("a queued proposal committed is one action.proposed event carrying the action", () =>
    Effect.gen(function*() {
      const transitions = yield* Transitions
      const action = yield* queued(transitions)
      const events = yield* eventsOf(action.actionId)
      expect(events.map((e) => e.type)).toEqual(["action.proposed"])
      expect(events[0]).toMatchObject({ orgId: ORG, projectId: PROJECT, data: { action: { actionId: action.actionId, status: "proposed" } } })
    }))

  it.effect("a change rolled back leaves no event; the same change committed leaves exactly one", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const transitions = yield* Transitions
      const action = yield* queued(transitions)
      // The approval happens inside the transaction, then the transaction fails: both are rolled back.
      const rolledBack = yield* sql.withTransaction(
        transitions.approve(action, PERSON).pipe(Effect.zipRight(Effect.fail("something later in the transaction failed")))
      ).pipe(Effect.exit)
      expect(Exit.isFailure(rolledBack)).toBe(true)
      expect(yield* statusOf(action.actionId)).toBe("proposed")
      expect((yield* eventsOf(action.actionId)).map((e) => e.type)).toEqual(["action.proposed"])

      expect(yield* sql.withTransaction(transitions.approve(action, PERSON))).toBe(true)
      expect((yield* eventsOf(action.actionId)).map((e) => e.type)).toEqual(["action.proposed", "action.approved"])
      // A transition its guard refuses changes nothing and announces nothing.
      expect(yield* transitions.approve(action, PERSON)).toBe(false)
      expect((yield* eventsOf(action.actionId)).map((e) => e.type)).toEqual(["action.proposed", "action.approved"])
    }))

  it.effect("every status change is its event: applied with warnings, failed with its step, demoted with its reasons, expired, reverted", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const transitions = yield* Transitions
      // Outside a transaction a transition opens its own: the event still commits with it.
      const a = yield* queued(transitions)
      yield* transitions.approve(a, PERSON)
      yield* transitions.markApplying(a)
      yield* transitions.demote(a, ["drift: the budget changed upstream"])
      yield* transitions.expire(a, "nobody decided within 72 hours")
      const events = yield* eventsOf(a.actionId)
      expect(events.map((e) => e.type)).toEqual(["action.proposed", "action.approved", "action.demoted", "action.expired"])
      expect(events[2]!.data).toMatchObject({ reasons: ["drift: the budget changed upstream"], action: { status: "proposed" } })
      expect(events[3]!.data.action).toMatchObject({ status: "expired", decisionReason: "nobody decided within 72 hours" })

      const b = yield* queued(transitions)
      yield* transitions.approve(b, PERSON)
      yield* transitions.fail(b, { step: 2, stepName: "create ad group", message: "boom", upstreamRequestId: "r1" })
      expect((yield* eventsOf(b.actionId)).at(-1)).toMatchObject({
        type: "action.failed",
        data: { action: { failure: { step: 2, stepName: "create ad group" } } }
      })

      // An original applied, then its compensation applied: the compensation's applied (with warnings), the original's reverted.
      const original = yield* queued(transitions)
      yield* transitions.approve(original, PERSON)
      yield* transitions.markApplying(original)
      yield* transitions.markApplied(original, { warnings: [], result: {} })
      const compensation = yield* queued(transitions, original.actionId)
      yield* sql.withTransaction(transitions.linkRevert(original.projectId, original.actionId, compensation.actionId))
      yield* transitions.approve(compensation, PERSON)
      yield* transitions.markApplying(compensation)
      yield* transitions.markApplied(compensation, { warnings: ["row 2: keyword exists"], result: {} })
      expect((yield* eventsOf(compensation.actionId)).at(-1)).toMatchObject({
        type: "action.applied",
        data: { action: { status: "applied", warnings: ["row 2: keyword exists"] } }
      })
      expect((yield* eventsOf(original.actionId)).map((e) => e.type)).toEqual([
        "action.proposed",
        "action.approved",
        "action.applied",
        "action.reverted"
      ])
    }))
})
