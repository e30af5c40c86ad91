/**
 * OAuth2 client credentials as Apple runs them: the client signs an ES256 JWT with its EC P-256 key,
 * the token endpoint verifies signature and claims against the registered public key and hands out a
 * bearer token (3,600 s). The demo client's key pair is derived from the seed, so credentials are as
 * deterministic as the rest of the simulator.
 */
import { createECDH, createHash, createPrivateKey, createPublicKey, type KeyObject, randomBytes, verify } from "node:crypto"
import { Schema } from "effect"
import { WireToken } from "../Wire.ts"
import type { Answer } from "./SimulatorHttp.ts"

export const APPLE_AUDIENCE = "https://appleid.apple.com"
/** Apple caps a client secret's lifetime at 180 days. */
export const MAX_SECRET_LIFETIME_SECONDS = 180 * 86_400
/** Tolerated clock skew for `iat` in the future. */
const CLOCK_SKEW_SECONDS = 300

export interface SimulatorCredentials {
  /** `SEARCHADS.<uuid>`: the JWT's `sub` and the `client_id` parameter. */
  readonly clientId: string
  /** The JWT's `iss`. */
  readonly teamId: string
  /** The JWT header's `kid`. */
  readonly keyId: string
  /** EC P-256 private key, PEM ("EC PRIVATE KEY", as Apple's openssl instructions produce). */
  readonly privateKeyPem: string
}

export interface RegisteredClient {
  readonly credentials: SimulatorCredentials
  readonly publicKey: KeyObject
}

const digest = (text: string): Buffer => createHash("sha256").update(text).digest()

const base64Url = (bytes: Buffer): string => bytes.toString("base64url")

const uuidFrom = (bytes: Buffer): string => {
  const hex = Buffer.from(bytes.subarray(0, 16))
  hex[6] = (hex[6]! & 0x0f) | 0x40
  hex[8] = (hex[8]! & 0x3f) | 0x80
  const text = hex.toString("hex")
  return `${text.slice(0, 8)}-${text.slice(8, 12)}-${text.slice(12, 16)}-${text.slice(16, 20)}-${text.slice(20)}`
}

/** The demo client registered at start: ids and key pair derived from the seed. */
export const registerDemoClient = (seed: number): RegisteredClient => {
  for (let attempt = 0; ; attempt++) {
    const secret = digest(`acs-simulator:${seed}:ec-key:${attempt}`)
    const ecdh = createECDH("prime256v1")
    try {
      ecdh.setPrivateKey(secret)
    } catch {
      continue // not a valid scalar for P-256 (vanishingly rare): derive the next one
    }
    const point = ecdh.getPublicKey()
    const privateKey = createPrivateKey({
      key: { kty: "EC", crv: "P-256", d: base64Url(secret), x: base64Url(point.subarray(1, 33)), y: base64Url(point.subarray(33, 65)) },
      format: "jwk"
    })
    return {
      credentials: {
        clientId: `SEARCHADS.${uuidFrom(digest(`acs-simulator:${seed}:client`))}`,
        teamId: `SEARCHADS.${uuidFrom(digest(`acs-simulator:${seed}:team`))}`,
        keyId: uuidFrom(digest(`acs-simulator:${seed}:key-id`)),
        privateKeyPem: String(privateKey.export({ type: "sec1", format: "pem" }))
      },
      publicKey: createPublicKey(privateKey)
    }
  }
}

const jsonPart = (part: string): Readonly<Record<string, unknown>> | null => {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"))
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Readonly<Record<string, unknown>>) : null
  } catch {
    return null
  }
}

/** The ids Apple Ads shows once an admin has created an API client with a pasted public key. */
export interface ApiClientIds {
  readonly clientId: string
  readonly teamId: string
  readonly keyId: string
}

interface ApiClient {
  readonly ids: ApiClientIds
  readonly publicKey: KeyObject
}

/**
 * The org's API clients: the demo client made at start, and those created the v1 way from a public key
 * the user supplies (`register`), as an Apple Ads admin does in the web UI.
 */
export class ApiClients {
  private readonly clients = new Map<string, ApiClient>()
  private readonly teamId: string

  constructor(readonly demo: RegisteredClient) {
    this.teamId = demo.credentials.teamId
    this.clients.set(demo.credentials.clientId, { ids: demo.credentials, publicKey: demo.publicKey })
  }

  /** Creates an API client for an EC P-256 public key (PEM); null when the key is not one. */
  register(publicKeyPem: string): ApiClientIds | null {
    let publicKey: KeyObject
    try {
      publicKey = createPublicKey(publicKeyPem)
    } catch {
      return null
    }
    if (publicKey.asymmetricKeyType !== "ec" || publicKey.asymmetricKeyDetails?.namedCurve !== "prime256v1") return null
    const ids = { clientId: `SEARCHADS.${uuidFrom(randomBytes(16))}`, teamId: this.teamId, keyId: uuidFrom(randomBytes(16)) }
    this.clients.set(ids.clientId, { ids, publicKey })
    return ids
  }

