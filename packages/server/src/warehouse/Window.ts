/**
 * Metric windows: `days` complete days ending yesterday in the account's time zone (docs/contract.md 4), as ISO dates.
 */
export const MAX_DAYS = 90

// Building an Intl.DateTimeFormat costs far more than formatting with one (it loads the zone's data), and
// every proposal and read needs one: one per time zone, kept for the life of the process (zones are few).
const formatters = new Map<string, Intl.DateTimeFormat>()

const formatterFor = (timeZone: string): Intl.DateTimeFormat => {
  let formatter = formatters.get(timeZone)
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" })
    formatters.set(timeZone, formatter)
  }
  return formatter
}

/** The calendar date (YYYY-MM-DD) of an instant in a time zone. */
export const dateIn = (instant: number, timeZone: string): string => {
  const parts = formatterFor(timeZone).formatToParts(new Date(instant))
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? "00"
  return `${get("year")}-${get("month")}-${get("day")}`
}

export const addDays = (date: string, days: number): string => {
  const d = new Date(`${date}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + days)
  return d.toISOString().slice(0, 10)
}

/** Whole days from `from` to `to` (positive when `to` is later). */
export const daysBetween = (from: string, to: string): number =>
  Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000)

export interface MetricWindow {
  readonly start: string
  readonly end: string
  readonly days: number
}

export const windowEndingYesterday = (now: number, timeZone: string, days: number): MetricWindow => {
  const end = addDays(dateIn(now, timeZone), -1)
  return { start: addDays(end, -(days - 1)), end, days }
}

/** How many days of `window` lie inside the synced range [firstDay, lastDay]. */
export const coveredDays = (window: MetricWindow, firstDay: string | null, lastDay: string | null): number => {
  if (firstDay === null || lastDay === null) return 0
  const start = window.start > firstDay ? window.start : firstDay
  const end = window.end < lastDay ? window.end : lastDay
  return end < start ? 0 : daysBetween(start, end) + 1
}
