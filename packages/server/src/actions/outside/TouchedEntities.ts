/**
 * Which upstream entities an acs action touched, in the change history's terms (entity type and id), read
 * from its payload and result: what an outside change must name to supersede the action, and what the
 * apply worker looks up in the change history when it finds drift. Derived from the stored row rather than
 * kept per kind, so rows written before this existed are covered too.
 */
import type { ActionRecord } from "@acs/domain/Actions"

/** Apple's audit entity type names (the change history's `entityType`). */
export type AuditEntityType = "Campaign" | "AdGroup" | "Keyword" | "NegativeKeyword" | "Ad"

export interface EntityRef {
  readonly type: AuditEntityType
  readonly id: string
}

/** Kinds that create: their payload names only the parents of what they made, which they did not change. */
const CREATING_KINDS: ReadonlySet<string> = new Set([
  "create_campaign",
  "clone_campaign",
  "create_ad_group",
  "clone_ad_group",
  "add_keywords",
  "add_negative_keywords",
  "harvest_search_terms"
])

/** Id field names, most specific first: a payload object stands for the most specific entity it names. */
const ID_FIELDS: ReadonlyArray<readonly [string, AuditEntityType]> = [
  ["negativeKeywordId", "NegativeKeyword"],
  ["keywordId", "Keyword"],
  ["adId", "Ad"],
  ["adGroupId", "AdGroup"],
  ["campaignId", "Campaign"]
]

/** A result key (`campaignId`, `keywordIds:0`, `newKeywordId`, `negativeKeywordId:2`) → the entity type its ids are. */
const typeOfResultKey = (key: string): AuditEntityType | undefined => {
  const name = key.split(":")[0]!.toLowerCase()
  if (name.endsWith("negativekeywordid") || name.endsWith("negativekeywordids")) return "NegativeKeyword"
  if (name.endsWith("keywordid") || name.endsWith("keywordids")) return "Keyword"
  if (name.endsWith("adgroupid") || name.endsWith("adgroupids")) return "AdGroup"
  if (name.endsWith("campaignid") || name.endsWith("campaignids")) return "Campaign"
  if (name === "adid" || name === "adids") return "Ad"
  return undefined
}

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

const strings = (value: unknown): ReadonlyArray<string> =>
  typeof value === "string" ? [value] : Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : []

/** Every object in the payload names its most specific entity; `…Ids` arrays name one entity each. */
const fromPayload = (value: unknown, out: Array<EntityRef>): void => {
  if (Array.isArray(value)) {
    for (const item of value) fromPayload(item, out)
    return
  }
  if (!isObject(value)) return
  // A rename says which entity by name and id.
  if ((value["entity"] === "campaign" || value["entity"] === "adGroup") && typeof value["id"] === "string") {
    out.push({ type: value["entity"] === "campaign" ? "Campaign" : "AdGroup", id: value["id"] })
  } else {
    const specific = ID_FIELDS.find(([field]) => typeof value[field] === "string")
    if (specific !== undefined) out.push({ type: specific[1], id: value[specific[0]] as string })
  }
  for (const [key, field] of Object.entries(value)) {
    if (key.endsWith("Ids")) {
      const type = typeOfResultKey(key)
      if (type !== undefined) for (const id of strings(field)) out.push({ type, id })
    } else if (typeof field === "object") {
      fromPayload(field, out)
    }
  }
}

export const touchedEntities = (action: Pick<ActionRecord, "kind" | "payload" | "result">): ReadonlyArray<EntityRef> => {
  if (action.kind === "external_change") return []
  const out: Array<EntityRef> = []
  if (!CREATING_KINDS.has(action.kind)) fromPayload(action.payload, out)
  for (const [key, value] of Object.entries(action.result ?? {})) {
    const type = typeOfResultKey(key)
    if (type !== undefined) for (const id of strings(value)) out.push({ type, id })
  }
  const seen = new Set<string>()
  return out.filter((ref) => {
    const key = `${ref.type}.${ref.id}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

export const touches = (entities: ReadonlyArray<EntityRef>, type: string, id: string): boolean =>
  entities.some((ref) => ref.type === type && ref.id === id)
