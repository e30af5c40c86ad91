/**
 * Exact conversion between the platform's decimal money strings ("12.34") and acs's integer micros.
 * No floating point: the string is split at the point and the digits are joined as integers.
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
  const micros = BigInt(whole!) * 1_000_000n + BigInt(fraction.padEnd(6, "0"))
  if (micros > BigInt(Number.MAX_SAFE_INTEGER)) throw new MoneyFormatError(`money amount out of range: ${amount}`)
  return Number(sign === "-" ? -micros : micros)
}

export const microsFromDecimalEffect = (amount: string) =>
  Effect.try({ try: () => microsFromDecimal(amount), catch: (error) => error as MoneyFormatError })

/** 12_340_000 → "12.34"; at least two fraction digits, trailing zeros beyond them trimmed. */
export const decimalFromMicros = (micros: number): string => {
  if (!Number.isSafeInteger(micros)) throw new MoneyFormatError(`micros must be a safe integer: ${micros}`)
  const negative = micros < 0
  const abs = BigInt(Math.abs(micros))
  const whole = abs / 1_000_000n
  const fraction = (abs % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "").padEnd(2, "0")
  return `${negative ? "-" : ""}${whole}.${fraction}`
}
