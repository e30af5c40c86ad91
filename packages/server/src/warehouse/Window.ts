/**
 * Metric windows: `days` complete days ending yesterday in the account's time zone (docs/contract.md 4), as ISO dates.
 */
export const MAX_DAYS = 90

// Building an Intl.DateTimeFormat costs far more than formatting with one (it loads the zone's data), and
// every proposal and read needs one: one per time zone, kept for the life of the process (zones are few).
const formatters = new Map<string, Intl.DateTimeFormat>()

const formatterFor = (timeZone: string, withHour: boolean): Intl.DateTimeFormat => {
  const key = withHour ? `${timeZone} h` : timeZone
  let formatter = formatters.get(key)
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-CA", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      ...(withHour ? { hour: "2-digit", hourCycle: "h23" } as const : {})
    })
    formatters.set(key, formatter)
  }
  return formatter
}

const partsIn = (instant: number, timeZone: string, withHour: boolean) => {
  const parts = formatterFor(timeZone, withHour).formatToParts(new Date(instant))
  return (type: string) => parts.find((p) => p.type === type)?.value ?? "00"
}

/** The calendar date (YYYY-MM-DD) of an instant in a time zone. */
export const dateIn = (instant: number, timeZone: string): string => {
  const get = partsIn(instant, timeZone, false)
  return `${get("year")}-${get("month")}-${get("day")}`
}

/** The hour (YYYY-MM-DDTHH, 00–23) an instant falls in, in a time zone. */
export const hourIn = (instant: number, timeZone: string): string => {
  const get = partsIn(instant, timeZone, true)
  return `${get("year")}-${get("month")}-${get("day")}T${get("hour")}`
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
