/**
 * The guard (docs/contract.md 3.4): every applied bid, budget, status or keyword change is watched, and each
 * review compares the entity's metrics after the apply with its baseline before it, to a verdict. The org's guard
 * settings say how strict the comparison is and what a failed verdict does.
 */
import { Schema } from "effect"
import { ActionKind } from "./ProposalKinds.ts"
import { IntegerParam } from "./Warehouse.ts"

const Pct = Schema.Number.pipe(Schema.between(0, 1_000))
const Count = Schema.Int.pipe(Schema.nonNegative())

export const GuardSettings = Schema.Struct({
  onFail: Schema.Literal("propose_revert", "auto_revert").annotations({
    description: "A failed verdict's revert: queued for a person, or applied through the policy"
  }),
  noiseBandPct: Pct.annotations({ description: "A metric moving within ± this % is noise" }),
  minTaps: Count.annotations({ description: "Taps a window needs (or minInstalls installs) to count" }),
  minInstalls: Count.annotations({ description: "Installs a window needs (or minTaps taps) to count" }),
  failCpaRisePct: Pct.annotations({ description: "Cost per install risen past this % fails the change" }),
  failInstallsDropPct: Pct.annotations({ description: "Installs per day fallen past this % fail the change" })
}).annotations({ identifier: "GuardSettings" })
export type GuardSettings = typeof GuardSettings.Type

/** The defaults of an org nobody configured (docs/contract.md 3.4). */
export const DEFAULT_GUARD: GuardSettings = {
  onFail: "propose_revert",
  noiseBandPct: 10,
  minTaps: 100,
  minInstalls: 10,
  failCpaRisePct: 20,
  failInstallsDropPct: 20
}

export const Verdict = Schema.Literal("pending", "passed", "failed", "inconclusive")
export type Verdict = typeof Verdict.Type

export const MetricName = Schema.Literal("spend", "taps", "installs", "cpt", "cpa", "ttr")
export type MetricName = typeof MetricName.Type

/** One metric before and after, per day for the counts and the spend; null where it cannot be computed (no taps, no installs). */
export const MetricComparison = Schema.Struct({
  metric: MetricName,
  before: Schema.NullOr(Schema.Number),
  after: Schema.NullOr(Schema.Number),
  changePct: Schema.NullOr(Schema.Number).annotations({ description: "null: the baseline is zero or missing" })
}).annotations({ identifier: "MetricComparison" })
export type MetricComparison = typeof MetricComparison.Type

/** A review's outcome: the verdict, why, and the metrics compared. */
export const Judgement = Schema.Struct({
  verdict: Schema.Literal("passed", "failed", "inconclusive"),
  reasons: Schema.Array(Schema.String),
  metrics: Schema.Array(MetricComparison)
}).annotations({ identifier: "Judgement" })
export type Judgement = typeof Judgement.Type

/** An entity's totals over a window of complete days in the account's time zone (`start`…`end`, inclusive). */
export const WatchWindow = Schema.Struct({
  start: Schema.String,
  end: Schema.String,
  days: Count,
  spendMicros: Count,
  impressions: Count,
  taps: Count,
  installs: Count
}).annotations({ identifier: "WatchWindow" })
export type WatchWindow = typeof WatchWindow.Type

/** One review: the complete days after the apply it read, and its judgement. */
export const WatchReview = Schema.Struct({
  afterDays: Count.annotations({ description: "Complete days after the applied day" }),
  window: WatchWindow,
  reviewedAt: Schema.String,
  ...Judgement.fields
}).annotations({ identifier: "WatchReview" })
export type WatchReview = typeof WatchReview.Type

export const WatchLevel = Schema.Literal("campaigns", "adGroups", "keywords")
export type WatchLevel = typeof WatchLevel.Type

/** The hourly lane: spend in the complete hours since the apply (the first 24) against the usual for those hours. */
export const WatchHourly = Schema.Struct({
  hours: Count,
  spendMicros: Schema.Number,
  usualMicros: Schema.Number.annotations({ description: "The median of the same hours on the 6 days before, summed" }),
  changePct: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "WatchHourly" })
export type WatchHourly = typeof WatchHourly.Type

/** An applied change's watch: its baseline, its reviews so far, and the undo the guard proposed after a failure. */
export const Watch = Schema.Struct({
  verdict: Verdict.annotations({ description: "The latest review's verdict; pending before the first" }),
  level: WatchLevel,
  entityIds: Schema.Array(Schema.String).annotations({ description: "The entities judged, at `level`" }),
  changesetId: Schema.NullOr(Schema.String).annotations({ description: "Its changeset's members are judged together" }),
  appliedDay: Schema.NullOr(Schema.String).annotations({ description: "The applied day (account time zone); null until the first sync after the apply" }),
  baseline: Schema.NullOr(WatchWindow),
  hourly: Schema.optional(WatchHourly),
  reviews: Schema.Array(WatchReview),
  nextReviewDay: Schema.NullOr(Schema.String).annotations({ description: "The day whose data the next review waits for; null: no more" }),
  revertActionId: Schema.NullOr(Schema.String).annotations({ description: "The change's revert after a failed review: the guard's, or one made before it" }),
  revertChangesetId: Schema.NullOr(Schema.String).annotations({ description: "A changeset's revert after a failed review" }),
  revertNote: Schema.NullOr(Schema.String).annotations({ description: "Why the guard proposed no revert after a failed review" })
}).annotations({ identifier: "Watch" })
export type Watch = typeof Watch.Type

/** The window of the verdicts summary when `days` is not given. */
export const DEFAULT_VERDICT_DAYS = 30

/** `days` 1–90 (out of range is 400 naming `days`). */
export const VerdictsParams = Schema.Struct({
  days: Schema.optional(IntegerParam(
    Schema.Int.pipe(Schema.between(1, 90, { message: () => "days must be an integer from 1 to 90" })),
    {
      minimum: 1,
      maximum: 90,
      default: DEFAULT_VERDICT_DAYS,
      description: `Changes applied in the last this many days, today included, account time zone (default ${DEFAULT_VERDICT_DAYS})`
    }
  ))
})

/** How many watched changes rest at each verdict: their latest review's, `pending` before the first. */
export const VerdictCounts = Schema.Struct({ passed: Count, failed: Count, inconclusive: Count, pending: Count }).annotations({
  identifier: "VerdictCounts"
})
export type VerdictCounts = typeof VerdictCounts.Type

export const VerdictsByKind = Schema.Struct({
  kind: Schema.Union(ActionKind, Schema.Literal("changeset")).annotations({ description: "`changeset`: a changeset's members, judged together" }),
  ...VerdictCounts.fields
}).annotations({ identifier: "VerdictsByKind" })

/** Who proposed the changes (a changeset: who opened it), as the ledger's `proposedBy` names them. */
export const VerdictsByProposer = Schema.Struct({
  proposedBy: Schema.Struct({ kind: Schema.Literal("key", "person", "system", "external"), id: Schema.String, name: Schema.String }),
  ...VerdictCounts.fields
}).annotations({ identifier: "VerdictsByProposer" })

/** The guard's track record of an account: its watched changes applied in the window, by verdict. */
export const VerdictSummary = Schema.Struct({
  days: Count,
  since: Schema.String.annotations({ description: "The first applied day counted (account time zone)" }),
  total: VerdictCounts,
  byKind: Schema.Array(VerdictsByKind),
  byProposer: Schema.Array(VerdictsByProposer)
}).annotations({ identifier: "VerdictSummary" })
export type VerdictSummary = typeof VerdictSummary.Type
