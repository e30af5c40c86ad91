/**
 * Two people for high risk (docs/contract.md 3.3), as one pure rule over a prepared payload and the account's
 * `highRisk` guardrails: a budget raise past `budgetIncreasePct`, removing `removals` or more keywords or
 * negatives at once, enabling a campaign. Such a change never auto-applies, and it is approved only by two
 * distinct people (actions/pipeline/Approvals.ts). A changeset is high risk when a member is, or when its members
 * together cross a line: the removals summed, a campaign's budget raised by several members (actions/changesets/).
 * Property-tested in test/unit/highRisk.test.ts.
 */
import type { HighRisk } from "@acs/domain/Guardrails"

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)
const num = (u: unknown): number | null => (typeof u === "number" ? u : null)
const count = (u: unknown): number => (Array.isArray(u) ? u.length : 0)

/** Why the change needs two people, or null when one approval is enough. */
export const highRiskReason = (kind: string, payload: unknown, rules: HighRisk): string | null => {
  if (!isObject(payload)) return null
  switch (kind) {
    case "budget_change":
    case "apply_recommendation": {
      const prior = num(payload["priorDailyBudgetMicros"])
      const next = num(payload["newDailyBudgetMicros"])
      if (prior === null || next === null || prior <= 0 || next <= prior) return null
      // Past the line: (next - prior) / prior > pct / 100, in integers.
      if ((next - prior) * 100 <= rules.budgetIncreasePct * prior) return null
      const pct = Math.round(((next - prior) / prior) * 1000) / 10
      return `two people: a budget raise of ${pct.toFixed(1)}% is past the ${rules.budgetIncreasePct}% high-risk line`
    }
    case "remove_keywords":
    case "remove_negative_keywords": {
      const removed = count(payload[kind === "remove_keywords" ? "priorKeywords" : "priorNegatives"])
      return removed >= rules.removals
        ? `two people: removing ${removed} ${kind === "remove_keywords" ? "keywords" : "negative keywords"} at once ` +
          `(${rules.removals} or more is high risk)`
        : null
    }
    case "campaign_status":
      return rules.enableCampaign && payload["status"] === "ENABLED" && payload["priorStatus"] !== "ENABLED"
        ? "two people: enabling a campaign is high risk"
        : null
    default:
      return null
  }
}

/** A changeset's member, as the rule reads it. */
export interface RiskMember {
  readonly actionId: string
  readonly kind: string
  readonly payload: unknown
}

/**
 * Why the changeset needs two people, or null: a member's own reason (the first met), else what its members do
 * together: the keywords and negatives they remove summed, or one campaign's budget raised by several of them
 * (their raises summed against the smallest budget they started from).
 */
export const changesetHighRiskReason = (members: ReadonlyArray<RiskMember>, rules: HighRisk): string | null => {
  for (const member of members) {
    const own = highRiskReason(member.kind, member.payload, rules)
    if (own !== null) return own.replace(/^two people: /, `two people: member ${member.actionId}: `)
  }
  const removed = members.reduce((sum, m) =>
    sum + (isObject(m.payload) && (m.kind === "remove_keywords" || m.kind === "remove_negative_keywords")
      ? count(m.payload[m.kind === "remove_keywords" ? "priorKeywords" : "priorNegatives"])
      : 0), 0)
  if (removed >= rules.removals) {
    return `two people: the changeset's members remove ${removed} keywords and negative keywords together (${rules.removals} or more is high risk)`
  }
  const byCampaign = new Map<string, { readonly prior: number; readonly raised: number }>()
  for (const member of members) {
    if ((member.kind !== "budget_change" && member.kind !== "apply_recommendation") || !isObject(member.payload)) continue
    const campaignId = member.payload["campaignId"]
    const prior = num(member.payload["priorDailyBudgetMicros"])
    const next = num(member.payload["newDailyBudgetMicros"])
    if (typeof campaignId !== "string" || prior === null || next === null) continue
    const seen = byCampaign.get(campaignId)
    byCampaign.set(campaignId, { prior: Math.min(seen?.prior ?? prior, prior), raised: (seen?.raised ?? 0) + next - prior })
  }
  for (const [campaignId, { prior, raised }] of byCampaign) {
    if (prior > 0 && raised * 100 > rules.budgetIncreasePct * prior) {
      const pct = Math.round((raised / prior) * 1000) / 10
      return `two people: the changeset's members raise campaign ${campaignId}'s budget by ${pct.toFixed(1)}% together, ` +
        `past the ${rules.budgetIncreasePct}% high-risk line`
    }
  }
  return null
}
