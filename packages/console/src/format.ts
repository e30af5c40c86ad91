/** How the console shows amounts, percentages, times and values: money in the account's currency, with its own decimals. */

const moneyFormats = new Map<string, Intl.NumberFormat>()

/** Micros (millionths of the currency unit) as the currency shows them: `$45.00`, `¥4,500`. */
export const money = (micros: number | null | undefined, currency: string): string => {
  if (micros === null || micros === undefined) return "—"
  let format = moneyFormats.get(currency)
  if (format === undefined) {
    try {
      format = new Intl.NumberFormat("en-US", { style: "currency", currency })
    } catch {
      format = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })
    }
    moneyFormats.set(currency, format)
  }
  return format.format(micros / 1_000_000)
}

/** A ratio (0.034) as a percentage (3.40 %). */
export const percent = (ratio: number | null | undefined): string =>
  ratio === null || ratio === undefined ? "—" : `${(ratio * 100).toFixed(2)} %`

export const count = (n: number | null | undefined): string => (n === null || n === undefined ? "—" : n.toLocaleString("en-US"))

/** "3 min", "2 h 5 min", "4 d": how long ago, or how long until. */
export const duration = (ms: number): string => {
  const minutes = Math.max(0, Math.round(ms / 60_000))
  if (minutes < 1) return "under a minute"
  if (minutes < 60) return `${minutes} min`
  const hours = Math.floor(minutes / 60)
  if (hours < 48) return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`
  return `${Math.floor(hours / 24)} d`
}

export const ago = (iso: string | null, now: number): string => (iso === null ? "never" : `${duration(now - Date.parse(iso))} ago`)

export const dateTime = (iso: string | null): string =>
  iso === null ? "—" : new Date(iso).toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" }) + " UTC"

/** A field's value as a person reads it: money for `…Micros`, on/off, lists, or JSON for what has no better form. */
export const fieldValue = (field: string, value: unknown, currency: string): string => {
  // A keyword without a bid of its own bids its ad group's default.
  if (value === null && /BidMicros$/.test(field) && !/DefaultBidMicros$/.test(field)) return "ad group default"
  if (value === undefined || value === null) return "—"
  if (/Micros$/.test(field) && typeof value === "number") return money(value, currency)
  if (/(Rate|Ratio|ttr)$/i.test(field) && typeof value === "number") return percent(value)
  if (typeof value === "boolean") return value ? "on" : "off"
  if (typeof value === "string" || typeof value === "number") return String(value)
  if (Array.isArray(value)) {
    return value.map((item) => {
      if (typeof item === "object" && item !== null && "text" in item) {
        const k = item as { text: unknown; matchType?: unknown; bidMicros?: unknown }
        const bid = typeof k.bidMicros === "number" ? ` at ${money(k.bidMicros, currency)}` : ""
        return `${String(k.text)}${typeof k.matchType === "string" ? ` (${k.matchType.toLowerCase()})` : ""}${bid}`
      }
      return typeof item === "object" ? JSON.stringify(item) : String(item)
    }).join(", ") || "none"
  }
  return JSON.stringify(value)
}

/** `dailyBudgetMicros` → `daily budget`. */
export const fieldLabel = (field: string): string =>
  field
    .replace(/^(prior|new)(?=[A-Z])/, "")
    .replace(/Micros$/, "")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .trim()

/** `budget_change` → `Budget change`. */
export const kindLabel = (kind: string): string => {
  const words = kind.replace(/_/g, " ")
  return words.charAt(0).toUpperCase() + words.slice(1)
}
