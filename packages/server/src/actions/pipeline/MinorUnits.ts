/**
 * Amounts must be whole minor units of the account currency (cents; whole yen): the platform refuses
 * anything finer, so a proposal with such an amount fails locally instead of at apply. Every money field of
 * every request body is named `…Micros`, at any depth.
 */
const ZERO_DECIMAL = new Set(["BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"])

export const microsPerMinorUnit = (currency: string): number => ZERO_DECIMAL.has(currency.toUpperCase()) ? 1_000_000 : 10_000

/** Every `…Micros` amount of `body` that is not a whole minor unit of `currency`, as a reason naming its path. */
export const minorUnitReasons = (body: unknown, currency: string): ReadonlyArray<string> => {
  const step = microsPerMinorUnit(currency)
  const reasons: Array<string> = []
  const visit = (value: unknown, path: string) => {
    if (Array.isArray(value)) {
      value.forEach((item, index) => visit(item, `${path}[${index}]`))
    } else if (typeof value === "object" && value !== null) {
      for (const [key, field] of Object.entries(value)) {
        const at = path === "" ? key : `${path}.${key}`
        if (key.endsWith("Micros") && typeof field === "number" && field % step !== 0) {
          reasons.push(`${at}: ${field} is not a whole ${step === 1_000_000 ? "unit" : "cent"} of ${currency} (a multiple of ${step} micros)`)
        } else {
          visit(field, at)
        }
      }
    }
  }
  visit(body, "")
  return reasons
}
