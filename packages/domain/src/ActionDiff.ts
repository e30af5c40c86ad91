/**
 * An action's change, field by field: prior → proposed. Every kind records the state it replaces in
 * `prior…` fields (docs/contract.md 1) next to the value it writes (`newX`, or `x`), at the top of the payload or per
 * entity in a list (keywords of a bid change); an outside change carries `{field, oldValue, newValue}`. The console
 * shows it, and so does the Slack approval message (server webhooks/SlackAppMessage.ts).
 */

export interface DiffRow {
  /** The entity within the action (a keyword's text), when the action changes several. */
  readonly entity: string | null
  readonly field: string
  readonly prior: unknown
  readonly proposed: unknown
  /** What the change does to the field: `set` a new value, `add` something new, `remove` what was there. */
  readonly change: "set" | "add" | "remove"
}

type Json = Readonly<Record<string, unknown>>

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const PRIOR = /^prior([A-Z].*)$/

const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1)

const labelOf = (entity: Json): string | null => {
  for (const key of ["text", "name", "keywordId", "negativeKeywordId", "adGroupId", "campaignId", "id"]) {
    const value = entity[key]
    if (typeof value === "string" || typeof value === "number") return String(value)
  }
  return null
}

/** Fields that say which entity or why, not what changes. */
const CONTEXT = new Set(["reason", "campaignId", "adGroupId", "keywordId", "keywordIds", "adId", "id", "entity", "negativeKeywordIds"])

const pairs = (object: Json, entity: string | null): Array<DiffRow> => {
  const rows: Array<DiffRow> = []
  for (const [key, prior] of Object.entries(object)) {
    const match = PRIOR.exec(key)
    if (match === null) continue
    const base = match[1]!
    const proposedKey = [`new${base}`, lowerFirst(base)].find((k) => k in object)
    rows.push(
      proposedKey === undefined
        ? { entity, field: key, prior, proposed: undefined, change: "remove" }
        : { entity, field: key, prior, proposed: object[proposedKey], change: "set" }
    )
  }
  for (const [key, value] of Object.entries(object)) {
    if (PRIOR.test(key) || !Array.isArray(value)) continue
    for (const item of value) {
      if (isObject(item) && Object.keys(item).some((k) => PRIOR.test(k))) rows.push(...pairs(item, labelOf(item)))
    }
  }
  return rows
}

/**
 * A harvest creates, per term, an EXACT keyword in its target (at its bid) and, when negated, an EXACT negative where it
 * came from; the delivery it records before (`priorDelivery`) is what the negatives take (HarvestDelivery.tsx), not a
 * field it writes.
 */
const harvestRows = (payload: Json): Array<DiffRow> => {
  const terms = Array.isArray(payload["terms"]) ? payload["terms"].filter(isObject) : []
  return terms.flatMap((t) => {
    const entity = String(t["text"])
    const add = (field: string, proposed: unknown): DiffRow => ({ entity, field, prior: undefined, proposed, change: "add" })
    return [
      add("exactKeyword", `in "${String(t["targetAdGroupName"] ?? t["targetAdGroupId"])}"`),
      add("keywordBidMicros", t["bidMicros"] ?? null),
      ...(payload["negateAtSource"] === true ? [add("exactNegative", `in "${String(t["sourceAdGroupName"] ?? t["sourceAdGroupId"])}"`)] : [])
    ]
  })
}

export const diffOf = (kind: string, payload: Json): ReadonlyArray<DiffRow> => {
  if (kind === "harvest_search_terms") return harvestRows(payload)
  if (kind === "external_change") {
    const changes = Array.isArray(payload["changes"]) ? payload["changes"] : []
    const entity = isObject(payload["entity"]) ? labelOf(payload["entity"]) : null
    return changes.filter(isObject).map((c) => ({
      entity,
      field: String(c["field"]),
      prior: c["oldValue"],
      proposed: c["newValue"],
      change: "set" as const
    }))
  }
  const rows = pairs(payload, null)
  if (rows.length > 0) return rows
  // A creation has no prior state: everything it writes is new.
  return Object.entries(payload)
    .filter(([key]) => !CONTEXT.has(key))
    .map(([field, proposed]) => ({ entity: null, field, prior: undefined, proposed, change: "add" as const }))
}
