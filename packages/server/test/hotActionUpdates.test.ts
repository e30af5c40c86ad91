/**
 * Migration 0024: the apply path's status changes are heap-only tuple (HOT) updates, so no index of `actions`
 * names a column they change; and the queue's column `pending` is true exactly while an action is proposed,
 * whichever transition moved it, and cannot be written. A new index over `status` (or over anything an apply
 * writes) fails the first test.
 */
import { layer } from "./support/layerBlock.ts"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer } from "effect"
import { expect } from "vitest"
import { Transitions } from "../src/actions/pipeline/Transitions.ts"
import { databaseLayer } from "../src/db/Database.ts"
import { createDatabase, insertAccount, insertOrg } from "./support/database.ts"

const ORG = "org_hot"
const PROJECT = "prj_hot"
const PERSON = { kind: "person" as const, id: "p_1", name: "Pat" }

const TestDatabase = Layer.unwrapEffect(Effect.promise(async () => {
  const url = await createDatabase()
  await insertOrg(url, ORG)
  await insertAccount(url, ORG, PROJECT)
  return databaseLayer("hot action updates test").pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url]]))))
  )
}))

const TestLayer = Transitions.Default.pipe(Layer.provideMerge(TestDatabase))

const append = (status: "proposed" | "approved") =>
  Effect.flatMap(Transitions, (transitions) =>
    transitions.append({
      orgId: ORG,
      projectId: PROJECT,
      kind: "budget_change",
      mode: status === "approved" ? "auto_applied" : "queued",
      status,
      riskTier: "safe",
      policyReasons: [],
      summary: "cut a budget by a cent",
      reason: "test",
      payload: { campaignId: "1", newDailyBudgetMicros: 99_990_000 },
      proposedBy: PERSON,
      countsTowardCap: status === "approved"
    }).pipe(Effect.map((action) => action.actionId)))

/** The row's status and queue flag. */
const queued = (actionId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly status: string; readonly pending: boolean }>`SELECT status, pending FROM actions WHERE action_id = ${actionId}`.pipe(
      Effect.map((rows) => rows[0]!)
    ))

layer(TestLayer, { excludeTestServices: true })("HOT action updates", (it) => {
  it.effect("an auto-applied action's two status changes are HOT updates", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const transitions = yield* Transitions
      // pg_stat_xact_user_tables counts this transaction's own updates, at once.
      const counts = yield* sql.withTransaction(Effect.gen(function*() {
        const actionId = yield* append("approved")
        expect(yield* transitions.markApplying({ projectId: PROJECT, actionId: actionId })).toBe(true)
        expect(yield* transitions.markApplied({ projectId: PROJECT, actionId: actionId }, { warnings: [], result: { campaignId: "1" } })).toBe(true)
        return yield* sql<{ readonly updates: string; readonly hot: string }>`
          SELECT n_tup_upd AS updates, n_tup_hot_upd AS hot FROM pg_stat_xact_user_tables WHERE relname = 'actions'`
      }))
      expect(counts[0]).toEqual({ updates: "2", hot: "2" })
    }).pipe(Effect.orDie))

  it.effect("pending is true exactly while proposed, across approve, reject, expire and demote", () =>
    Effect.gen(function*() {
      const transitions = yield* Transitions
      const approved = yield* append("proposed")
      expect(yield* queued(approved)).toEqual({ status: "proposed", pending: true })
      expect(yield* transitions.approve({ projectId: PROJECT, actionId: approved }, PERSON)).toBe(true)
      expect(yield* queued(approved)).toEqual({ status: "approved", pending: false })
      expect(yield* transitions.demote({ projectId: PROJECT, actionId: approved }, ["drift: changed upstream"])).toBe(true)
      expect(yield* queued(approved)).toEqual({ status: "proposed", pending: true })
      expect(yield* transitions.reject({ projectId: PROJECT, actionId: approved }, PERSON, "no")).toBe(true)
      expect(yield* queued(approved)).toEqual({ status: "rejected", pending: false })

      const expired = yield* append("proposed")
      expect(yield* transitions.expire({ projectId: PROJECT, actionId: expired }, "nobody decided within 72 hours")).toBe(true)
      expect(yield* queued(expired)).toEqual({ status: "expired", pending: false })

      const applied = yield* append("approved")
      expect(yield* queued(applied)).toEqual({ status: "approved", pending: false })
      yield* transitions.markApplying({ projectId: PROJECT, actionId: applied })
      yield* transitions.markApplied({ projectId: PROJECT, actionId: applied }, { warnings: [], result: {} })
      expect(yield* queued(applied)).toEqual({ status: "applied", pending: false })
    }).pipe(Effect.orDie))

  it.effect("no statement can write pending: PostgreSQL derives it from the status", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const actionId = yield* append("proposed")
      const refused = yield* sql`UPDATE actions SET pending = false WHERE action_id = ${actionId}`.pipe(Effect.flip)
      expect(String(refused.cause)).toContain("can only be updated to DEFAULT")
      expect(yield* queued(actionId)).toEqual({ status: "proposed", pending: true })
    }).pipe(Effect.orDie))
})
