/**
 * Exact conversion between the platform's decimal money strings ("12.34") and acs's integer micros.
 * No floating point fractions: the string is split at the point and the parts are joined as integers,
 * which stays exact because every amount is below 2^53 micros.
 */
import { Effect } from "effect"

const DECIMAL = /^(-?)(\d+)(?:\.(\d{1,6}))?$/

export class MoneyFormatError extends Error {
  readonly _tag = "MoneyFormatError"
}

/** "12.34" → 12_340_000. Fails on anything that is not a plain decimal with at most 6 fraction digits. */
export const microsFromDecimal = (amount: string): number => {
  const match = DECIMAL.exec(amount.trim())
  if (!match) throw new MoneyFormatError(`not a money amount: ${JSON.stringify(amount)}`)
  const [, sign, whole, fraction = ""] = match
  // Both parts are integers below 2^53 here, so the arithmetic is exact; reports carry millions of amounts.
  const micros = Number(whole!) * 1_000_000 + Number(fraction.padEnd(6, "0"))
  if (whole!.length > 10 || !Number.isSafeInteger(micros)) throw new MoneyFormatError(`money amount out of range: ${amount}`)
  return sign === "-" ? -micros : micros
}

export const microsFromDecimalEffect = (amount: string) =>
  Effect.try({ try: () => microsFromDecimal(amount), catch: (error) => error as MoneyFormatError })

/** 12_340_000 → "12.34"; at least two fraction digits, trailing zeros beyond them trimmed. */
export const decimalFromMicros = (micros: number): string => {
  if (!Number.isSafeInteger(micros)) throw new MoneyFormatError(`micros must be a safe integer: ${micros}`)
  const abs = Math.abs(micros)
  const rest = abs % 1_000_000
  // An exact multiple of a million divides exactly; abs / 1e6 alone can round up near the next integer.
  const whole = (abs - rest) / 1_000_000
  const fraction = String(rest).padStart(6, "0").replace(/0+$/, "").padEnd(2, "0")
  return `${micros < 0 ? "-" : ""}${whole}.${fraction}`
}
