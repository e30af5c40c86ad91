/**
 * The `POST .../find` selector over wire objects: conditions (EQUALS, NOT_EQUALS, IN, CONTAINS,
 * STARTSWITH, GREATER_THAN, LESS_THAN, CONTAINS_ANY, CONTAINS_ALL), orderBy, pagination and a `fields`
 * projection. Report selectors reuse `matchesConditions` and `compareBy`.
 */
import type { WireSelector } from "../Wire.ts"
import { DEFAULT_LIMIT, invalid, MAX_LIMIT, type PageRequest, pageOf, type Pagination } from "./SimulatorHttp.ts"
import type { WireObject } from "./SimulatorWire.ts"

type Condition = NonNullable<WireSelector["conditions"]>[number]
type Ordering = NonNullable<WireSelector["orderBy"]>[number]

const OPERATORS = new Set(["EQUALS", "NOT_EQUALS", "IN", "CONTAINS", "STARTSWITH", "GREATER_THAN", "LESS_THAN", "CONTAINS_ANY", "CONTAINS_ALL"])

/** Money compares by its amount, everything else by its text. */
const scalar = (value: unknown): string | null => {
  if (value === null || value === undefined) return null
  if (typeof value === "object" && "amount" in value) return String(value.amount)
  return String(value)
}

const valuesOf = (value: unknown): Array<string | null> => (Array.isArray(value) ? value.map(scalar) : [scalar(value)])

const conditionHolds = (item: WireObject, condition: Condition): boolean => {
  const actual = valuesOf(item[condition.field])
  const expected = condition.values
  const first = expected[0] ?? ""
  switch (condition.operator) {
    case "EQUALS":
      return actual.some((value) => value === first)
    case "NOT_EQUALS":
      return actual.every((value) => value !== first)
    case "IN":
    case "CONTAINS_ANY":
      return actual.some((value) => value !== null && expected.includes(value))
    case "CONTAINS_ALL":
      return expected.every((value) => actual.includes(value))
    case "CONTAINS":
      return actual.some((value) => value !== null && value.toLowerCase().includes(first.toLowerCase()))
    case "STARTSWITH":
      return actual.some((value) => value !== null && value.toLowerCase().startsWith(first.toLowerCase()))
    case "GREATER_THAN":
      return actual.some((value) => value !== null && Number(value) > Number(first))
    case "LESS_THAN":
      return actual.some((value) => value !== null && Number(value) < Number(first))
    default:
      return false
  }
}

/** Refuses unknown fields and operators with a 400 naming the condition. */
export const checkConditions = (conditions: ReadonlyArray<Condition>, knownFields: ReadonlySet<string>): void =>
  conditions.forEach((condition, index) => {
    if (!knownFields.has(condition.field)) {
      throw invalid(`unknown field ${condition.field}`, `selector.conditions[${index}].field`)
    }
    if (!OPERATORS.has(condition.operator)) {
      throw invalid(`unsupported operator ${condition.operator}`, `selector.conditions[${index}].operator`)
    }
  })

export const matchesConditions = (item: WireObject, conditions: ReadonlyArray<Condition>): boolean =>
  conditions.every((condition) => conditionHolds(item, condition))

const compareValues = (a: unknown, b: unknown): number => {
  const left = scalar(a)
  const right = scalar(b)
  if (left === right) return 0
  if (left === null) return -1
  if (right === null) return 1
  const leftNumber = Number(left)
  const rightNumber = Number(right)
  if (left !== "" && right !== "" && !Number.isNaN(leftNumber) && !Number.isNaN(rightNumber)) return leftNumber - rightNumber
  return left < right ? -1 : 1
}

/** A comparator for orderBy over a value accessor; ties fall back to `tieBreak`. */
export const compareBy = <A>(
  orderings: ReadonlyArray<Ordering>,
  valueOf: (item: A, field: string) => unknown,
  tieBreak: (a: A, b: A) => number
) =>
(a: A, b: A): number => {
  for (const ordering of orderings) {
    const order = compareValues(valueOf(a, ordering.field), valueOf(b, ordering.field))
    if (order !== 0) return ordering.sortOrder === "DESCENDING" ? -order : order
  }
  return tieBreak(a, b)
}

export const selectorPage = (selector: WireSelector): PageRequest => {
  const pagination = selector.pagination
  const page = { offset: pagination?.offset ?? 0, limit: pagination?.limit ?? DEFAULT_LIMIT }
  if (page.offset < 0) throw invalid("offset must not be negative", "selector.pagination.offset")
  if (page.limit < 1 || page.limit > MAX_LIMIT) {
    throw invalid(`limit must be between 1 and ${MAX_LIMIT}`, "selector.pagination.limit")
  }
  return page
}

/**
 * Runs a find: deleted entities are left out unless a condition names `deleted`, as lists do.
 */
export const runSelector = (
  items: ReadonlyArray<WireObject>,
  selector: WireSelector,
  knownFields: ReadonlySet<string>
): { readonly items: Array<WireObject>; readonly pagination: Pagination } => {
  const conditions = selector.conditions ?? []
  const orderBy = selector.orderBy ?? []
  checkConditions(conditions, knownFields)
  orderBy.forEach((ordering, index) => {
    if (!knownFields.has(ordering.field)) throw invalid(`unknown field ${ordering.field}`, `selector.orderBy[${index}].field`)
  })
  const namesDeleted = conditions.some((condition) => condition.field === "deleted")
  const matching = items.filter((item) => (namesDeleted || item["deleted"] !== true) && matchesConditions(item, conditions))
  const sorted = orderBy.length === 0
    ? matching
    : [...matching].sort(compareBy(orderBy, (item, field) => item[field], (a, b) => compareValues(a["id"], b["id"])))
  const page = pageOf(sorted, selectorPage(selector))
  const fields = selector.fields
  if (fields === undefined || fields === null || fields.length === 0) return page
  const projected = page.items.map((item) => Object.fromEntries(fields.filter((field) => field in item).map((field) => [field, item[field]])))
  return { items: projected, pagination: page.pagination }
}
