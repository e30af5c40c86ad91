/**
 * The safe-apply policy (docs/contract.md 3 and 3.1) as one pure decision: given who proposed, the org's kill switch,
 * the account's state and 24-hour count, and the kind's own rule, it says `auto_applied` or `queued`,
 * the risk tier, and reasons that always name the rule that cleared or held the action.
 */
import type { Mode, RiskTier } from "@acs/domain/Actions"
import type { AutoApplyPause } from "@acs/domain/Guardrails"

/** A kind's own rule on a payload: whether it clears auto-apply, and the rule's name. */
export type Verdict =
  | { readonly clears: true; readonly rule: string }
  | { readonly clears: false; readonly rule: string }

/** docs/contract.md 8: auto-applies per account per 24 hours, counted from the database across instances. */
export const AUTO_APPLY_LIMIT_PER_24H = 20
/** docs/contract.md 8: the apply worker refuses any budget above this multiple of the warehouse value. */
export const BUDGET_HARD_CAP_MULTIPLE = 3

/** The reason the 24-hour cap holds an action; `used` may be a placeholder the database fills in (Proposals). */
export const dailyCapReason = (used: number | string): string =>
  `daily cap: the account already has ${used} auto-applies in the last 24 hours (limit ${AUTO_APPLY_LIMIT_PER_24H})`

/** The reason the circuit breaker holds every change of the account. */
export const pausedReason = (pause: AutoApplyPause): string =>
  `circuit breaker: auto-apply of this account is paused since ${pause.since} (${pause.reason}); an admin resumes it`

export interface PolicyInput {
  readonly proposedBy: "key" | "person"
  readonly killSwitchOn: boolean
  readonly accountStatus: string
  readonly autoAppliesLast24h: number
  /** The account's circuit breaker, open (docs/contract.md 3.3): nothing auto-applies until an admin resumes it. */
  readonly autoApplyPaused: AutoApplyPause | null
  /** The reason a cooldown holds the change (policy/Cooldown.ts), or null. */
  readonly cooldown: string | null
  /** Why the change needs two people (policy/HighRisk.ts), or null: it never auto-applies. */
  readonly highRisk: string | null
  /** `high` kinds always need review (docs/contract.md 3, reason 4). */
  readonly reviewTier: Exclude<RiskTier, "safe">
  readonly verdict: Verdict
}

export interface Decision {
  readonly mode: Mode
  readonly riskTier: RiskTier
  readonly reasons: ReadonlyArray<string>
}

/** Every reason that holds the action, in the order of docs/contract.md 3 (1–6), then the kind's rule. */
export const decide = (input: PolicyInput): Decision => {
  const held: Array<string> = []
  if (!input.killSwitchOn) held.push("kill switch: platformAutoApply is off for this organisation, so nothing auto-applies")
  if (input.accountStatus !== "active") {
    held.push(`account status is ${input.accountStatus}: only active accounts auto-apply`)
  }
  if (input.autoApplyPaused !== null) held.push(pausedReason(input.autoApplyPaused))
  if (input.autoAppliesLast24h >= AUTO_APPLY_LIMIT_PER_24H) held.push(dailyCapReason(input.autoAppliesLast24h))
  if (input.cooldown !== null) held.push(input.cooldown)
  if (input.highRisk !== null) held.push(input.highRisk)
  if (input.reviewTier === "high") held.push(`always review: ${input.verdict.rule}`)
  else if (!input.verdict.clears) held.push(`outside the auto-apply set: ${input.verdict.rule}`)
  if (input.proposedBy === "key") held.push("proposed with an API key: every key-proposed change queues for review")
  const riskTier: RiskTier = input.reviewTier === "high" || input.highRisk !== null ? "high" : input.verdict.clears ? "safe" : "review"
  if (held.length > 0) {
    // A safe change held only by circumstance still says which rule would have cleared it.
    const wouldClear = input.verdict.clears && riskTier !== "high" ? [`would auto-apply: ${input.verdict.rule}`] : []
    return { mode: "queued", riskTier, reasons: [...held, ...wouldClear] }
  }
  return { mode: "auto_applied", riskTier, reasons: [`auto-apply: ${input.verdict.rule}`] }
}

/** Reasons checked again by the apply worker for an auto-applied action (docs/contract.md 3: "conditions changed"). */
export const stillClears = (input: Omit<PolicyInput, "proposedBy" | "autoAppliesLast24h" | "cooldown" | "highRisk">): ReadonlyArray<string> => {
  const reasons: Array<string> = []
  if (input.autoApplyPaused !== null) reasons.push(`demoted at apply: ${pausedReason(input.autoApplyPaused)}`)
  if (!input.killSwitchOn) reasons.push("demoted at apply: the kill switch platformAutoApply was turned off after proposal")
  if (input.accountStatus !== "active") reasons.push(`demoted at apply: the account is now ${input.accountStatus}`)
  if (!input.verdict.clears) reasons.push(`demoted at apply: the rule no longer clears it: ${input.verdict.rule}`)
  return reasons
}
