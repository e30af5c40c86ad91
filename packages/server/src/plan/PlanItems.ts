/** What every plan rule builds with: totals and their CPA, evidence, the proposal's path, the item itself. */
import type { Band } from "@acs/domain/Actions"
import type { PlanEvidence, PlanItem, PlanProposal } from "@acs/domain/Plan"
import type { AccountRecord } from "../accounts/AccountRecord.ts"
import { money } from "../actions/kinds/KindSupport.ts"
import type { MetricWindow } from "../warehouse/Window.ts"
import { FACT_DAYS } from "./AccountFacts.ts"

/** The largest amount a proposal body takes (ProposalKinds `Micros`). */
export const MAX_MICROS = 1_000_000_000_000

export interface Totals {
  readonly spendMicros: number
  readonly taps: number
  readonly installs: number
}

export const num = (value: string | number | null): number => (value === null ? 0 : Number(value))
export const cpaOf = (t: Totals): number | null => (t.installs > 0 ? Math.round(t.spendMicros / t.installs) : null)

export const baseEvidence = (t: Totals, band: Band | null): PlanEvidence => ({
  windowDays: FACT_DAYS,
  spendMicros: t.spendMicros,
  installs: t.installs,
  cpaMicros: cpaOf(t),
  band
})

export const sum = (rows: ReadonlyArray<Totals>): Totals =>
  rows.reduce((a, r) => ({ spendMicros: a.spendMicros + r.spendMicros, taps: a.taps + r.taps, installs: a.installs + r.installs }), {
    spendMicros: 0,
    taps: 0,
    installs: 0
  })

export const pathOf = (projectId: string, kindPath: string) => `/api/v1/accounts/${projectId}/actions/${kindPath}`

export const bandText = (band: Band, currency: string) => `${money(band.minMicros, currency)}–${money(band.maxMicros, currency)}`

export interface Context {
  readonly account: AccountRecord
  readonly window: MetricWindow
  readonly bands: ReadonlyMap<string, Band | null>
  /** Whole minor units of the account currency, in micros: every amount proposed is a multiple. */
  readonly unit: number
}

export const planItem = (
  itemId: string,
  title: string,
  rationale: string,
  impactMicros: number,
  evidence: PlanEvidence,
  proposal: PlanProposal
): PlanItem => ({ itemId, title, rationale, impactMicros, evidence, proposal })
