/**
 * Who may approve a change (docs/contract.md 5.1). Every principal has a root: a person's
 * session is that person; a key's root is the end of its creator chain, a person or an org key (the bootstrap
 * key, a key made by `acs keys create`). Principals with the same root are one actor.
 *
 * Pure: the server decides an approval with it, and the approvals listing tells each caller with it what they
 * may do, so the console and the CLI say exactly what the server will answer.
 */
import { Schema } from "effect"

export const FourEyesRule = Schema.Literal("distinct_actor", "distinct_person", "off").annotations({
  description: "Who may approve a change: `distinct_actor` (default) — anyone but the proposer's actor, except that " +
    "a person's own session may approve what a key rooted at that person proposed (the human reviewing their " +
    "agent); `distinct_person` — never the proposer's root, keys and person alike; `off` — anyone with the grant " +
    "(a one-person workspace)"
})
export type FourEyesRule = typeof FourEyesRule.Type

/** Where a principal's authority comes from: a person, or an org key that depends on nobody. */
export const Root = Schema.Struct({
  kind: Schema.Literal("person", "key"),
  id: Schema.String,
  name: Schema.String
}).annotations({ identifier: "Root", description: "The person, or the org key, at the end of the principal's creator chain" })
export type Root = typeof Root.Type

/** A principal as the rule sees it: what it is, and its root. */
export interface Party {
  readonly kind: string
  readonly id: string
  readonly name: string
  /** Absent for actors no person or key stands behind (the system, a change made outside acs). */
  readonly root?: Root | undefined
}

export interface Verdict {
  readonly allowed: boolean
  /** The approver and the proposer have one root: the change is the approver's own, or their agent's. */
  readonly yours: boolean
  readonly reason: string
}

const sameRoot = (a: Root, b: Root) => a.kind === b.kind && a.id === b.id

const described = (root: Root) => root.kind === "person" ? root.name : `the org key "${root.name}"`

/** A party's root; a key or person recorded without one is its own (a person always is). */
const rootOf = (party: Party): Root | undefined =>
  party.root ?? (party.kind === "person" || party.kind === "key" ? { kind: party.kind, id: party.id, name: party.name } : undefined)

/** Whether `approver` may approve a change `proposer` proposed, and why, in words for the approver. */
export const mayApprove = (rule: FourEyesRule, approver: Party, proposer: Party): Verdict => {
  const mine = rootOf(approver)
  const theirs = rootOf(proposer)
  const yours = mine !== undefined && theirs !== undefined && sameRoot(mine, theirs)
  if (rule === "off") return { allowed: true, yours, reason: "four eyes is off in this workspace: anyone with the grant may approve" }
  if (!yours) return { allowed: true, yours, reason: `proposed by ${proposer.kind} "${proposer.name}", another actor` }
  if (approver.kind === proposer.kind && approver.id === proposer.id) {
    return {
      allowed: false,
      yours,
      reason: "you proposed this change yourself: another approver must approve it (you may still withdraw it)"
    }
  }
  if (approver.kind === "person" && proposer.kind === "key") {
    return rule === "distinct_actor"
      ? { allowed: true, yours, reason: `your key "${proposer.name}" proposed this change: you review it as its person` }
      : {
        allowed: false,
        yours,
        reason: `your key "${proposer.name}" proposed this change, and this workspace's four-eyes rule ` +
          "(distinct_person) needs another person to approve it"
      }
  }
  if (approver.kind === "key" && proposer.kind === "person") {
    return {
      allowed: false,
      yours,
      reason: `this key answers to ${proposer.name}, who proposed this change: a key never approves its own ` +
        "person's proposals; another person must approve it"
    }
  }
  return {
    allowed: false,
    yours,
    reason: `this key and the ${proposer.kind} that proposed the change ("${proposer.name}") both answer to ` +
      `${described(mine!)}: another person must approve it`
  }
}

/**
 * The second approval of a high-risk change (docs/contract.md 3.3): it must come from another person than the
 * first, roots compared (two keys of one person, or the person and their key, are one).
 */
export const maySecondApprove = (first: Party, approver: Party): { readonly allowed: boolean; readonly reason: string } => {
  const earlier = rootOf(first)
  const mine = rootOf(approver)
  return earlier !== undefined && mine !== undefined && sameRoot(earlier, mine)
    ? {
      allowed: false,
      reason: `two people: ${described(earlier)} approved this high-risk change already; the second approval must come ` +
        "from another person"
    }
    : { allowed: true, reason: `two people: the second approval, after ${first.kind} "${first.name}"` }
}

/**
 * The rule an org had under the earlier boolean setting: `requireSecondApprover: true` was the chain-proof
 * rule, now `distinct_person`; `false` is `off`.
 */
export const fromRequireSecondApprover = (required: boolean): FourEyesRule => required ? "distinct_person" : "off"

/** What the caller may do with a pending change, as the approvals listing tells each caller. */
export const CallerMay = Schema.Struct({
  approve: Schema.Boolean,
  reject: Schema.Boolean,
  yours: Schema.Boolean.annotations({
    description: "The caller and the proposer have one root: the change is the caller's own, or their agent's (they may withdraw it)"
  }),
  reason: Schema.String.annotations({ description: "Why, in words for the caller: who may approve this change" })
}).annotations({ identifier: "CallerMay" })
export type CallerMay = typeof CallerMay.Type

/** What `caller` may do with a change `proposer` proposed: deciding needs the grant, approving also the rule. */
export const callerMay = (rule: FourEyesRule, caller: Party & { readonly canApprove: boolean }, proposer: Party): CallerMay => {
  const verdict = mayApprove(rule, caller, proposer)
  if (!caller.canApprove) {
    return { approve: false, reject: false, yours: verdict.yours, reason: "deciding a change needs the canApprove grant, which you do not hold" }
  }
  return { approve: verdict.allowed, reject: true, yours: verdict.yours, reason: verdict.reason }
}
