/**
 * The OAuth `client_secret` Apple Search Ads expects: an ES256 JWT signed with the API key's EC P-256
 * private key (Apple's OAuth guide). JOSE wants the raw r||s signature, hence `ieee-p1363`.
 */
import * as Crypto from "node:crypto"

export interface AppleCredentials {
  readonly clientId: string
  readonly teamId: string
  readonly keyId: string
  readonly privateKeyPem: string
}

export const APPLE_AUDIENCE = "https://appleid.apple.com"

/** Apple accepts up to 180 days; a day is plenty since the secret is re-made as needed. */
export const CLIENT_SECRET_LIFETIME_SECONDS = 86_400

const base64url = (value: string | Buffer) => Buffer.from(value).toString("base64url")

export const signClientSecret = (credentials: AppleCredentials, nowSeconds: number): string => {
  const header = base64url(JSON.stringify({ alg: "ES256", kid: credentials.keyId, typ: "JWT" }))
  const payload = base64url(JSON.stringify({
    sub: credentials.clientId,
    iss: credentials.teamId,
    aud: APPLE_AUDIENCE,
    iat: nowSeconds,
    exp: nowSeconds + CLIENT_SECRET_LIFETIME_SECONDS
  }))
  const signature = Crypto.sign("sha256", Buffer.from(`${header}.${payload}`), {
    key: credentials.privateKeyPem,
    dsaEncoding: "ieee-p1363"
  })
  return `${header}.${payload}.${base64url(signature)}`
}

/** True when the PEM parses as an EC P-256 private key: checked before credentials are saved. */
export const isP256PrivateKey = (pem: string): boolean => {
  try {
    const key = Crypto.createPrivateKey(pem)
    return key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1"
  } catch {
    return false
  }
}
