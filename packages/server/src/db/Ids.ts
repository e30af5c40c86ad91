/** Opaque, URL-safe identifiers with a prefix that says what they name (`key_…`, `prj_…`). */
import * as Crypto from "node:crypto"

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

const ID_BYTES = 16

/**
 * Random bytes drawn 4 KiB at a time: every request makes ids (its request id, a proposal's action and job),
 * and a call into the CSPRNG per id cost more than the id. Each byte is used once.
 */
const pool = Buffer.alloc(4096)
let used = pool.length

export const newId = (prefix: string): string => {
  if (used + ID_BYTES > pool.length) {
    Crypto.randomFillSync(pool)
    used = 0
  }
  let out = ""
  for (let i = used; i < used + ID_BYTES; i++) out += alphabet[pool[i]! & 31]
  used += ID_BYTES
  return `${prefix}_${out}`
}
