/**
 * The date and time text every request field takes (query, path and body alike). The text is matched
 * against one strict ISO 8601 form and its calendar values are checked to exist, so that 2026-02-30, hour
 * 25, month 13 or minute 60 is a 400 naming the field rather than a 500 from Postgres. The value stays the
 * text the client sent: the ledger's `before` cursor carries microseconds, which a `Date` would cut to
 * milliseconds.
 */
import { Schema } from "effect"

/** `YYYY-MM-DDTHH:MM:SS`, up to six fraction digits (Postgres keeps microseconds), then `Z` or an offset. */
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?(?:Z|([+-])(\d{2}):?(\d{2}))$/
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/** Real-world UTC offsets run from −12:00 to +14:00; Postgres refuses 16:00 and beyond. */
const MAX_OFFSET_MINUTES = 14 * 60

const TIMESTAMP_EXAMPLE = "2026-11-22T10:00:00.123456Z"
const DATE_EXAMPLE = "2026-11-22"

const isLeapYear = (year: number): boolean => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)

const daysInMonth = (year: number, month: number): number =>
  month === 2 ? (isLeapYear(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31

const two = (n: number): string => String(n).padStart(2, "0")

/** Why year-month-day is not a day of the (proleptic Gregorian) calendar; undefined when it is one. */
const dayProblem = (year: number, month: number, day: number): string | undefined => {
  // Postgres has no year 0 (1 BC is followed by AD 1).
  if (year === 0) return "year 0000 does not exist"
  if (month < 1 || month > 12) return `month ${two(month)} does not exist`
  if (day < 1 || day > daysInMonth(year, month)) return `${String(year).padStart(4, "0")}-${two(month)} has no day ${two(day)}`
  return undefined
}

/** Why an ISO 8601 timestamp is not a real instant: the message of a refusal, or true. */
export const checkTimestamp = (text: string): string | true => {
  const match = TIMESTAMP.exec(text)
  if (match === null) return `expected an ISO 8601 timestamp such as ${TIMESTAMP_EXAMPLE}`
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const problem = dayProblem(year, month, day) ??
    (hour > 23 ? `hour ${two(hour)} does not exist` : undefined) ??
    (minute > 59 ? `minute ${two(minute)} does not exist` : undefined) ??
    // No leap second: neither JavaScript nor Postgres keeps one.
    (second > 59 ? `second ${two(second)} does not exist` : undefined)
  if (problem !== undefined) return `not a real date and time: ${problem}`
  const sign = match[7]
  if (sign !== undefined) {
    const offsetHours = Number(match[8])
    const offsetMinutes = Number(match[9])
    if (offsetMinutes > 59 || offsetHours * 60 + offsetMinutes > MAX_OFFSET_MINUTES) {
      return `not a real date and time: the UTC offset ${sign}${two(offsetHours)}:${two(offsetMinutes)} does not exist`
    }
  }
  return true
}

/** Why a `YYYY-MM-DD` text is not a calendar day: the message of a refusal, or true. */
export const checkCalendarDate = (text: string): string | true => {
  const match = DATE.exec(text)
  if (match === null) return `expected a date YYYY-MM-DD such as ${DATE_EXAMPLE}`
  const [year, month, day] = match.slice(1, 4).map(Number) as [number, number, number]
  const problem = dayProblem(year, month, day)
  return problem === undefined ? true : `not a real date: ${problem}`
}

/** Generated values (property tests, sample bodies) stay in years both ends handle alike. */
const ARBITRARY_MIN = new Date("2000-01-01T00:00:00Z")
const ARBITRARY_MAX = new Date("2099-12-31T23:59:59Z")

/** An instant as ISO 8601 text (`2026-11-22T10:00:00.123456Z`), checked to exist and kept as sent. */
export const Timestamp = Schema.String.pipe(
  Schema.filter(checkTimestamp, {
    jsonSchema: { format: "date-time", pattern: TIMESTAMP.source },
    arbitrary: () => (fc) => fc.date({ min: ARBITRARY_MIN, max: ARBITRARY_MAX, noInvalidDate: true }).map((date) => date.toISOString()),
    description: `An ISO 8601 timestamp with a Z or an offset, up to microseconds, e.g. ${TIMESTAMP_EXAMPLE}`
  })
)

/** A calendar day as `YYYY-MM-DD`, checked to exist (2026-02-30 is refused). */
export const CalendarDate = Schema.String.pipe(
  Schema.filter(checkCalendarDate, {
    jsonSchema: { format: "date", pattern: DATE.source },
    arbitrary: () => (fc) =>
      fc.date({ min: ARBITRARY_MIN, max: ARBITRARY_MAX, noInvalidDate: true }).map((date) => date.toISOString().slice(0, 10)),
    description: `A calendar date YYYY-MM-DD, e.g. ${DATE_EXAMPLE}`
  })
)
