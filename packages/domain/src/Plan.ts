/** The plan (`GET /accounts/{projectId}/plan`): suggested changes, each a proposal that can be POSTed as is. */
import { Schema } from "effect"
import { DataFreshness } from "./Accounts.ts"
import { Band } from "./Actions.ts"
import { addNegativeKeywords, budgetChange, cpaGoalChange, harvestSearchTerms, keywordBidChange, keywordStatus } from "./ProposalKinds.ts"
import { LimitParam } from "./Warehouse.ts"

export const PlanParams = Schema.Struct({ limit: Schema.optional(LimitParam) })

/** The proposal of an item: POST `body` to `path` and it passes the kind's validation. */
const proposal = <K extends string, B extends Schema.Schema.AnyNoContext>(kind: K, body: B) =>
  Schema.Struct({
    kind: Schema.Literal(kind),
    path: Schema.String.annotations({ description: "/api/v1/accounts/{projectId}/actions/<kind-path>" }),
    body
  })

export const PlanProposal = Schema.Union(
  proposal(addNegativeKeywords.kind, addNegativeKeywords.body),
  proposal(keywordBidChange.kind, keywordBidChange.body),
  proposal(keywordStatus.kind, keywordStatus.body),
  proposal(budgetChange.kind, budgetChange.body),
  proposal(cpaGoalChange.kind, cpaGoalChange.body),
  proposal(harvestSearchTerms.kind, harvestSearchTerms.body)
).annotations({ identifier: "PlanProposal" })
export type PlanProposal = typeof PlanProposal.Type

const Spend = Schema.Struct({
  text: Schema.String,
  id: Schema.NullOr(Schema.String).annotations({ description: "the keyword's id; null for a search term" }),
  spendMicros: Schema.Int,
  taps: Schema.Int,
  installs: Schema.Int
})

/** What a change is expected to do over a window like the one it was computed from, if the terms keep converting. */
export const ExpectedEffect = Schema.Struct({
  windowDays: Schema.Int,
  installs: Schema.Int,
  spendMicros: Schema.Int,
  cpaMicros: Schema.NullOr(Schema.Int),
  summary: Schema.String
}).annotations({ identifier: "ExpectedEffect" })

/** The numbers behind an item: always the 30-day spend, installs, CPA and band; the rest per rule. */
export const PlanEvidence = Schema.Struct({
  windowDays: Schema.Int,
  spendMicros: Schema.Int,
  installs: Schema.Int,
  cpaMicros: Schema.NullOr(Schema.Int),
  band: Schema.NullOr(Band),
  thresholdMicros: Schema.optional(Schema.Int),
  bidMicros: Schema.optional(Schema.Int),
  dailyBudgetMicros: Schema.optional(Schema.Int),
  avgDailySpendMicros: Schema.optional(Schema.Int),
  cpaGoalMicros: Schema.optional(Schema.Int),
  items: Schema.optional(Schema.Array(Spend)).annotations({ description: "the search terms or keywords the change covers" }),
  targetCpaMicros: Schema.optional(Schema.Int).annotations({ description: "the CPA a harvested term must be at or under" }),
  minInstalls: Schema.optional(Schema.Int).annotations({ description: "the installs a harvested term needs over the window" }),
  expectedEffect: Schema.optional(ExpectedEffect)
}).annotations({ identifier: "PlanEvidence" })
export type PlanEvidence = typeof PlanEvidence.Type

export const PlanItem = Schema.Struct({
  itemId: Schema.String.annotations({ description: "Stable across calls while the suggestion holds: rule and entity" }),
  title: Schema.String,
  rationale: Schema.String,
  impactMicros: Schema.Int.annotations({ description: "Spend at stake over the window: what the items are ranked by" }),
  evidence: PlanEvidence,
  proposal: PlanProposal
}).annotations({ identifier: "PlanItem" })
export type PlanItem = typeof PlanItem.Type

/** A suggestion the account's guardrails would refuse or hold now, left out of `items` with the reason. */
export const WithheldItem = Schema.Struct({
  itemId: Schema.String,
  title: Schema.String,
  reason: Schema.String
}).annotations({ identifier: "WithheldItem" })
export type WithheldItem = typeof WithheldItem.Type

export const Plan = Schema.Struct({
  items: Schema.Array(PlanItem),
  total: Schema.Int,
  truncated: Schema.Boolean,
  withheld: Schema.Array(WithheldItem).annotations({
    description: "Suggestions a guardrail would refuse (past the budget ceiling) or hold (inside a cooldown), with why"
  }),
  dataFreshness: DataFreshness
}).annotations({ identifier: "Plan" })
export type Plan = typeof Plan.Type
