/** Reading untyped JSON answers without `any`: small checked accessors that throw on a wrong shape. */

export type Json = Record<string, unknown>

export const record = (value: unknown, what: string): Json => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${what}: expected an object`)
  return value as Json
}

export const array = (value: unknown, what: string): ReadonlyArray<unknown> => {
  if (!Array.isArray(value)) throw new Error(`${what}: expected an array`)
  return value
}

export const string = (object: Json, key: string): string => {
  const value = object[key]
  if (typeof value !== "string") throw new Error(`${key}: expected a string`)
  return value
}

export const nullableString = (object: Json, key: string): string | null => {
  const value = object[key]
  if (value === null) return null
  if (typeof value !== "string") throw new Error(`${key}: expected a string or null`)
  return value
}

export const number = (object: Json, key: string): number => {
  const value = object[key]
  if (typeof value !== "number") throw new Error(`${key}: expected a number`)
  return value
}

export const boolean = (object: Json, key: string): boolean => {
  const value = object[key]
  if (typeof value !== "boolean") throw new Error(`${key}: expected a boolean`)
  return value
}

/** A canonical text for deep comparison: object keys sorted at every level. */
export const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    typeof v === "object" && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v)
