/**
 * What the search-terms page harvests (docs/contract.md 2.1.1): the terms chosen, each with the ad
 * group it came from and the one its EXACT keyword goes into, keyed so a term is chosen once per source; the plan's
 * harvest candidates as such choices; and the delivery share a harvest's preview records per source ad group.
 */
import type { PlanItem } from "@acs/domain/Plan"
import { Option, Schema } from "effect"

export interface ChosenTerm {
  readonly text: string
  readonly sourceAdGroupId: string
  readonly targetAdGroupId: string
  /** absent (or null): the target ad group's default bid. */
  readonly bidMicros?: number | null | undefined
}

/** A term is one choice per source ad group, whatever its case or spaces (as the platform matches keywords). */
export const termKey = (sourceAdGroupId: string, text: string): string => `${sourceAdGroupId}|${text.trim().toLowerCase()}`

/** The plan's harvest items: each term of each, as the plan would propose it. */
export const harvestCandidates = (items: ReadonlyArray<PlanItem>): ReadonlyArray<{ readonly item: PlanItem; readonly terms: ReadonlyArray<ChosenTerm> }> =>
  items.flatMap((item) => (item.proposal.kind === "harvest_search_terms" ? [{ item, terms: item.proposal.body.terms }] : []))

/**
 * Whether a harvest of these terms negates them at their sources: only when no term's keyword goes into the ad group
 * it came from (a negative there would block the keyword), as the plan decides it for its own items.
 */
export const negatesAtSource = (terms: ReadonlyArray<ChosenTerm>): boolean =>
  terms.length > 0 && terms.every((t) => t.sourceAdGroupId !== t.targetAdGroupId)

const Totals = Schema.Struct({ spendMicros: Schema.Number, taps: Schema.Number, installs: Schema.Number })

/** A source ad group's 30-day delivery and the part its negated terms carried, as the harvest's payload records it. */
const SourceDelivery = Schema.Struct({
  adGroupId: Schema.String,
  adGroupName: Schema.String,
  total: Totals,
  removed: Totals,
  removedPct: Schema.Struct({ spend: Schema.Number, taps: Schema.Number, installs: Schema.Number })
})
export type SourceDelivery = typeof SourceDelivery.Type

const PriorDelivery = Schema.Struct({
  priorDelivery: Schema.Struct({ start: Schema.String, end: Schema.String, adGroups: Schema.Array(SourceDelivery) })
})

/** The window and the source ad groups' delivery a harvest's preview (or record) states; none when it negates nothing. */
export const deliveryOf = (payload: unknown) =>
  Option.map(Schema.decodeUnknownOption(PriorDelivery)(payload), (p) => p.priorDelivery)