  find(clientId: string): ApiClient | undefined {
    return this.clients.get(clientId)
  }
}

/**
 * Why a client secret is refused, or null when it is good. `aheadSeconds`: how far the control API advanced the
 * simulated clock; a client living in the advanced world (a test that moves its own clock with the simulator's) signs
 * with an `iat` up to that far ahead of the wall clock.
 */
export const clientSecretProblem = (
  jwt: string,
  client: ApiClient | undefined,
  nowSeconds: number,
  aheadSeconds = 0
): string | null => {
  if (client === undefined) return "unknown client_id"
  const { clientId, keyId, teamId } = client.ids
  const parts = jwt.split(".")
  if (parts.length !== 3) return "client_secret is not a JWT"
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string]
  const header = jsonPart(headerPart)
  const claims = jsonPart(payloadPart)
  if (header === null || claims === null) return "client_secret is not a JWT"
  if (header["alg"] !== "ES256") return "alg must be ES256"
  if (header["kid"] !== keyId) return "unknown kid"
  const signature = Buffer.from(signaturePart, "base64url")
  // JWS ES256 signatures are raw r||s (IEEE P1363), not DER.
  const valid = signature.length === 64 &&
    verify("sha256", Buffer.from(`${headerPart}.${payloadPart}`), { key: client.publicKey, dsaEncoding: "ieee-p1363" }, signature)
  if (!valid) return "bad signature"
  if (claims["sub"] !== clientId) return "sub must be the client id"
  if (claims["iss"] !== teamId) return "iss must be the team id"
  const audience = claims["aud"]
  if (!(audience === APPLE_AUDIENCE || (Array.isArray(audience) && audience.includes(APPLE_AUDIENCE)))) return "wrong aud"
  const issuedAt = claims["iat"]
  const expiresAt = claims["exp"]
  if (typeof issuedAt !== "number" || typeof expiresAt !== "number") return "iat and exp are required"
  if (issuedAt > nowSeconds + aheadSeconds + CLOCK_SKEW_SECONDS) return "iat is in the future"
  if (expiresAt <= nowSeconds) return "client_secret expired"
  if (expiresAt <= issuedAt || expiresAt - issuedAt > MAX_SECRET_LIFETIME_SECONDS) return "exp must be within 180 days of iat"
  return null
}

/** Issued bearer tokens: their expiry and the API client they were issued to. */
export class TokenStore {
  private readonly tokens = new Map<string, { readonly expiresAt: number; readonly clientId: string }>()

  constructor(readonly lifetimeSeconds: number) {}

  issue(nowMs: number, clientId: string): string {
    const token = randomBytes(48).toString("base64url")
    this.tokens.set(token, { expiresAt: nowMs + this.lifetimeSeconds * 1000, clientId })
    return token
  }

  /** The client a valid token was issued to, or null for an unknown or expired token. */
  clientOf(token: string, nowMs: number): string | null {
    const issued = this.tokens.get(token)
    return issued !== undefined && issued.expiresAt > nowMs ? issued.clientId : null
  }

  /** Every token issued so far stops working (clients must fetch a new one). */
  expireAll(): number {
    const count = this.tokens.size
    this.tokens.clear()
    return count
  }
}

const encodeToken = Schema.encodeSync(WireToken)

/** Apple answers only `{"error": ...}`; the reason goes to the call log. */
const oauthError = (status: number, error: string, reason: string): Answer => ({ status, body: { error }, reason })

/** `POST /auth/oauth2/token`: parameters from the query string and/or a form body. */
export const answerTokenRequest = (
  parameters: URLSearchParams,
  clients: ApiClients,
  tokens: TokenStore,
  nowMs: number,
  aheadMs = 0
): Answer => {
  if (parameters.get("grant_type") !== "client_credentials") {
    return oauthError(400, "unsupported_grant_type", "grant_type must be client_credentials")
  }
  if (parameters.get("scope") !== "searchadsorg") return oauthError(400, "invalid_scope", "scope must be searchadsorg")
  const clientId = parameters.get("client_id")
  const secret = parameters.get("client_secret")
  if (clientId === null || secret === null) return oauthError(400, "invalid_request", "client_id and client_secret are required")
  const problem = clientSecretProblem(secret, clients.find(clientId), Math.floor(nowMs / 1000), Math.ceil(aheadMs / 1000))
  if (problem !== null) return oauthError(401, "invalid_client", problem)
  return {
    status: 200,
    body: encodeToken({ access_token: tokens.issue(nowMs, clientId), token_type: "Bearer", expires_in: tokens.lifetimeSeconds })
  }
}
