/**
 * A model-based test (fast-check commands) of the action state machine against the running API: random
 * sequences of proposals (by a person, which may auto-apply, and by a key, which always queues), approvals,
 * rejections, reverts and kill-switch flips. A small model predicts every answer and every resulting status;
 * the API must agree after each command. Each action pauses its own keyword, so actions never drift into
 * each other.
 */
import { isProposalResponse, type ProposalPreview, type ProposalResponse } from "@acs/domain/Actions"
import { Effect, Either } from "effect"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pipeline, startPipeline } from "./support/pipeline.ts"

interface ModelAction {
  readonly id: string
  status: "proposed" | "applied" | "rejected" | "reverted"
  readonly compensation: boolean
  reverted: boolean
}

interface Model {
  readonly actions: Array<ModelAction>
  autoApplies: number
  killSwitchOn: boolean
}

interface Real {
  readonly p: Pipeline
}

let p: Pipeline
let keywords: Array<string> = []
/** Commands run against the API over all runs: the property must have exercised the machine. */
const executed: Record<string, number> = {}
const count = (name: string) => (executed[name] = (executed[name] ?? 0) + 1)

const nextKeyword = (): string => {
  const keyword = keywords.shift()
  if (keyword === undefined) throw new Error("out of keywords")
  return keyword
}

/** A proposal's answer; a preview (no action recorded) fails the command. */
const proposal = (answer: ProposalResponse | ProposalPreview): ProposalResponse => {
  if (!isProposalResponse(answer)) throw new Error(`a preview where a proposal was expected: ${JSON.stringify(answer)}`)
  return answer
}

const settled = (actionId: string) => p.settle(actionId, ["proposed", "applied", "failed", "rejected", "reverted"])

class Propose implements fc.AsyncCommand<Model, Real> {
  constructor(readonly caller: "person" | "key") {}
  check = () => true
  async run(model: Model) {
    count("propose")
    const keywordId = nextKeyword()
    const body = proposal(await p.api(this.caller, (client) =>
      client.proposals.proposeKeywordStatus({
        path: { projectId: p.account.projectId },
        payload: { keywordIds: [keywordId], status: "PAUSED", reason: "model" },
        urlParams: {},
        headers: {}
      })))
    const auto = this.caller === "person" && model.killSwitchOn && model.autoApplies < 20
    expect(body.mode).toBe(auto ? "auto_applied" : "queued")
    if (auto) model.autoApplies++
    const expected = auto ? "applied" : "proposed"
    expect((await settled(body.actionId)).status).toBe(expected)
    model.actions.push({ id: body.actionId, status: expected, compensation: false, reverted: false })
  }
  toString = () => `propose(${this.caller})`
}

class Decide implements fc.AsyncCommand<Model, Real> {
  constructor(readonly decision: "approve" | "reject", readonly pick: number) {}
  check = (model: Readonly<Model>) => model.actions.length > 0
  async run(model: Model) {
    count(this.decision)
    const action = model.actions[this.pick % model.actions.length]!
    const path = { projectId: p.account.projectId, actionId: action.id }
    const answer = await p.api("approver", (client) =>
      Effect.either(this.decision === "approve" ? client.actions.approveAction({ path }) : client.actions.rejectAction({ path, payload: {} })))
    if (action.status !== "proposed") {
      // The error class of a 409 `conflict`.
      expect(Either.isLeft(answer) && answer.left).toMatchObject({ _tag: "Conflict" })
      return
    }
    expect(Either.isRight(answer), String(answer)).toBe(true)
    action.status = this.decision === "approve" ? "applied" : "rejected"
    expect((await settled(action.id)).status).toBe(action.status)
  }
  toString = () => `${this.decision}(#${this.pick})`
}

class RevertAction implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (model: Readonly<Model>) => model.actions.length > 0
  async run(model: Model) {
    count("revert")
    const action = model.actions[this.pick % model.actions.length]!
    const answer = await p.api("person", (client) =>
      Effect.either(client.actions.revertAction({ path: { projectId: p.account.projectId, actionId: action.id }, urlParams: {} })))
    if (action.status !== "applied" || action.compensation || action.reverted) {
      // The error class of a 422 `not_revertible`.
      expect(Either.isLeft(answer) && answer.left).toMatchObject({ _tag: "NotRevertible" })
      return
    }
    if (Either.isLeft(answer)) throw new Error(`the revert was refused: ${String(answer.left)}`)
    const body = proposal(answer.right)
    // Undo applies at once whatever the kill switch says, and does not count toward the cap.
    expect(body.mode).toBe("auto_applied")
    action.reverted = true
    action.status = "reverted"
    expect((await settled(body.actionId)).status).toBe("applied")
    expect((await p.action(action.id)).status).toBe("reverted")
    model.actions.push({ id: body.actionId, status: "applied", compensation: true, reverted: false })
  }
  toString = () => `revert(#${this.pick})`
}

class FlipKillSwitch implements fc.AsyncCommand<Model, Real> {
  check = () => true
  async run(model: Model) {
    model.killSwitchOn = !model.killSwitchOn
    const answer = await p.as("key", "PUT", "/settings", { platformAutoApply: model.killSwitchOn })
    expect(answer.status).toBe(200)
  }
  toString = () => "flipKillSwitch"
}

beforeAll(async () => {
  p = await startPipeline({ seed: 55 })
  keywords = (await p.sql<{ keyword_id: string }>(
    "SELECT keyword_id FROM keywords WHERE project_id = $1 AND status = 'ACTIVE' ORDER BY keyword_id",
    [p.account.projectId]
  )).map((row) => row.keyword_id)
})

afterAll(async () => {
  await p?.close()
})

describe("the action state machine", () => {
  it("agrees with its model over random command sequences", async () => {
    const commands = [
      fc.constantFrom("person" as const, "key" as const).map((caller) => new Propose(caller)),
      fc.tuple(fc.constantFrom("approve" as const, "reject" as const), fc.nat()).map(([d, n]) => new Decide(d, n)),
      fc.nat().map((n) => new RevertAction(n)),
      fc.constant(new FlipKillSwitch())
    ]
    const property = fc.asyncProperty(fc.commands(commands, { maxCommands: 20, size: "max" }), async (sequence) => {
      // Each run starts with the kill switch on and the account's 24-hour count as the policy reports it.
      await p.as("key", "PUT", "/settings", { platformAutoApply: true })
      const policy = await p.api("key", (client) => client.actions.getPolicy({ path: { projectId: p.account.projectId } }))
      const autoApplies = policy.autoApplies.usedLast24h
      await fc.asyncModelRun(() => ({ model: { actions: [], autoApplies, killSwitchOn: true }, real: { p } }), sequence)
    })
    const kinds = ["propose", "approve", "reject", "revert"]
    const covered = () => kinds.every((name) => (executed[name] ?? 0) > 2)
    // Random sequences, twelve runs a batch, until every command kind has run three times: one batch leaves a
    // kind nearly unexercised for ~2 % of seeds, and a suite must not fail by chance. A failure prints its seed;
    // FC_SEED=<n> replays the batches from it.
    const seed = process.env["FC_SEED"]
    for (let batch = 0; batch < 5 && (batch === 0 || !covered()); batch++) {
      await fc.assert(property, { numRuns: 12, endOnFailure: true, ...(seed === undefined ? {} : { seed: Number(seed) + batch }) })
    }
    for (const name of kinds) expect(executed[name] ?? 0, name).toBeGreaterThan(2)
  })
})
