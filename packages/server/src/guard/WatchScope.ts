/**
 * What the guard judges of an applied change (docs/contract.md 3.4): the level and the entities whose metrics show its
 * outcome, with their campaigns and ad groups (what a confounder must touch). A budget, status or bid-strategy change
 * shows on its campaign; an ad group's status, default bid or goal, Search Match, an ad's status and keywords added or
 * removed show on their ad groups; a keyword's bid or status on the keywords. Negatives show where they apply: their
 * ad groups, or their campaigns for a campaign-level negative. A changeset's members are judged together, on their
 * campaigns. A search-term harvest shows on the keywords it created (their ids are in its result). Other kinds
 * (creations, renames, reverts, outside changes) are not watched.
 */
import type { WatchLevel } from "@acs/domain/Guard"

export interface WatchScope {
  readonly level: WatchLevel
  readonly entityIds: ReadonlyArray<string>
  readonly campaignIds: ReadonlyArray<string>
  readonly adGroupIds: ReadonlyArray<string>
}

const LEVEL_OF_KIND: Readonly<Record<string, WatchLevel | "negatives">> = {
  budget_change: "campaigns",
  campaign_status: "campaigns",
  bid_strategy_change: "campaigns",
  target_cpa_change: "campaigns",
  ad_group_status: "adGroups",
  default_bid_change: "adGroups",
  cpa_goal_change: "adGroups",
  search_match_change: "adGroups",
  ad_status: "adGroups",
  add_keywords: "adGroups",
  remove_keywords: "adGroups",
  change_match_type: "adGroups",
  keyword_bid_change: "keywords",
  keyword_status: "keywords",
  add_negative_keywords: "negatives",
  remove_negative_keywords: "negatives",
  harvest_search_terms: "keywords"
}

/** The kinds the guard watches. */
export const WATCHED_KINDS: ReadonlyArray<string> = Object.keys(LEVEL_OF_KIND)

interface Place {
  readonly campaignId: string
  readonly adGroupId: string | null
  readonly keywordId: string | null
}

const text = (value: unknown): string | null => (typeof value === "string" ? value : null)

/** Each place the payload names: its top object, and the objects of its arrays (keywords, priorKeywords, negatives…). */
const placesOf = (payload: Readonly<Record<string, unknown>>): ReadonlyArray<Place> => {
  const objects = [payload, ...Object.values(payload).flatMap((value) => (Array.isArray(value) ? value : []))]
  return objects.flatMap((object): ReadonlyArray<Place> => {
    if (typeof object !== "object" || object === null) return []
    const record = object as Readonly<Record<string, unknown>>
    const campaignId = text(record["campaignId"])
    return campaignId === null ? [] : [{ campaignId, adGroupId: text(record["adGroupId"]), keywordId: text(record["keywordId"]) }]
  })
}

const distinct = (values: ReadonlyArray<string | null>): ReadonlyArray<string> =>
  [...new Set(values.filter((value): value is string => value !== null))].sort()

const scopeAt = (level: WatchLevel, places: ReadonlyArray<Place>): WatchScope | undefined => {
  const entityIds = distinct(places.map((place) => level === "campaigns" ? place.campaignId : level === "adGroups" ? place.adGroupId : place.keywordId))
  if (entityIds.length === 0) return undefined
  return {
    level,
    entityIds,
    campaignIds: distinct(places.map((place) => place.campaignId)),
    adGroupIds: level === "campaigns" ? [] : distinct(places.map((place) => place.adGroupId))
  }
}

/** A harvest's new keywords: term `i`'s keyword id is `keywordId:i` of the result, its place the term's target. */
const harvestedKeywords = (payload: Readonly<Record<string, unknown>>, result: Readonly<Record<string, unknown>>): ReadonlyArray<Place> => {
  const terms = Array.isArray(payload["terms"]) ? payload["terms"] : []
  return terms.flatMap((term: unknown, index): ReadonlyArray<Place> => {
    if (typeof term !== "object" || term === null) return []
    const record = term as Readonly<Record<string, unknown>>
    const campaignId = text(record["targetCampaignId"])
    const keywordId = text(result[`keywordId:${index}`])
    return campaignId === null || keywordId === null ? [] : [{ campaignId, adGroupId: text(record["targetAdGroupId"]), keywordId }]
  })
}

/** The scope of one applied action of `kind` (with its result's ids), or undefined when the guard does not watch it. */
export const watchScopeOf = (
  kind: string,
  payload: Readonly<Record<string, unknown>>,
  result: Readonly<Record<string, unknown>> = {}
): WatchScope | undefined => {
  const level = LEVEL_OF_KIND[kind]
  if (level === undefined) return undefined
  if (kind === "harvest_search_terms") return scopeAt("keywords", harvestedKeywords(payload, result))
  const places = placesOf(payload)
  if (level !== "negatives") return scopeAt(level, places)
  return scopeAt(places.some((place) => place.adGroupId === null) ? "campaigns" : "adGroups", places)
}

/** A changeset's watched members together: on their campaigns. */
export const changesetScopeOf = (
  members: ReadonlyArray<{ readonly kind: string; readonly payload: Readonly<Record<string, unknown>>; readonly result?: Readonly<Record<string, unknown>> | null }>
): WatchScope | undefined => {
  const campaignIds = distinct(members.flatMap((member) => watchScopeOf(member.kind, member.payload, member.result ?? {})?.campaignIds ?? []))
  return campaignIds.length === 0 ? undefined : { level: "campaigns", entityIds: campaignIds, campaignIds, adGroupIds: [] }
}
