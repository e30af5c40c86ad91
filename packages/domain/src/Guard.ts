/**
 * The guard (docs/contract.md 3.4): every applied bid, budget, status or keyword change is watched, and each
 * review compares the entity's metrics after the apply with its baseline before it, to a verdict. The org's guard
 * settings say how strict the comparison is and what a failed verdict does.
 */
import { Schema } from "effect"

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
