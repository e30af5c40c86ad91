/**
 * Approval expiry (docs/contract.md 3.2) with the test clock: the sweep and the approval's own check
 * (actions/pipeline/ApprovalExpiry.ts) run in this process against the real test PostgreSQL, their "now" taken from
 * Effect's Clock, which TestClock moves. The TTL counts from when the action was queued (created, or demoted
 * back to the queue), whatever touched the row since. Approving an expired action over HTTP (409) is in
 * events.test.ts.
 */
import { layer } from "./support/layerBlock.ts"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Duration, Effect, Layer, TestClock, TestContext } from "effect"
import { expect } from "vitest"
import { ApprovalExpiry } from "../src/actions/pipeline/ApprovalExpiry.ts"
import { Transitions } from "../src/actions/pipeline/Transitions.ts"
import { databaseLayer } from "../src/db/Database.ts"
import { createDatabase, insertAccount, insertOrg } from "./support/database.ts"

const ORG = "org_expiry"
const PROJECT = "prj_expiry"
const TTL = Duration.hours(72)
const PERSON = { kind: "person" as const, id: "p_1", name: "Pat" }

const TestDatabase = Layer.unwrapEffect(Effect.promise(async () => {
  const url = await createDatabase()
  await insertOrg(url, ORG)
  await insertAccount(url, ORG, PROJECT)
  return databaseLayer("approval expiry test").pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url]]))))
  )
}))

const TestLayer = ApprovalExpiry.DefaultWithoutDependencies.pipe(
  Layer.provideMerge(Transitions.Default),
  Layer.provideMerge(TestDatabase)
)

/** A key's proposal queued for a human now (the database's clock); its id. */
const queue = Effect.flatMap(Transitions, (transitions) =>
  transitions.append({
    orgId: ORG,
    projectId: PROJECT,
    kind: "keyword_status",
    mode: "queued",
    status: "proposed",
    riskTier: "review",
    policyReasons: ["proposed with an API key"],
    summary: "pause a keyword",
    reason: "expiry test",
    payload: {},
    proposedBy: { kind: "key", id: "key_1", name: "agent" },
    countsTowardCap: false
  })).pipe(Effect.map((action) => action.actionId))

interface ActionState {
  readonly status: string
  readonly decisionReason: string | null
  /** The transaction that wrote the row last. */
  readonly xmin: string
}

const state = (actionId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<ActionState>`SELECT status, decision_reason, xmin::text AS xmin FROM actions WHERE action_id = ${actionId}`).pipe(
    Effect.map((rows) => rows[0]!)
  )

/** A time of the action's row in the database, as epoch milliseconds. */
const timeOf = (actionId: string, column: "created_at" | "queued_at") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly ms: number }>`SELECT (extract(epoch FROM ${sql(column)}) * 1000)::float8 AS ms FROM actions WHERE action_id = ${actionId}`).pipe(
    Effect.map((rows) => rows[0]!.ms)
  )

interface ExpiredEvent {
  readonly dataText: string
  readonly xmin: string
}

const expiredEvents = (actionId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<ExpiredEvent>`SELECT data::text AS data_text, xmin::text AS xmin FROM events
      WHERE type = 'action.expired' AND data -> 'action' ->> 'actionId' = ${actionId}`)

