/**
 * Who may approve, as a pure rule (docs/contract.md 5.1), over every pair of principals: a few roots, each
 * with a person and keys, approving and proposing under each rule. Property tests hold the rule to the
 * contract's sentences; examples pin the words each caller reads.
 */
import { callerMay, type FourEyesRule, mayApprove, type Party, type Root } from "@acs/domain/FourEyes"
import fc from "fast-check"
import { describe, expect, it } from "vitest"

const ROOTS: ReadonlyArray<Root> = [
  { kind: "person", id: "psn_ann", name: "Ann" },
  { kind: "person", id: "psn_bob", name: "Bob" },
  { kind: "key", id: "key_org", name: "bootstrap" }
]

/** A principal of one of the roots: the root's own person or org key, or a key under it. */
const party: fc.Arbitrary<Party> = fc.record({
  root: fc.constantFrom(...ROOTS),
  own: fc.boolean(),
  key: fc.constantFrom("key_1", "key_2", "key_3")
}).map(({ key, own, root }) =>
  own ? { kind: root.kind, id: root.id, name: root.name, root } : { kind: "key", id: `${root.id}_${key}`, name: key, root }
)

const rule = fc.constantFrom<FourEyesRule>("distinct_actor", "distinct_person", "off")

const sameRoot = (a: Party, b: Party) => a.root!.kind === b.root!.kind && a.root!.id === b.root!.id

describe("mayApprove", () => {
  it("lets anyone approve when the rule is off", () => {
    fc.assert(fc.property(party, party, (approver, proposer) => mayApprove("off", approver, proposer).allowed))
  })

  it("lets another root approve under every rule", () => {
    fc.assert(fc.property(rule, party, party, (r, approver, proposer) => {
      fc.pre(!sameRoot(approver, proposer))
      const verdict = mayApprove(r, approver, proposer)
      return verdict.allowed && !verdict.yours
    }))
  })

  it("never lets a principal approve its own proposal unless the rule is off", () => {
    fc.assert(fc.property(rule, party, (r, principal) => mayApprove(r, principal, principal).allowed === (r === "off")))
  })

  it("under distinct_person, never lets one root approve its own", () => {
    fc.assert(fc.property(party, party, (approver, proposer) => {
      fc.pre(sameRoot(approver, proposer))
      const verdict = mayApprove("distinct_person", approver, proposer)
      return !verdict.allowed && verdict.yours
    }))
  })

  it("under distinct_actor, lets one root approve only as a person's session reviewing that person's key", () => {
    fc.assert(fc.property(party, party, (approver, proposer) => {
      fc.pre(sameRoot(approver, proposer))
      const expected = approver.kind === "person" && proposer.kind === "key"
      return mayApprove("distinct_actor", approver, proposer).allowed === expected
    }))
  })

  it("treats a key or person recorded without a root as its own root", () => {
    const key = { kind: "key", id: "key_x", name: "x" }
    expect(mayApprove("distinct_actor", key, key).allowed).toBe(false)
    expect(mayApprove("distinct_actor", { kind: "person", id: "psn_ann", name: "Ann", root: ROOTS[0] }, { kind: "person", id: "psn_ann", name: "Ann" }).allowed)
      .toBe(false)
    expect(mayApprove("distinct_actor", key, { kind: "system", id: "guard", name: "the guard" }).allowed).toBe(true)
  })

  it("says in words who may decide", () => {
    const ann: Party = { kind: "person", id: "psn_ann", name: "Ann", root: ROOTS[0] }
    const agent: Party = { kind: "key", id: "key_agent", name: "bidding script", root: ROOTS[0] }
    const other: Party = { kind: "key", id: "key_helper", name: "helper", root: ROOTS[0] }
    expect(mayApprove("distinct_actor", ann, agent)).toEqual({
      allowed: true,
      yours: true,
      reason: `your key "bidding script" proposed this change: you review it as its person`
    })
    expect(mayApprove("distinct_person", ann, agent).reason).toMatch(/needs another person to approve it/)
    expect(mayApprove("distinct_actor", ann, ann).reason).toMatch(/^you proposed this change yourself/)
    expect(mayApprove("distinct_actor", agent, ann).reason).toMatch(/this key answers to Ann, who proposed this change/)
    expect(mayApprove("distinct_actor", other, agent).reason).toMatch(/both answer to Ann/)
  })
})

describe("callerMay", () => {
  it("never lets a caller without the grant approve or reject, and says why", () => {
    fc.assert(fc.property(rule, party, party, (r, caller, proposer) => {
      const may = callerMay(r, { ...caller, canApprove: false }, proposer)
      return !may.approve && !may.reject && /canApprove grant/.test(may.reason)
    }))
  })

  it("lets a caller with the grant reject anything, and approve what the rule allows", () => {
    fc.assert(fc.property(rule, party, party, (r, caller, proposer) => {
      const may = callerMay(r, { ...caller, canApprove: true }, proposer)
      return may.reject && may.approve === mayApprove(r, caller, proposer).allowed
    }))
  })
})
