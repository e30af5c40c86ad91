/**
 * A change-history detail's fields in acs's words: v1 field names become the names acs uses elsewhere
 * (payloads, the warehouse) where one obviously matches, and v1 money becomes integer micros. Fields with
 * no acs counterpart keep the platform's name and value.
 */
import type { ExternalChangePayload } from "@acs/domain/Actions"
import { microsFromDecimal } from "@acs/upstream/Money"
import type { UpstreamChangeDetail } from "@acs/upstream/Upstream"

type Change = ExternalChangePayload["changes"][number]
type EntityKind = ExternalChangePayload["entity"]["type"]

const ENTITY_KINDS: Readonly<Record<string, EntityKind>> = {
  Campaign: "campaign",
  AdGroup: "adGroup",
  Keyword: "keyword",
  NegativeKeyword: "negativeKeyword",
  Ad: "ad"
}

export const entityKindOf = (entityType: string): EntityKind => ENTITY_KINDS[entityType] ?? "other"

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Apple lists values as arrays: none is null, one is the value, several stay a list. */
const single = (values: ReadonlyArray<unknown>): unknown => values.length === 0 ? null : values.length === 1 ? values[0] : values

/** v1 Money (`{amount, currency}`), or a campaign budget's `{value: Money}`, → micros; anything else as it is. */
const micros = (value: unknown): unknown => {
  const money = isObject(value) && isObject(value["value"]) ? value["value"] : value
  if (!isObject(money) || typeof money["amount"] !== "string") return value
  try {
    return microsFromDecimal(money["amount"])
  } catch {
    return value
  }
}

/** Keywords and negatives say ENABLED on v1 and ACTIVE in acs. */
const keywordStatus = (value: unknown): unknown => value === "ENABLED" ? "ACTIVE" : value

const field = (name: string, convert: (value: unknown) => unknown = (v) => v) => ({ name, convert })

type Mapping = Readonly<Record<string, ReturnType<typeof field>>>

const MAPPINGS: Readonly<Record<string, Mapping>> = {
  Campaign: {
    dailyBudget: field("dailyBudgetMicros", micros),
    promotedObjectId: field("adamId"),
    targeting: field("countriesOrRegions", (value) => {
      const country = isObject(value) && isObject(value["countryOrRegion"]) ? value["countryOrRegion"]["include"] : undefined
      return Array.isArray(country) ? country : value
    })
  },
  AdGroup: {
    defaultBid: field("defaultBidMicros", micros),
    cpaGoal: field("cpaGoalMicros", micros),
    automatedKeywordsOptIn: field("searchMatch")
  },
  Keyword: { bid: field("bidMicros", micros), status: field("status", keywordStatus) },
  NegativeKeyword: { status: field("status", keywordStatus) }
}

/** A v1 campaign's `bidStrategy` object is two acs fields: the strategy and its target CPA. */
const bidStrategyChanges = (oldValue: unknown, newValue: unknown): ReadonlyArray<Change> => {
  const type = (v: unknown) => isObject(v) ? v["bidStrategyType"] ?? null : v
  const target = (v: unknown) => isObject(v) && v["bid"] !== undefined && v["bid"] !== null ? micros(v["bid"]) : null
  return [
    ...(JSON.stringify(type(oldValue)) === JSON.stringify(type(newValue))
      ? []
      : [{ field: "bidStrategy", oldValue: type(oldValue), newValue: type(newValue) }]),
    ...(JSON.stringify(target(oldValue)) === JSON.stringify(target(newValue))
      ? []
      : [{ field: "targetCpaMicros", oldValue: target(oldValue), newValue: target(newValue) }])
  ]
}

export const acsChanges = (detail: Pick<UpstreamChangeDetail, "entityType" | "fields">): ReadonlyArray<Change> =>
  detail.fields.flatMap((change): ReadonlyArray<Change> => {
    const oldValue = single(change.oldValues)
    const newValue = single(change.newValues)
    if (detail.entityType === "Campaign" && change.field === "bidStrategy") return bidStrategyChanges(oldValue, newValue)
    const mapping = MAPPINGS[detail.entityType]?.[change.field]
    return mapping === undefined
      ? [{ field: change.field, oldValue, newValue }]
      : [{ field: mapping.name, oldValue: mapping.convert(oldValue), newValue: mapping.convert(newValue) }]
  })
