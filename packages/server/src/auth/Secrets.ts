/** Key secrets, session tokens and password hashes: only digests are ever stored. */
import { Effect } from "effect"
import * as Crypto from "node:crypto"

export const newKeySecret = (): string => `acs_${Crypto.randomBytes(32).toString("base64url")}`

export const newSessionToken = (): string => Crypto.randomBytes(32).toString("base64url")

export const sha256 = (value: string): string => Crypto.createHash("sha256").update(value).digest("hex")

const SCRYPT = { N: 16_384, r: 8, p: 1, keyLength: 32 } as const

const scrypt = (password: string, salt: Buffer, params: { N: number; r: number; p: number; keyLength: number }) =>
  Effect.async<Buffer, Error>((resume) => {
    Crypto.scrypt(password, salt, params.keyLength, { N: params.N, r: params.r, p: params.p }, (error, key) =>
      resume(error ? Effect.fail(error) : Effect.succeed(key)))
  })

/** `scrypt$N$r$p$salt$hash`, parameters stored so they can be raised later without breaking logins. */
export const hashPassword = (password: string) =>
  Effect.gen(function*() {
    const salt = Crypto.randomBytes(16)
    const key = yield* scrypt(password, salt, SCRYPT)
    return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString("base64")}$${key.toString("base64")}`
  }).pipe(Effect.orDie)

/** A hash to verify against when the email is unknown, so both cases cost one scrypt. */
const decoyHash = `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${Buffer.alloc(16).toString("base64")}$${
  Buffer.alloc(32).toString("base64")
}`

export const verifyPassword = (password: string, stored: string | undefined) =>
  Effect.gen(function*() {
    const [scheme, n, r, p, salt, hash] = (stored ?? decoyHash).split("$")
    if (scheme !== "scrypt" || !salt || !hash) return false
    const expected = Buffer.from(hash, "base64")
    const actual = yield* scrypt(password, Buffer.from(salt, "base64"), {
      N: Number(n),
      r: Number(r),
      p: Number(p),
      keyLength: expected.length
    })
    return stored !== undefined && Crypto.timingSafeEqual(actual, expected)
  }).pipe(Effect.orDie)

export const generatePassword = (): string => Crypto.randomBytes(18).toString("base64url")
