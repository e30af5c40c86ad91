/** The payloads of add_negative_keywords and remove_negative_keywords: each kind's inverse is the other, so both
 * shapes live here rather than in either kind's module. */
import { Schema } from "effect"

export const NewNegative = Schema.Struct({
  campaignId: Schema.String,
  campaignName: Schema.String,
  /** null: a campaign-level negative. */
  adGroupId: Schema.NullOr(Schema.String),
  adGroupName: Schema.NullOr(Schema.String),
  text: Schema.String,
  matchType: Schema.Literal("EXACT", "BROAD")
})

export const AddNegativeKeywordsPayload = Schema.Struct({ negatives: Schema.Array(NewNegative) })
export type AddNegativeKeywordsPayload = typeof AddNegativeKeywordsPayload.Type

export const RemovedNegative = Schema.Struct({
  ...NewNegative.fields,
  negativeKeywordId: Schema.String,
  status: Schema.Literal("ACTIVE", "PAUSED")
})

/** `priorNegatives`: each negative as the warehouse held it at proposal (docs/contract.md 1: prior state lives in `prior…` fields). */
export const RemoveNegativeKeywordsPayload = Schema.Struct({ priorNegatives: Schema.Array(RemovedNegative) })
export type RemoveNegativeKeywordsPayload = typeof RemoveNegativeKeywordsPayload.Type
