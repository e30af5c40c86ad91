/**
 * What the policy rules look at beyond the payload, read from the warehouse over the last 30 days: a kind's
 * `autoApply` takes them (Kind.ts), the warehouse view reads them (WarehouseView.ts), the apply worker reads them
 * again. Declared on its own so that those two name it without naming each other.
 */
import type { Band } from "@acs/domain/Actions"
import type { Evidence } from "@acs/domain/Guardrails"
import type { Effect } from "effect"

export interface PolicyFacts {
  /** The campaign's evidence over the same 30 days: the complete days it has metrics for, and its installs. */
  readonly campaignEvidence30d: (campaignId: string) => Effect.Effect<{ readonly days: number; readonly installs: number }>
  /** The evidence a raise needs behind it to auto-apply: the account's guardrails (docs/contract.md 3.3). */
  readonly minimumEvidence: Effect.Effect<Evidence>
  /** The campaign's 30-day cost per install in micros; null without installs. */
  readonly campaignCpa30d: (campaignId: string) => Effect.Effect<number | null>
  /** The account's 30-day average cost per tap in micros; null without taps. */
  readonly accountAvgCpt30d: Effect.Effect<number | null>
  /** The operator's band for the campaign (the campaign's own, else the account's); null when unset. */
  readonly cpaBand: (campaignId: string) => Effect.Effect<Band | null>
}
