/**
 * The action state machine's guards, against a real Postgres: each transition happens only from its own
 * statuses and answers whether it did; a compensation's end settles its original, once. The property runs
 * random transition sequences on one action and a small model predicts every answer and status.
 */
import { layer } from "./support/layerBlock.ts"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Runtime } from "effect"
import fc from "fast-check"
import { expect } from "vitest"
import type { Touched } from "../src/actions/kinds/Kind.ts"
import { Transitions } from "../src/actions/pipeline/Transitions.ts"
import { databaseLayer } from "../src/db/Database.ts"
import { endAppliedRun } from "../src/worker/RunEndStatement.ts"
import { createDatabase, insertAccount, insertOrg } from "./support/database.ts"

const ORG = "org_transitions"
const PROJECT = "prj_transitions"
const PERSON = { kind: "person" as const, id: "p_1", name: "Pat" }
const FAILURE = { step: null, stepName: null, message: "boom", upstreamRequestId: null }

const TestDatabase = Layer.unwrapEffect(Effect.promise(async () => {
  const url = await createDatabase()
  await insertOrg(url, ORG)
  await insertAccount(url, ORG, PROJECT)
  return databaseLayer("transitions test").pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", url]]))))
  )
}))

const TestLayer = Transitions.Default.pipe(Layer.provideMerge(TestDatabase))

type Status = "proposed" | "approved" | "applying" | "applied" | "failed" | "rejected" | "reverted" | "expired"
const STATUSES: ReadonlyArray<Status> = ["proposed", "approved", "applying", "applied", "failed", "rejected", "reverted", "expired"]

/** Each transition on a single action: the statuses it starts from and the one it ends in. */
const MACHINE = {
  approve: { from: ["proposed"], to: "approved" },
  reject: { from: ["proposed"], to: "rejected" },
  expire: { from: ["proposed"], to: "expired" },
  markApplying: { from: ["approved", "applying"], to: "applying" },
  markApplied: { from: ["applying"], to: "applied" },
  fail: { from: ["approved", "applying"], to: "failed" },
  demote: { from: ["approved", "applying"], to: "proposed" }
} as const satisfies Record<string, { readonly from: ReadonlyArray<Status>; readonly to: Status }>
type Move = keyof typeof MACHINE
const MOVES = Object.keys(MACHINE) as ReadonlyArray<Move>

const run = (transitions: Transitions, move: Move, id: string) => {
  const actionId = { projectId: PROJECT, actionId: id }
  switch (move) {
    case "approve":
      return transitions.approve(actionId, PERSON)
    case "reject":
      return transitions.reject(actionId, PERSON, "no")
    case "expire":
      return transitions.expire(actionId, "nobody decided within 72 hours")
    case "markApplying":
      return transitions.markApplying(actionId)
    case "markApplied":
      return transitions.markApplied(actionId, { warnings: [], result: { campaignId: "1" } })
    case "fail":
      return transitions.fail(actionId, FAILURE)
    case "demote":
      return transitions.demote(actionId, ["drift: changed upstream"])
  }
}

