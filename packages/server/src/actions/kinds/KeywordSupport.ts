/**
 * What the keyword kinds share: how the platform tells keywords apart (text, case and spaces ignored, plus
 * match type), upstream reads per ad group (its bulk calls are per ad group), a field's edit as bulk-update
 * rows (their step: BulkParts.ts), and where negative keywords live.
 */
import { NotFound } from "@acs/domain/Errors"
import type { KeywordChange, UpstreamFailure, UpstreamKeyword } from "@acs/upstream/Upstream"
import { Effect } from "effect"
import type { KeywordRow, Standing, StepContext } from "./Kind.ts"
import type { WarehouseView } from "./WarehouseView.ts"

/** The platform's identity of a keyword inside one ad group or negative list. */
export const keywordKey = (text: string, matchType: string): string => `${matchType}|${text.trim().toLowerCase()}`

export const quoted = (keyword: { readonly text: string; readonly matchType: string }): string =>
  `"${keyword.text}" (${keyword.matchType})`

/** A list for a summary: the first few items, then how many more. */
export const listed = (items: ReadonlyArray<string>, shown = 5): string =>
  items.length <= shown ? items.join(", ") : `${items.slice(0, shown).join(", ")} and ${items.length - shown} more`

export const plural = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? "" : "s"}`

/** A bulk row in a warning: the keyword it was about. */
export const keywordLabel = (keyword: { readonly keywordId: string; readonly text: string } | undefined, row: number): string =>
  keyword === undefined ? `row ${row}` : `keyword ${keyword.keywordId} "${keyword.text}"`

/** A keyword's state in a drift reason (no currency at hand there, so micros). */
export const stateText = (keyword: { readonly status: string; readonly bidMicros: number | null }): string =>
  `${keyword.status} with ${keyword.bidMicros === null ? "the ad group's default bid" : `a bid of ${keyword.bidMicros} micros`}`

/** The platform's limit of targeting plus negative keywords per ad group (and negatives per campaign). */
export const MAX_KEYWORDS_PER_AD_GROUP = 5000

/** Items grouped by a key, in first-seen order. */
export const groupBy = <A>(items: ReadonlyArray<A>, key: (item: A) => string): Map<string, Array<A>> => {
  const groups = new Map<string, Array<A>>()
  for (const item of items) {
    const k = key(item)
    const group = groups.get(k)
    if (group === undefined) groups.set(k, [item])
    else group.push(item)
  }
  return groups
}

/** Texts that occur more than once in a request, as validation reasons. */
export const duplicatesIn = (keywords: ReadonlyArray<{ readonly text: string; readonly matchType: string }>): Array<string> =>
  [...groupBy(keywords, (k) => keywordKey(k.text, k.matchType)).values()]
    .filter((same) => same.length > 1)
    .map((same) => `${quoted(same[0]!)} appears ${same.length} times in the request`)

/** Warehouse keywords by id (each once, in request order), or 404 listing every unknown id. */
export const knownKeywords = (view: WarehouseView, keywordIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const ids = [...new Set(keywordIds)]
    const rows = new Map((yield* view.keywords(ids)).map((k) => [k.keywordId, k]))
    yield* requireAll("keyword", ids, [...rows.keys()])
    return ids.flatMap((id) => rows.get(id) ?? [])
  })

/** A 404 listing every id of `what` the warehouse does not hold. */
export const requireAll = (what: string, wanted: ReadonlyArray<string>, held: ReadonlyArray<string>): Effect.Effect<void, NotFound> => {
  const have = new Set(held)
  const missing = [...new Set(wanted)].filter((id) => !have.has(id))
  return missing.length === 0
    ? Effect.void
    : Effect.fail(new NotFound({ message: `no ${missing.length === 1 ? what : `${what}s`} ${missing.join(", ")} in this account` }))
}

export interface AdGroupRef {
  readonly campaignId: string
  readonly adGroupId: string
}

/**
 * Each read list by keyword id, made once per list: a client that shares its reads (a changeset revert's check)
 * answers the same list to every member of an ad group, which would otherwise index it again per member.
 */
const indexed = new WeakMap<ReadonlyArray<UpstreamKeyword>, ReadonlyMap<string, UpstreamKeyword>>()

const byKeywordId = (list: ReadonlyArray<UpstreamKeyword>): ReadonlyMap<string, UpstreamKeyword> => {
  const known = indexed.get(list)
  if (known !== undefined) return known
  const made = new Map(list.map((k) => [k.keywordId, k]))
  indexed.set(list, made)
  return made
}

/** The live upstream keywords of each named ad group, by keyword id. */
export const upstreamKeywords = (context: StepContext, adGroups: ReadonlyArray<AdGroupRef>): Effect.Effect<ReadonlyMap<string, UpstreamKeyword>, UpstreamFailure> => {
  const distinct = [...groupBy(adGroups, (g) => g.adGroupId).values()].map((same) => same[0]!)
  const read = (g: AdGroupRef) => context.client.keywords(context.accountId, g.campaignId, g.adGroupId)
  // One ad group (most changes) is read without the fibers of a concurrent forEach.
  return distinct.length === 1
    ? Effect.map(read(distinct[0]!), byKeywordId)
    : Effect.forEach(distinct, read, { concurrency: 4 }).pipe(Effect.map((lists) => new Map(lists.flat().map((k) => [k.keywordId, k]))))
}

/** One keyword's field to move from `prior` to `target`. */
export interface KeywordEdit<F> {
  readonly keywordId: string
  readonly adGroupId: string
  readonly campaignId: string
  readonly text: string
  readonly prior: F
  readonly target: F
}

export interface KeywordEdits<F extends string | number | null> {
  readonly name: string
  /** The field in words, for drift reasons: `bid`. */
  readonly field: string
  readonly read: (keyword: UpstreamKeyword) => F
  readonly show: (value: F) => string
  readonly change: (keywordId: string, target: F) => KeywordChange
  readonly edits: ReadonlyArray<KeywordEdit<F>>
}

const standing = <F extends string | number | null>(
  spec: KeywordEdits<F>,
  edit: KeywordEdit<F>,
  current: UpstreamKeyword | undefined
): Standing => {
  if (current === undefined) return { drift: `keyword ${edit.keywordId} "${edit.text}" was removed outside acs` }
  const value = spec.read(current)
  if (value === edit.target) return "done"
  if (value === edit.prior) return "pending"
  return {
    drift: `the ${spec.field} of keyword ${edit.keywordId} "${edit.text}" changed outside acs: it is now ${spec.show(value)} ` +
      `upstream; acs recorded ${spec.show(edit.prior)} at proposal`
  }
}

export const driftReasons = (standings: ReadonlyArray<Standing>): Array<string> =>
  standings.flatMap((s) => (typeof s === "object" ? [s.drift] : []))

export const keywordRows = <F extends string | number | null>(spec: KeywordEdits<F>): ReadonlyArray<KeywordRow> =>
  spec.edits.map((edit) => ({
    keywordId: edit.keywordId,
    adGroupId: edit.adGroupId,
    campaignId: edit.campaignId,
    text: edit.text,
    standing: (current) => standing(spec, edit, current),
    change: spec.change(edit.keywordId, edit.target)
  }))

/** Reads the upstream: a reason when some keyword holds neither the prior value nor the target. */
export const keywordEditsDrift = <F extends string | number | null>(spec: KeywordEdits<F>) => (context: StepContext) =>
  upstreamKeywords(context, spec.edits).pipe(Effect.map((current) => {
    const reasons = driftReasons(spec.edits.map((edit) => standing(spec, edit, current.get(edit.keywordId))))
    return reasons.length === 0 ? null : reasons.join("; ")
  }))

/** Where a negative keyword lives: a campaign (adGroupId null) or one of its ad groups, with names for summaries. */
export interface NegativePlace {
  readonly campaignId: string
  readonly campaignName: string
  readonly adGroupId: string | null
  readonly adGroupName: string | null
}

export const placeKey = (place: Pick<NegativePlace, "campaignId" | "adGroupId">): string => `${place.campaignId}/${place.adGroupId ?? ""}`

export const placeText = (place: NegativePlace): string =>
  place.adGroupId === null
    ? `campaign "${place.campaignName}"`
    : `ad group "${place.adGroupName ?? place.adGroupId}" of campaign "${place.campaignName}"`

/** Negatives with their places, for a summary: one place is named once, several are named per keyword. */
export const negativesText = (
  negatives: ReadonlyArray<NegativePlace & { readonly text: string; readonly matchType: string }>,
  preposition: "to" | "from"
): string => {
  const places = groupBy(negatives, placeKey)
  const first = negatives[0]
  const count = plural(negatives.length, "negative keyword")
  return places.size === 1 && first !== undefined
    ? `${count} ${preposition} ${placeText(first)}: ${listed(negatives.map(quoted))}`
    : `${count} in ${places.size} places: ${listed(negatives.map((n) => `${quoted(n)} ${preposition} ${placeText(n)}`))}`
}

/** The live upstream negatives (campaign level and every ad group's) of each named campaign. */
export const upstreamNegatives = (context: StepContext, campaignIds: ReadonlyArray<string>) =>
  Effect.forEach([...new Set(campaignIds)], (id) => context.client.negativeKeywords(context.accountId, id), { concurrency: 4 })
    .pipe(Effect.map((lists) => lists.flat()))
