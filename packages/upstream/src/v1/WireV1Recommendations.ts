/**
 * Apple's recommendations on the v1 wire (`DailyCapRecommendation`, `TargetCpaRecommendation` and the history records
 * an apply or a dismiss answers with) and their mapping to the port's `UpstreamRecommendation`. One schema reads both
 * types and both shapes: a listed recommendation carries `id`, a history record `recommendationId`.
 */
import { Schema } from "effect"
import { microsFromDecimal } from "../Money.ts"
import type { RecommendationType, UpstreamRecommendation } from "../Upstream.ts"
import { V1Money } from "./WireV1.ts"

const Amount = Schema.optional(Schema.NullOr(V1Money))

export const V1Recommendation = Schema.Struct({
  id: Schema.optional(Schema.String),
  recommendationId: Schema.optional(Schema.Union(Schema.String, Schema.Number)),
  recommendationType: Schema.Literal("DAILYCAP", "TCPA"),
  promotedObjectId: Schema.Union(Schema.String, Schema.Number),
  campaignId: Schema.Union(Schema.String, Schema.Number),
  campaignName: Schema.optional(Schema.String),
  state: Schema.Literal("AVAILABLE", "APPLIED", "DISMISSED"),
  suggestedDailyBudgetAmount: Amount,
  dailyBudget: Amount,
  recommendedTargetCPA: Amount,
  bidStrategy: Schema.optional(Schema.NullOr(Schema.Struct({ bidAmount: Amount }))),
  installs: Schema.optional(Schema.NullOr(Schema.Number)),
  spend: Amount,
  averageCPA: Amount,
  expectedInstalls: Schema.optional(Schema.NullOr(Schema.Number)),
  expectedSpend: Amount,
  expectedCpa: Amount,
  creationTime: Schema.optional(Schema.NullOr(Schema.String)),
  expirationTime: Schema.String
})
export type V1Recommendation = typeof V1Recommendation.Type

/** The path segment of each type: `/recommendations/{daily-budgets|target-cpas}/…`. */
export const recommendationPath: Readonly<Record<RecommendationType, string>> = {
  daily_cap: "daily-budgets",
  target_cpa: "target-cpas"
}

const micros = (money: V1Money | null | undefined): number | null => money === null || money === undefined ? null : microsFromDecimal(money.amount)

export const recommendationFromV1 = (r: V1Recommendation): UpstreamRecommendation => {
  const dailyCap = r.recommendationType === "DAILYCAP"
  return {
    recommendationId: r.id ?? String(r.recommendationId ?? ""),
    type: dailyCap ? "daily_cap" : "target_cpa",
    adamId: String(r.promotedObjectId),
    campaignId: String(r.campaignId),
    campaignName: r.campaignName ?? "",
    state: r.state === "AVAILABLE" ? "available" : r.state === "APPLIED" ? "applied" : "dismissed",
    currentMicros: dailyCap ? micros(r.dailyBudget) : micros(r.bidStrategy?.bidAmount),
    recommendedMicros: (dailyCap ? micros(r.suggestedDailyBudgetAmount) : micros(r.recommendedTargetCPA)) ?? 0,
    lastWeek: { installs: r.installs ?? 0, spendMicros: micros(r.spend) ?? 0, cpaMicros: micros(r.averageCPA) },
    expected: { installs: r.expectedInstalls ?? 0, spendMicros: micros(r.expectedSpend) ?? 0, cpaMicros: micros(r.expectedCpa) },
    createdAt: r.creationTime ?? null,
    expiresAt: r.expirationTime
  }
}