const newAction = (status: Status, revertOf?: string) =>
  Effect.flatMap(Transitions, (transitions) =>
    transitions.append({
      orgId: ORG,
      projectId: PROJECT,
      kind: "keyword_status",
      mode: "queued",
      status: "proposed",
      riskTier: "review",
      policyReasons: [],
      summary: "pause a keyword",
      reason: "test",
      payload: {},
      proposedBy: PERSON,
      countsTowardCap: false,
      ...(revertOf === undefined ? {} : { revertOf })
    }).pipe(
      // Arranging a status directly: only the test may skip the machine.
      Effect.tap((action) => Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE actions SET status = ${status} WHERE action_id = ${action.actionId}`)),
      Effect.map((action) => action.actionId)
    ))

const row = (actionId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly status: Status; readonly revertedBy: string | null }>`
      SELECT status, reverted_by FROM actions WHERE action_id = ${actionId}`.pipe(Effect.map((rows) => rows[0]!)))

layer(TestLayer, { excludeTestServices: true })("Transitions", (it) => {
  it.effect("every transition happens from its own statuses only", () =>
    Effect.gen(function*() {
      const transitions = yield* Transitions
      for (const move of MOVES) {
        for (const status of STATUSES) {
          const actionId = yield* newAction(status)
          const happened = yield* run(transitions, move, actionId)
          const expected = (MACHINE[move].from as ReadonlyArray<Status>).includes(status)
          expect({ move, status, happened }).toEqual({ move, status, happened: expected })
          expect((yield* row(actionId)).status).toBe(expected ? MACHINE[move].to : status)
        }
      }
    }).pipe(Effect.orDie))

  it.effect("a compensation that ends without applying frees its original; one that applies reverts it", () =>
    Effect.gen(function*() {
      const transitions = yield* Transitions
      const ends: ReadonlyArray<readonly [Move, ReadonlyArray<Move>, Status | "free"]> = [
        ["reject", [], "free"],
        ["expire", [], "free"],
        ["fail", ["approve"], "free"],
        ["markApplied", ["approve", "markApplying"], "reverted"]
      ]
      for (const [end, before, expected] of ends) {
        const original = yield* newAction("applied")
        // Only a compensation of this original can be linked to it.
        expect(yield* transitions.linkRevert(PROJECT, original, yield* newAction("proposed"))).toBe(false)
        const compensation = yield* newAction("proposed", original)
        expect(yield* transitions.linkRevert(PROJECT, original, compensation)).toBe(true)
        // A second revert of the same original loses.
        expect(yield* transitions.linkRevert(PROJECT, original, yield* newAction("proposed", original))).toBe(false)
        for (const move of before) expect(yield* run(transitions, move, compensation)).toBe(true)
        expect(yield* run(transitions, end, compensation)).toBe(true)
        const settled = yield* row(original)
        if (expected === "free") expect(settled).toEqual({ status: "applied", revertedBy: null })
        else expect(settled).toEqual({ status: "reverted", revertedBy: compensation })
      }
    }).pipe(Effect.orDie))

  it.effect("settleOriginal touches only the original linked to that compensation", () =>
    Effect.gen(function*() {
      const transitions = yield* Transitions
      const original = yield* newAction("applied")
      const other = yield* newAction("applied")
      const compensation = yield* newAction("approved", original)
      yield* transitions.linkRevert(PROJECT, original, compensation)
      expect(yield* transitions.settleOriginal({ projectId: PROJECT, actionId: compensation }, "applied")).toBe(true)
      expect(yield* row(other)).toEqual({ status: "applied", revertedBy: null })
      // Settled once: a reverted original is not reverted again.
      expect(yield* transitions.settleOriginal({ projectId: PROJECT, actionId: compensation }, "applied")).toBe(false)
    }).pipe(Effect.orDie))

  it.effect("the statement ending an apply's run (worker/RunEndStatement.ts): its fence holding, the job ends with the writes beside it and the event; failing, nothing happens", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const campaign = (name: string): Touched => ({
        campaigns: [{
          campaignId: "c_end", name, adamId: "1", countriesOrRegions: ["US"], dailyBudgetMicros: 5_000_000, status: "ENABLED",
          bidStrategy: "MANUAL_CPT", targetCpaMicros: null, deleted: false
        }]
      })
      const endRun = (actionId: string, worker: string, name: string) =>
        endAppliedRun(sql, {
          projectId: PROJECT,
          runs: [{ actionId, result: { warnings: [], result: { campaignId: "c_end" } } }],
          settlement: sql`DELETE FROM jobs WHERE action_id = ${actionId} AND locked_by = ${worker} RETURNING job_id`,
          lastSteps: undefined,
          touched: campaign(name)
        })
      const eventTypes = (actionId: string) =>
        sql<{ readonly type: string }>`SELECT type FROM events WHERE data -> 'action' ->> 'actionId' = ${actionId} ORDER BY seq`.pipe(
          Effect.map((rows) => rows.map((r) => r.type))
        )
      const campaignName = sql<{ readonly name: string }>`SELECT name FROM campaigns WHERE project_id = ${PROJECT} AND campaign_id = 'c_end'`.pipe(
        Effect.map((rows) => rows[0]?.name)
      )

      const actionId = yield* newAction("applying")
      yield* sql`INSERT INTO jobs (job_id, action_id, project_id, locked_by) VALUES ('job_end', ${actionId}, ${PROJECT}, 'worker 1')`
      // Another worker holds the job now: the fence fails, and nothing of the statement happens.
      expect(yield* endRun(actionId, "worker 2", "not written")).toEqual({ fenced: false, applied: 0 })
      expect(yield* row(actionId)).toMatchObject({ status: "applying" })
      expect(yield* campaignName).toBeUndefined()
      // Its proposal's event only (the test arranged the status directly).
      expect(yield* eventTypes(actionId)).toEqual(["action.proposed"])
      expect(yield* sql`SELECT 1 FROM jobs WHERE job_id = 'job_end'`).toHaveLength(1)

      expect(yield* endRun(actionId, "worker 1", "written")).toEqual({ fenced: true, applied: 1 })
      expect(yield* row(actionId)).toMatchObject({ status: "applied" })
      expect(yield* campaignName).toBe("written")
      expect(yield* eventTypes(actionId)).toEqual(["action.proposed", "action.applied"])
      expect(yield* sql`SELECT 1 FROM jobs WHERE job_id = 'job_end'`).toHaveLength(0)
    }).pipe(Effect.orDie))

  it.effect("random transition sequences follow the model", () =>
    Effect.gen(function*() {
      const transitions = yield* Transitions
      const runtime = yield* Effect.runtime<Transitions | SqlClient.SqlClient>()
      const runPromise = <A>(effect: Effect.Effect<A, unknown, Transitions | SqlClient.SqlClient>) =>
        Runtime.runPromise(runtime)(Effect.orDie(effect))
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(fc.array(fc.constantFrom(...MOVES), { maxLength: 12 }), async (moves) => {
            const actionId = await runPromise(newAction("proposed"))
            let status: Status = "proposed"
            for (const move of moves) {
              const expected = (MACHINE[move].from as ReadonlyArray<Status>).includes(status)
              expect(await runPromise(run(transitions, move, actionId))).toBe(expected)
              if (expected) status = MACHINE[move].to
              expect((await runPromise(row(actionId))).status).toBe(status)
            }
          }),
          { numRuns: 40 }
        )
      )
    }))
})
