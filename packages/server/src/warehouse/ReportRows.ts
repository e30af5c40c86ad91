/**
 * Report rows as the sync stages them: one entity's rows merged per day, its key, and the window's days and
 * array literals the staging INSERTs carry.
 */
import type { Metrics, ReportLevel, ReportRow } from "@acs/upstream/Upstream"
import type { SyncPlan } from "./SyncPlan.ts"
import { addDays, daysBetween } from "./Window.ts"

export type Period = Metrics & { readonly date: string }

/** One entity of a report: its first row (the owners) and its days, summed when it had several rows. */
export interface ReportEntity {
  readonly row: ReportRow
  readonly periods: ReadonlyArray<Period>
}

/**
 * Unambiguous for any text. The low-volume terms the platform reports without one are one entity per ad group,
 * whatever their source (its keywords' and Search Match's buckets summed): `[adGroupId, null, null]`.
 */
export const searchTermKey = (adGroupId: string, keywordId: string | null, term: string | null) =>
  JSON.stringify([adGroupId, term === null ? null : keywordId, term])

/** What `search_terms` keeps of a term's source: the matched keyword (id, text, match type), or none. */
export interface TermSource {
  readonly keywordId: string | null
  readonly keywordText: string | null
  readonly matchType: string | null
}

/** A search-term row's source: its keyword when it has text and one; Search Match and the bucket have none. */
export const termSourceOf = (row: ReportRow): TermSource =>
  row.searchTerm === null || row.keywordId === null
    ? { keywordId: null, keywordText: null, matchType: null }
    : { keywordId: row.keywordId, keywordText: row.keyword, matchType: row.matchType === "EXACT" || row.matchType === "BROAD" ? row.matchType : null }

export const entityKeyOf = (level: ReportLevel, row: ReportRow): string | undefined => {
  switch (level) {
    case "campaigns":
      return row.campaignId
    case "adGroups":
      return row.adGroupId ?? undefined
    case "keywords":
      return row.keywordId ?? undefined
    case "ads":
      return row.adId ?? undefined
    case "searchTerms":
      return row.adGroupId === null ? undefined : searchTermKey(row.adGroupId, row.keywordId, row.searchTerm)
  }
}

/** Two rows of one entity (hidden search terms of an ad group and keyword share a key): summed per day. */
export const mergePeriods = (a: ReadonlyArray<Period>, b: ReadonlyArray<Period>): Array<Period> => {
  const byDay = new Map(a.map((p) => [p.date, p]))
  for (const p of b) {
    const q = byDay.get(p.date)
    byDay.set(p.date, q === undefined ? p : {
      date: p.date,
      impressions: p.impressions + q.impressions,
      taps: p.taps + q.taps,
      installs: p.installs + q.installs,
      spendMicros: p.spendMicros + q.spendMicros
    })
  }
  return [...byDay.values()]
}

/**
 * Array parameters written out here rather than by the driver, which converts and escapes element by element:
 * numbers joined natively, text quoted once per entity however many rows repeat it.
 */
export const arrayLiteral = (elements: ReadonlyArray<number | string>) => `{${elements.join(",")}}`
export const textElement = (text: string) => `"${text.replace(/[\\"]/g, "\\$&")}"`

/** Each day of the window as its offset from the first, so days travel as small integers. */
export interface WindowDays {
  readonly start: string
  readonly offsets: ReadonlyMap<string, number>
}

export const windowDaysOf = (plan: SyncPlan): WindowDays => {
  const length = daysBetween(plan.windowStart, plan.windowEnd) + 1
  return {
    start: plan.windowStart,
    offsets: new Map(Array.from({ length }, (_, i) => [addDays(plan.windowStart, i), i]))
  }
}
