/** Opaque, URL-safe identifiers with a prefix that says what they name (`key_…`, `prj_…`), of the form in domain/IdFormat.ts. */
import { ID_ALPHABET as alphabet, ID_LENGTH as ID_BYTES } from "@acs/domain/IdFormat"
import * as Crypto from "node:crypto"

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
