/**
 * Two people for high risk (docs/contract.md 3.3), as one pure rule over a prepared payload and the account's
 * `highRisk` guardrails: a budget raise past `budgetIncreasePct`, removing `removals` or more keywords or
 * negatives at once, enabling a campaign. Such a change never auto-applies, and it is approved only by two
 * distinct people (actions/pipeline/Approvals.ts). Property-tested in test/unit/highRisk.test.ts.
 */
import type { HighRisk } from "@acs/domain/Guardrails"

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)
const num = (u: unknown): number | null => (typeof u === "number" ? u : null)
const count = (u: unknown): number => (Array.isArray(u) ? u.length : 0)

/** Why the change needs two people, or null when one approval is enough. */
export const highRiskReason = (kind: string, payload: unknown, rules: HighRisk): string | null => {
  if (!isObject(payload)) return null
  switch (kind) {
    case "budget_change": {
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
