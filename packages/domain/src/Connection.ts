/** The org's link to the upstream platform, as stored (credentials never leave the server). */
import { Schema } from "effect"

/** Apple's API generation a connection speaks: Apple Ads Platform API v1, or Campaign Management API v5 (retired 2027-01-26). */
export const UpstreamApiVersion = Schema.Literal("v1", "v5").annotations({
  identifier: "UpstreamApiVersion",
  description: "v1: Apple Ads Platform API (the default); v5: Campaign Management API, retired by Apple on 2027-01-26"
})

/** The public half of a key pair acs generated for the org: pasted into Apple Ads when creating the API client. */
export const ConnectionKeyPair = Schema.Struct({
  publicKeyPem: Schema.String,
  fingerprint: Schema.String.annotations({ description: "SHA-256 of the public key (DER), hex" }),
  createdAt: Schema.String
}).annotations({ identifier: "ConnectionKeyPair" })

export const Connection = Schema.Struct({
  connected: Schema.Boolean,
  provider: Schema.NullOr(Schema.Literal("apple", "simulator")),
  apiVersion: Schema.NullOr(UpstreamApiVersion),
  status: Schema.Literal("not_connected", "ok", "error"),
  upstreamOrgId: Schema.NullOr(Schema.String),
  checkedAt: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  warning: Schema.NullOr(Schema.String).annotations({ description: "set while the connection still uses v5" }),
  keyPair: Schema.NullOr(ConnectionKeyPair).annotations({
    description: "the key pair generated with POST /connection/keypair, if any (public half only)"
  })
}).annotations({ identifier: "Connection" })

const apiVersion = Schema.optionalWith(UpstreamApiVersion, { default: () => "v1" as const })

export const ConnectionRequest = Schema.Union(
  Schema.Struct({ provider: Schema.Literal("simulator"), apiVersion }),
  Schema.Struct({
    provider: Schema.optionalWith(Schema.Literal("apple"), { default: () => "apple" as const }),
    apiVersion,
    clientId: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
    teamId: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
    keyId: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
    privateKeyPem: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(10_000))).annotations({
      description: "omit to use the key pair generated with POST /connection/keypair"
    })
  })
).annotations({ identifier: "ConnectionRequest" })

export const DiscoveredAccount = Schema.Struct({
  upstreamAccountId: Schema.String,
  name: Schema.String,
  parentOrgId: Schema.NullOr(Schema.String),
  currency: Schema.String,
  timeZone: Schema.String,
  roles: Schema.Array(Schema.String),
  readOnly: Schema.Boolean,
  projectId: Schema.NullOr(Schema.String).annotations({ description: "set when the account is already imported" })
}).annotations({ identifier: "DiscoveredAccount" })

export const Discovery = Schema.Struct({
  accounts: Schema.Array(DiscoveredAccount),
  total: Schema.Int,
  truncated: Schema.Boolean
}).annotations({ identifier: "Discovery" })

export const ImportRequest = Schema.Struct({
  upstreamAccountIds: Schema.Array(Schema.String.pipe(Schema.minLength(1))).pipe(Schema.minItems(1), Schema.maxItems(100))
    .annotations({ description: "Apple Ads account ids to import" })
}).annotations({ identifier: "ImportRequest" })