layer(TestLayer, { excludeTestServices: true })("approval expiry with the test clock", (it) => {
  it.effect("a queued action is kept at TTL − 1 minute and expired at TTL + 1 minute, with its event in the same transaction and the reason", () =>
    Effect.gen(function*() {
      const expiry = yield* ApprovalExpiry
      const actionId = yield* queue
      const queuedAt = yield* timeOf(actionId, "created_at")

      yield* TestClock.setTime(queuedAt + Duration.toMillis(TTL) - 60_000)
      yield* expiry.sweep
      expect((yield* state(actionId)).status).toBe("proposed")
      expect(yield* expiry.expireIfDue(PROJECT, actionId)).toBe(false)
      expect(yield* expiredEvents(actionId)).toEqual([])

      yield* TestClock.adjust(Duration.minutes(2))
      expect(yield* expiry.sweep).toBeGreaterThanOrEqual(1)
      const expired = yield* state(actionId)
      expect(expired.status).toBe("expired")
      expect(expired.decisionReason).toMatch(/nobody approved or rejected it within 72 hours/)
      const events = yield* expiredEvents(actionId)
      expect(events).toHaveLength(1)
      // One transaction wrote both: the event exists because, and only because, the expiry committed.
      expect(events[0]!.xmin).toBe(expired.xmin)
      const action = (JSON.parse(events[0]!.dataText) as { action: { status: string; decisionReason: string } }).action
      expect(action).toMatchObject({ status: "expired", decisionReason: expired.decisionReason })

      // A later pass, or an approval's check, expires nothing twice.
      yield* TestClock.adjust(Duration.hours(1))
      yield* expiry.sweep
      expect(yield* expiry.expireIfDue(PROJECT, actionId)).toBe(false)
      expect(yield* expiredEvents(actionId)).toHaveLength(1)
    }).pipe(Effect.provide(TestContext.TestContext), Effect.orDie))

  it.effect("an expired raise gives back the room it reserved in the spend envelope (docs/contract.md 3.3)", () =>
    Effect.gen(function*() {
      const expiry = yield* ApprovalExpiry
      const sql = yield* SqlClient.SqlClient
      const reserved = sql<{ readonly reserved: string }>`SELECT reserved::text FROM acs_account_envelope(${PROJECT})`.pipe(
        Effect.map((rows) => Number(rows[0]!.reserved))
      )
      const before = yield* reserved
      const raise = yield* Effect.flatMap(Transitions, (transitions) =>
        transitions.append({
          orgId: ORG,
          projectId: PROJECT,
          kind: "budget_change",
          mode: "queued",
          status: "proposed",
          riskTier: "review",
          policyReasons: ["proposed with an API key"],
          summary: "raise a budget",
          reason: "expiry test",
          payload: { campaignId: "1", campaignName: "c", currency: "USD", priorDailyBudgetMicros: 10_000_000, newDailyBudgetMicros: 12_500_000 },
          proposedBy: { kind: "key", id: "key_1", name: "agent" },
          countsTowardCap: false
        }))
      expect(yield* reserved).toBe(before + 2_500_000)
      yield* TestClock.setTime((yield* timeOf(raise.actionId, "created_at")) + Duration.toMillis(TTL) + 60_000)
      yield* expiry.sweep
      expect((yield* state(raise.actionId)).status).toBe("expired")
      expect(yield* reserved).toBe(before)
    }).pipe(Effect.provide(TestContext.TestContext), Effect.orDie))

  it.effect("an approval's own check expires an action that is due before the sweep comes by", () =>
    Effect.gen(function*() {
      const expiry = yield* ApprovalExpiry
      const actionId = yield* queue
      yield* TestClock.setTime((yield* timeOf(actionId, "created_at")) + Duration.toMillis(TTL) + 60_000)
      expect(yield* expiry.expireIfDue(PROJECT, actionId)).toBe(true)
      expect((yield* state(actionId)).status).toBe("expired")
      expect(yield* expiredEvents(actionId)).toHaveLength(1)
    }).pipe(Effect.provide(TestContext.TestContext), Effect.orDie))

  it.effect("the TTL counts from the queueing: a demoted action waits afresh, and a later touch of the row restarts nothing", () =>
    Effect.gen(function*() {
      const expiry = yield* ApprovalExpiry
      const transitions = yield* Transitions
      const sql = yield* SqlClient.SqlClient

      // Queued 100 hours ago (arranged), approved, then demoted back to the queue by its apply now.
      const demoted = yield* queue
      yield* sql`UPDATE actions SET created_at = created_at - interval '100 hours' WHERE action_id = ${demoted}`
      expect(yield* transitions.approve({ projectId: PROJECT, actionId: demoted }, PERSON)).toBe(true)
      expect(yield* transitions.demote({ projectId: PROJECT, actionId: demoted }, ["drift: the budget changed upstream"])).toBe(true)
      const demotedAt = yield* timeOf(demoted, "queued_at")

      // Queued now; something writes the row ten hours later (a column no queueing is about).
      const touched = yield* queue
      const touchedQueuedAt = yield* timeOf(touched, "created_at")
      yield* sql`UPDATE actions SET updated_at = created_at + interval '10 hours' WHERE action_id = ${touched}`

      yield* TestClock.setTime(demotedAt + Duration.toMillis(TTL) - 60_000)
      yield* expiry.sweep
      expect((yield* state(demoted)).status).toBe("proposed")

      yield* TestClock.setTime(Math.max(demotedAt, touchedQueuedAt) + Duration.toMillis(TTL) + 60_000)
      yield* expiry.sweep
      expect((yield* state(demoted)).status).toBe("expired")
      expect((yield* state(touched)).status).toBe("expired")
    }).pipe(Effect.provide(TestContext.TestContext), Effect.orDie))
})
