/** What a command prints on stdout: one JSON document with `--json`, a plain table otherwise. */
import type { DataFreshness } from "@acs/domain/Accounts"
import { Console } from "effect"

export type Cell = string | number | boolean | null | undefined

export interface Column<Row> {
  readonly header: string
  readonly cell: (row: Row) => Cell
}

const show = (cell: Cell): string => cell === null || cell === undefined || cell === "" ? "-" : String(cell)

/** Left-aligned columns separated by two spaces, a header line first. */
export const renderTable = <Row>(columns: ReadonlyArray<Column<Row>>, rows: ReadonlyArray<Row>): string => {
  const lines = [columns.map((column) => column.header), ...rows.map((row) => columns.map((column) => show(column.cell(row))))]
  const widths = columns.map((_, i) => Math.max(...lines.map((line) => line[i]?.length ?? 0)))
  return lines.map((line) => line.map((text, i) => i === line.length - 1 ? text : text.padEnd(widths[i] ?? 0)).join("  ").trimEnd())
    .join("\n")
}

/** Key/value lines for a single record. */
export const renderRecord = (fields: ReadonlyArray<readonly [string, Cell]>): string => {
  const width = Math.max(...fields.map(([label]) => label.length))
  return fields.map(([label, value]) => `${`${label}:`.padEnd(width + 1)}  ${show(value)}`).join("\n")
}

/** Prints the JSON document, or the human text, on stdout. */
export const emit = (json: boolean, document: unknown, human: () => string) =>
  Console.log(json ? JSON.stringify(document, null, 2) : human())

/** The digits after the decimal point of `currency` (ISO 4217, as Intl knows it): 2 for USD, 0 for JPY. */
const decimalsOf = (currency: string): number => {
  try {
    return new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits ?? 2
  } catch {
    return 2 // not a currency code Intl knows
  }
}

/**
 * Integer micro-units as an amount of the account's currency with its code, in that currency's own
 * decimals: 12500000 USD → "12.50 USD", 1200000000 JPY → "1,200 JPY".
 */
export const money = (micros: number | null, currency: string): string | null => {
  if (micros === null) return null
  const decimals = decimalsOf(currency)
  const amount = new Intl.NumberFormat("en", { minimumFractionDigits: decimals, maximumFractionDigits: decimals })
    .format(micros / 1_000_000)
  return `${amount} ${currency}`
}

interface Collection {
  readonly total: number
  readonly truncated: boolean
  readonly dataFreshness: DataFreshness
}

/** The lines under a spend-ranked slice: how much of the total it shows, and how fresh the data is. */
export const collectionFooter = (shown: number, collection: Collection): string => {
  const { ageHours, coverage, lastSyncAt, warning } = collection.dataFreshness
  const sync = lastSyncAt === null ? "never synced" : `last sync ${lastSyncAt}${ageHours === null ? "" : ` (${ageHours.toFixed(1)} h ago)`}`
  return [
    `${shown} of ${collection.total}${collection.truncated ? " (truncated: raise --limit for more)" : ""}`,
    `data: ${sync}, ${coverage}`,
    ...(warning === undefined ? [] : [`warning: ${warning}`])
  ].join("\n")
}
