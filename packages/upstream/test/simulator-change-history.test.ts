/**
 * The change history's field comparison tells unchanged fields without writing them out as JSON; what it
 * records must be what comparing the JSON text of every field records.
 */
import { describe, expect, it } from "vitest"
import { changedFields } from "../src/simulator/SimulatorChangeHistory.ts"

/** The comparison as it was: every field's JSON text. */
const byJsonText = (before: Readonly<Record<string, unknown>> | null, after: Readonly<Record<string, unknown>>) => {
  const oldValues: Record<string, unknown> = {}
  const newValues: Record<string, unknown> = {}
  for (const key of new Set([...Object.keys(before ?? {}), ...Object.keys(after)])) {
    const was = before?.[key]
    const is = after[key]
    if (before !== null && JSON.stringify(was) === JSON.stringify(is)) continue
    if (before !== null) oldValues[key] = was ?? null
    newValues[key] = is ?? null
  }
  return { oldValues, newValues }
}

const VALUES: ReadonlyArray<unknown> = [
  undefined,
  null,
  0,
  -0,
  1,
  Number.NaN,
  "",
  "1",
  true,
  false,
  [],
  [null],
  [undefined],
  ["US"],
  ["US", "GB"],
  ["GB", "US"],
  {},
  { amount: "1.00", currency: "USD" },
  { amount: "1.00", currency: "USD", extra: undefined },
  { currency: "USD", amount: "1.00" },
  { amount: "1.50", currency: "USD" },
  { value: { amount: "1.00", currency: "USD" } },
  { countryOrRegion: { include: ["US"] } },
  { countryOrRegion: { include: ["US", "CA"] } },
  { toJSON: () => "x" },
  new Date(0)
]

describe("simulator change history fields", () => {
  it("records what comparing JSON text records, for every pair of values", () => {
    for (const was of VALUES) {
      for (const is of VALUES) {
        const before = { id: 1, field: was, name: "a" }
        const after = { id: 1, field: is, name: "a" }
        expect(JSON.stringify(changedFields(before, after))).toBe(JSON.stringify(byJsonText(before, after)))
        expect(changedFields(before, after)).toStrictEqual(byJsonText(before, after))
      }
    }
    const after = { id: 2, field: VALUES[17], other: [1] }
    expect(changedFields(null, after)).toStrictEqual(byJsonText(null, after))
  })
})
