/**
 * Encryption at rest for upstream credentials: AES-256-GCM with ACS_SECRETS_KEY (32 bytes, base64).
 * On the embedded default a key is generated once into ACS_DATA_DIR/secrets.key; with DATABASE_URL the
 * key must be given, since a key stored beside a shared database would protect nothing.
 */
import { Config, Effect, Option, Redacted } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { DatabaseMode } from "./Database.ts"

const VERSION = "v1"

const decodeKey = (encoded: string): Buffer => {
  const key = Buffer.from(encoded.trim(), "base64")
  if (key.length !== 32) throw new Error("ACS_SECRETS_KEY must be 32 bytes, base64-encoded (openssl rand -base64 32)")
  return key
}

const loadOrCreateKeyFile = (dataDir: string): Buffer => {
  const file = Path.resolve(dataDir, "secrets.key")
  if (Fs.existsSync(file)) return decodeKey(Fs.readFileSync(file, "utf8"))
  Fs.mkdirSync(Path.dirname(file), { recursive: true })
  const key = Crypto.randomBytes(32)
  Fs.writeFileSync(file, key.toString("base64"), { mode: 0o600, flag: "wx" })
  return key
}

export const sealWith = (key: Buffer, plaintext: string): string => {
  const iv = Crypto.randomBytes(12)
  const cipher = Crypto.createCipheriv("aes-256-gcm", key, iv)
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return [VERSION, iv.toString("base64"), cipher.getAuthTag().toString("base64"), body.toString("base64")].join(".")
}

export const openWith = (key: Buffer, sealed: string): Option.Option<string> => {
  const [version, iv, tag, body] = sealed.split(".")
  if (version !== VERSION || !iv || !tag || body === undefined) return Option.none()
  try {
    const decipher = Crypto.createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64"))
    decipher.setAuthTag(Buffer.from(tag, "base64"))
    return Option.some(Buffer.concat([decipher.update(Buffer.from(body, "base64")), decipher.final()]).toString("utf8"))
  } catch {
    return Option.none()
  }
}

export class SecretBox extends Effect.Service<SecretBox>()("acs/SecretBox", {
  effect: Effect.gen(function*() {
    const configured = yield* Config.option(Config.redacted("ACS_SECRETS_KEY"))
    const external = Option.isSome(yield* DatabaseMode)
    const dataDir = yield* Config.string("ACS_DATA_DIR").pipe(Config.withDefault("./.acs"))
    const key = yield* Effect.try(() =>
      Option.isSome(configured)
        ? decodeKey(Redacted.value(configured.value))
        : external
        ? (() => {
          throw new Error("ACS_SECRETS_KEY is required with DATABASE_URL (openssl rand -base64 32)")
        })()
        : loadOrCreateKeyFile(dataDir)
    ).pipe(Effect.orDie)
    return {
      seal: (plaintext: string) => sealWith(key, plaintext),
      /** None when the value was sealed with another key or altered. */
      open: (sealed: string) => openWith(key, sealed)
    } as const
  })
}) {}
