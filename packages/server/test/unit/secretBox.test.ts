/** Upstream credentials are sealed with AES-256-GCM: round trip, and tampering or a wrong key is refused. */
import * as fc from "fast-check"
import * as Crypto from "node:crypto"
import { Option } from "effect"
import { describe, expect, it } from "vitest"
import { openWith, sealWith } from "../../src/db/SecretBox.ts"

describe("SecretBox", () => {
  const key = Crypto.randomBytes(32)

  it("opens what it sealed, and never shows the plaintext in the sealed form", () => {
    fc.assert(fc.property(fc.string({ minLength: 8 }), (plaintext) => {
      const sealed = sealWith(key, plaintext)
      expect(sealed).not.toContain(plaintext)
      expect(openWith(key, sealed)).toEqual(Option.some(plaintext))
    }))
  })

  it("refuses an altered value and another key", () => {
    const sealed = sealWith(key, "-----BEGIN EC PRIVATE KEY-----")
    const parts = sealed.split(".")
    const body = Buffer.from(parts[3]!, "base64")
    body[0] = body[0]! ^ 1
    const altered = [parts[0], parts[1], parts[2], body.toString("base64")].join(".")
    expect(Option.isNone(openWith(key, altered))).toBe(true)
    expect(Option.isNone(openWith(Crypto.randomBytes(32), sealed))).toBe(true)
    expect(Option.isNone(openWith(key, "garbage"))).toBe(true)
  })
})
