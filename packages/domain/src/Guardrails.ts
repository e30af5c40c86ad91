/**
 * An account's guardrails (docs/contract.md 3.3): the money and pace limits the policy applies before anything
 * auto-applies, set by an admin (`GET/PUT /accounts/{projectId}/guardrails`). Every account has them: an account
 * nobody configured has the defaults below, which are on.
 */
import { Schema } from "effect"

const Count = Schema.Int.pipe(Schema.nonNegative())
const Micros = Schema.Int.pipe(Schema.nonNegative())

export const Envelope = Schema.Struct({
  maxDailyBudgetIncreaseMicros24h: Schema.NullOr(Micros).annotations({
    description: "The most daily budgets may rise, net, in 24 hours (applied and reserved) before a raise queues; " +
      "null: 20 % of the account's total daily budget as it was 24 hours ago"
  }),
  maxTotalDailyBudgetMicros: Schema.NullOr(Micros).annotations({
    description: "The ceiling of the sum of the account's campaign daily budgets: a raise past it cannot be approved; " +
      "null: no ceiling"
  })
}).annotations({ identifier: "Envelope" })
export type Envelope = typeof Envelope.Type

export const CooldownHours = Schema.Struct({
  bid: Count.annotations({ description: "Hours after a bid change (keyword or default bid) before another on the same entity auto-applies" }),
  budget: Count.annotations({ description: "Hours after a budget change before another on the same campaign auto-applies" }),
  status: Count.annotations({ description: "Hours after a status change before another on the same entity auto-applies" })
}).annotations({ identifier: "CooldownHours" })
export type CooldownHours = typeof CooldownHours.Type

export const Evidence = Schema.Struct({
  minDays: Schema.Int.pipe(Schema.between(0, 30)).annotations({
    description: "Complete days of metrics (of the last 30) a bid or budget raise needs before it may auto-apply"
  }),
  minInstalls: Count.annotations({ description: "Installs (over the last 30 days) a bid or budget raise needs before it may auto-apply" })
}).annotations({ identifier: "Evidence" })
export type Evidence = typeof Evidence.Type

export const HighRisk = Schema.Struct({
  budgetIncreasePct: Count.annotations({ description: "A budget raise past this percentage needs two people" }),
  removals: Schema.Int.pipe(Schema.positive()).annotations({ description: "Removing this many entities or more needs two people" }),
  enableCampaign: Schema.Boolean.annotations({ description: "Enabling a campaign needs two people" })
}).annotations({ identifier: "HighRisk" })
export type HighRisk = typeof HighRisk.Type

export const CircuitBreaker = Schema.Struct({
  failures: Schema.Int.pipe(Schema.positive()).annotations({ description: "Upstream write failures that pause auto-apply…" }),
  windowMinutes: Schema.Int.pipe(Schema.positive()).annotations({ description: "…within this many minutes" }),
  spendPerHourMultiple: Schema.optionalWith(Schema.Number.pipe(Schema.between(1.5, 100)), { default: () => 3 }).annotations({
    description: "An hour's spend past this multiple of its usual (same hour, 6 days before) also pauses"
  })
}).annotations({ identifier: "CircuitBreaker" })
export type CircuitBreaker = typeof CircuitBreaker.Type

/** What an admin sets (the body of PUT). */
export const GuardrailsSettings = Schema.Struct({
  envelope: Envelope,
  cooldownHours: CooldownHours,
  evidence: Evidence,
  highRisk: HighRisk,
  circuitBreaker: CircuitBreaker,
  maxDeliveryShareRemovedPct: Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 100)), { default: () => 20 }).annotations({
    description: "A search-term harvest whose negatives carry more than this percentage of a source ad group's 30-day spend is refused"
  })
}).annotations({ identifier: "GuardrailsSettings" })
export type GuardrailsSettings = typeof GuardrailsSettings.Type

export const AutoApplyPause = Schema.Struct({
  reason: Schema.String,
  since: Schema.String
}).annotations({ identifier: "AutoApplyPause" })
export type AutoApplyPause = typeof AutoApplyPause.Type

/** The account's guardrails as GET answers them: the settings, the circuit breaker's state, who set them. */
export const Guardrails = Schema.Struct({
  ...GuardrailsSettings.fields,
  autoApplyPaused: Schema.NullOr(AutoApplyPause).annotations({
    description: "Set when the circuit breaker opened: nothing auto-applies until an admin clears it (DELETE …/guardrails/pause)"
  }),
  isDefault: Schema.Boolean.annotations({ description: "true while nobody has set the account's guardrails" }),
  updatedAt: Schema.NullOr(Schema.String),
  updatedBy: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Guardrails" })
export type Guardrails = typeof Guardrails.Type

/** The defaults of an account nobody configured (docs/contract.md 3.3). */
export const DEFAULT_GUARDRAILS: GuardrailsSettings = {
  envelope: { maxDailyBudgetIncreaseMicros24h: null, maxTotalDailyBudgetMicros: null },
  cooldownHours: { bid: 72, budget: 72, status: 0 },
  evidence: { minDays: 7, minInstalls: 20 },
  highRisk: { budgetIncreasePct: 25, removals: 10, enableCampaign: true },
  circuitBreaker: { failures: 5, windowMinutes: 10, spendPerHourMultiple: 3 },
  maxDeliveryShareRemovedPct: 20
}

/** The default 24-hour envelope: this share of the account's total daily budget as it was 24 hours ago. */
export const DEFAULT_ENVELOPE_PCT = 20

/** What `GET …/policy` adds: the envelope's use now, in micros. */
export const EnvelopeUse = Schema.Struct({
  maxIncrease24h: Schema.Number.annotations({ description: "The 24-hour envelope in effect (the default computed when unset)" }),
  used: Schema.Number.annotations({ description: "Net change of daily budgets applied in the last 24 hours" }),
  reserved: Schema.Number.annotations({ description: "Raises recorded and not yet applied, rejected, expired, failed or demoted" }),
  remaining: Schema.Number,
  totalDailyBudget: Schema.Number.annotations({ description: "The sum of the account's campaign daily budgets (warehouse)" }),
  maxTotal: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "EnvelopeUse" })
export type EnvelopeUse = typeof EnvelopeUse.Type
