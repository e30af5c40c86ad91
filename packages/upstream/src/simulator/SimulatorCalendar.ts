/**
 * Calendar days as integers (days since 1970-01-01) and "now" in an account's time zone. Metrics are
 * keyed by these day numbers; the wire shows them as YYYY-MM-DD.
 */

const MS_PER_DAY = 86_400_000
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/** "2026-11-22" → day number, or null when it is not a real calendar date. */
export const dayFromIso = (text: string): number | null => {
  const match = ISO_DATE.exec(text)
  if (!match) return null
  const [, year, month, day] = match
  const ms = Date.UTC(Number(year), Number(month) - 1, Number(day))
  const date = new Date(ms)
  if (date.getUTCFullYear() !== Number(year) || date.getUTCMonth() !== Number(month) - 1) return null
  if (date.getUTCDate() !== Number(day)) return null
  return Math.round(ms / MS_PER_DAY)
}

// Report pages format the same few hundred days ~100,000 times; Date objects for each are wasteful.
const isoDays = new Map<number, string>()

export const isoFromDay = (day: number): string => {
  let iso = isoDays.get(day)
  if (iso === undefined) {
    iso = new Date(day * MS_PER_DAY).toISOString().slice(0, 10)
    if (isoDays.size < 100_000) isoDays.set(day, iso)
  }
  return iso
}

/** Monday of the day's week (1970-01-01 was a Thursday). */
export const weekStartOf = (day: number): number => day - ((day + 3) % 7)

export const monthStartOf = (day: number): number => {
  const date = new Date(day * MS_PER_DAY)
  return Math.round(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / MS_PER_DAY)
}

export interface LocalNow {
  readonly day: number
  /** 0–23: how many whole hours of `day` have passed. */
  readonly hour: number
}

// Intl formatters are costly to build; one per time zone is enough.
const formatters = new Map<string, Intl.DateTimeFormat>()

const formatterFor = (timeZone: string): Intl.DateTimeFormat => {
  let formatter = formatters.get(timeZone)
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-CA", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      hourCycle: "h23"
    })
    formatters.set(timeZone, formatter)
  }
  return formatter
}

/**
 * The moment a change takes effect, as a fractional day number: the day plus its whole hours / 24. The
 * model's `until`, `from` and `createdDay` values hold these, so a change made at 14:00 applies from that
 * hour on, and the day and hour comparisons of the model need no other unit (seeded values are whole days).
 */
export const momentOf = (now: LocalNow): number => now.day + now.hour / 24

/** The hour (0–23) at which a moment inside its day falls; 0 for a whole day. */
export const hourOfMoment = (moment: number): number => Math.round((moment - Math.floor(moment)) * 24)

/** The calendar day and hour at `epochMs` in `timeZone` (an IANA name). */
export const localNow = (timeZone: string, epochMs: number): LocalNow => {
  const parts = formatterFor(timeZone).formatToParts(new Date(epochMs))
  const part = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)?.value ?? "0")
  const day = Math.round(Date.UTC(part("year"), part("month") - 1, part("day")) / MS_PER_DAY)
  return { day, hour: part("hour") % 24 }
}
