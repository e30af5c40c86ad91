/** Opaque, URL-safe identifiers with a prefix that says what they name (`key_…`, `prj_…`). */
import * as Crypto from "node:crypto"

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

export const newId = (prefix: string): string => {
  const bytes = Crypto.randomBytes(16)
  let out = ""
  for (const byte of bytes) out += alphabet[byte & 31]
  return `${prefix}_${out}`
}
