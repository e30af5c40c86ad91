/**
 * The safe-apply policy for a changeset as a whole (docs/contract.md 4.3), pure: it auto-applies only when every
 * member would on its own, all its members fit in the account's 24-hour auto-apply window (each member counts) and
 * their raises together fit the spend envelope (docs/contract.md 3.3), and none of them, alone or with the others,
 * crosses a high-risk line (then it needs two people, policy/HighRisk.ts);
 * otherwise it queues as one item, and its reasons say which members forced review and why. Property-tested in
 * test/unit/changesetPolicy.test.ts.
 */
import type { Mode, RiskTier } from "@acs/domain/Actions"
import { AUTO_APPLY_LIMIT_PER_24H, type Decision } from "./Policy.ts"

/** A member's own decision, as it was recorded (under the cap: the window is the changeset's to count). */
export interface MemberDecision {
  readonly actionId: string
  readonly mode: Mode | null
  readonly riskTier: RiskTier
  readonly reasons: ReadonlyArray<string>
}

export interface ChangesetPolicyInput {
  readonly members: ReadonlyArray<MemberDecision>
  /** Auto-applies already in the window, read under the account's lock. */
  readonly autoAppliesLast24h: number
  /** Circumstances read now: they may have changed since a member was added. */
  readonly killSwitchOn: boolean
  readonly accountStatus: string
  /** The spend envelope's and the ceiling's reasons for the members' raises together (policy/Envelope.ts), if any. */
  readonly envelopeHolds: ReadonlyArray<string>
  /** Why the changeset needs two people (policy/HighRisk.ts `changesetHighRiskReason`), or null. */
  readonly highRisk: string | null
}

const RISK_ORDER: Readonly<Record<RiskTier, number>> = { safe: 0, review: 1, high: 2 }

/** How many member ids a reason lists before it counts the rest. */
const NAMED = 3

const whom = (ids: ReadonlyArray<string>): string =>
  ids.length <= NAMED ? ids.join(", ") : `${ids.slice(0, NAMED).join(", ")} and ${ids.length - NAMED} more`

const isHold = (reason: string) => !reason.startsWith("would auto-apply:") && !reason.startsWith("auto-apply:")

export const decideChangeset = (input: ChangesetPolicyInput): Decision => {
  const { members } = input
  const worst = members.reduce<RiskTier>((tier, m) => RISK_ORDER[m.riskTier] > RISK_ORDER[tier] ? m.riskTier : tier, "safe")
  const riskTier: RiskTier = input.highRisk !== null ? "high" : worst
  const held: Array<string> = []
  if (!input.killSwitchOn) held.push("kill switch: platformAutoApply is off for this organisation, so nothing auto-applies")
  if (input.accountStatus !== "active") held.push(`account status is ${input.accountStatus}: only active accounts auto-apply`)
  // Each reason that holds a member, once, with the members it holds, in the order first met.
  const byReason = new Map<string, Array<string>>()
  for (const member of members) {
    if (member.mode === "auto_applied") continue
    const reasons = member.reasons.filter(isHold)
    for (const reason of reasons.length > 0 ? reasons : ["needs review"]) {
      const ids = byReason.get(reason) ?? []
      ids.push(member.actionId)
      byReason.set(reason, ids)
    }
  }
  for (const [reason, ids] of byReason) {
    // The circumstances are stated once, from what holds now.
    if (reason.startsWith("kill switch:") || reason.startsWith("account status is")) continue
    held.push(`${ids.length === 1 ? "member" : `${ids.length} members`} (${whom(ids)}): ${reason}`)
  }
  const room = AUTO_APPLY_LIMIT_PER_24H - input.autoAppliesLast24h
  if (members.length > room) {
    held.push(
      `24-hour window: the changeset's ${members.length} members would need ${members.length} auto-applies; the account has ` +
        `${Math.max(0, room)} left (${input.autoAppliesLast24h} of ${AUTO_APPLY_LIMIT_PER_24H} used)`
    )
  }
  held.push(...input.envelopeHolds)
  // A member high risk alone says so among the members' reasons already; what only the members together cross, here.
  if (input.highRisk !== null && worst !== "high") held.push(input.highRisk)
  if (held.length > 0) return { mode: "queued", riskTier, reasons: held }
  return {
    mode: "auto_applied",
    riskTier,
    reasons: [
      `auto-apply: every member clears its own rule and the ${members.length} fit the 24-hour window ` +
      `(${input.autoAppliesLast24h} of ${AUTO_APPLY_LIMIT_PER_24H} used)`
    ]
  }
}
