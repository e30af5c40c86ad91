/** Spend suffixes computed in memory while staging: the days they cover, each entity's array, its owners. */
import type { ReportLevel } from "@acs/upstream/Upstream"
import type { Period } from "./ReportRows.ts"
import { addDays, MAX_DAYS } from "./Window.ts"

/**
 * What computing the spend suffixes while staging needs: the last synced day and the age (1 = that day) of
 * every day of the 90 the suffixes cover. Only usable when the sync reads all of those days itself.
 */
export interface SuffixDays {
  readonly through: string
  readonly ages: ReadonlyMap<string, number>
}

export const suffixDaysOf = (through: string): SuffixDays => ({
  through,
  ages: new Map(Array.from({ length: MAX_DAYS }, (_, i) => [addDays(through, -i), i + 1]))
})

/**
 * The suffix array of one entity as an element of a text[] literal (itself an int8[] literal), or undefined
 * when it spent nothing in the 90 days.
 */
export const suffixElement = (days: SuffixDays, periods: ReadonlyArray<Period>, byAge: Array<number>): string | undefined => {
  byAge.fill(0)
  let spent = false
  for (const p of periods) {
    if (p.spendMicros <= 0) continue
    const age = days.ages.get(p.date)
    if (age === undefined) continue
    byAge[age - 1]! += p.spendMicros
    spent = true
  }
  if (!spent) return undefined
  for (let i = 1; i < MAX_DAYS; i++) byAge[i]! += byAge[i - 1]!
  return `"{${byAge.join(",")}}"`
}

/** Per level, the owners written beside each entity's suffix while staging. */
export type SuffixOwners = Record<ReportLevel, Map<string, string>>

/** Campaign and ad group of an entity as written beside its suffix: what narrowing filters on. */
export const ownerOf = (campaignId: string, adGroupId: string | null) => `${campaignId}\u0000${adGroupId ?? ""}`
