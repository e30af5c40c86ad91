/**
 * Apple's recommendations as acs lists them (docs/contract.md 4.5): a daily budget ("daily cap") or target CPA for a
 * campaign, with what the campaign did in the last seven days, the seven days Apple expects after it, and when it
 * expires. `state`: `expired` once `expiresAt` has passed while it was still available; `applied` or `dismissed` by
 * anyone (acs's own apply counts at once, before the next sync).
 */
import { Schema } from "effect"
import { collection } from "./Warehouse.ts"

const Micros = (what: string) => Schema.Int.annotations({ description: `${what}, in micros of the account currency` })

export const RecommendationWeek = Schema.Struct({
  installs: Schema.Number,
  spendMicros: Micros("spend"),
  cpaMicros: Schema.NullOr(Micros("cost per install")).annotations({ description: "null without installs" })
}).annotations({ identifier: "RecommendationWeek" })

export const RecommendationRow = Schema.Struct({
  recommendationId: Schema.String,
  type: Schema.Literal("daily_cap", "target_cpa"),
  adamId: Schema.String.annotations({ description: "the promoted app" }),
  campaignId: Schema.String,
  campaignName: Schema.String,
  state: Schema.Literal("available", "applied", "dismissed", "expired"),
  currentMicros: Schema.NullOr(Micros("the daily budget or target CPA when Apple made it")),
  recommendedMicros: Micros("the recommended daily budget or target CPA"),
  lastWeek: RecommendationWeek,
  expected: RecommendationWeek.annotations({ description: "Apple's expected seven days after it" }),
  expiresAt: Schema.String,
  syncedAt: Schema.String
}).annotations({ identifier: "Recommendation" })
export type RecommendationRow = typeof RecommendationRow.Type

export const RecommendationsParams = Schema.Struct({
  campaignId: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64)).annotations({ description: "Only this Apple Ads campaign's" }))
})

export const RecommendationList = collection("recommendations", RecommendationRow).annotations({ identifier: "RecommendationList" })
