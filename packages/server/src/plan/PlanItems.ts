/** What every plan rule builds with: totals and their CPA, evidence, the proposal's path, the item itself. */
import type { Band } from "@acs/domain/Actions"
import type { PlanEvidence, PlanItem, PlanProposal } from "@acs/domain/Plan"
import type { SqlClient } from "@effect/sql"
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

/**
 * The window's search terms per ad group, one row per text (trimmed, compared case-insensitively, summed over the
 * sources it ran under; the low-volume bucket has none), as a query to name in a `WITH`: campaign_id, ad_group_id,
 * term (the compared form), text, spend, taps, installs.
 */
export const searchTermTotals = (sql: SqlClient.SqlClient, { account, window }: Context) => sql`
  SELECT st.campaign_id, st.ad_group_id, lower(btrim(st.text)) AS term, min(btrim(st.text)) AS text,
    sum(m.spend_micros) AS spend, sum(m.taps) AS taps, sum(m.installs) AS installs
  FROM search_terms st
  JOIN daily_metrics m ON m.project_id = st.project_id AND m.level = 'searchTerms' AND m.entity_key = st.entity_key
    AND m.day BETWEEN ${window.start}::date AND ${window.end}::date
  WHERE st.project_id = ${account.projectId} AND st.text IS NOT NULL AND length(btrim(st.text)) BETWEEN 1 AND 80
  GROUP BY st.campaign_id, st.ad_group_id, lower(btrim(st.text))`

export const planItem = (
  itemId: string,
  title: string,
  rationale: string,
  impactMicros: number,
  evidence: PlanEvidence,
  proposal: PlanProposal
): PlanItem => ({ itemId, title, rationale, impactMicros, evidence, proposal })
