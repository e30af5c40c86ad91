/** The org's link to the upstream platform, as stored (credentials never leave the server). */
import { Schema } from "effect"

export const Connection = Schema.Struct({
  connected: Schema.Boolean,
  provider: Schema.NullOr(Schema.Literal("apple", "simulator")),
  status: Schema.Literal("not_connected", "ok", "error"),
  upstreamOrgId: Schema.NullOr(Schema.String),
  checkedAt: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Connection" })

export const ConnectionRequest = Schema.Union(
  Schema.Struct({ provider: Schema.Literal("simulator") }),
  Schema.Struct({
    provider: Schema.optionalWith(Schema.Literal("apple"), { default: () => "apple" as const }),
    clientId: Schema.String.pipe(Schema.minLength(1)),
    teamId: Schema.String.pipe(Schema.minLength(1)),
    keyId: Schema.String.pipe(Schema.minLength(1)),
    privateKeyPem: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(10_000))
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
}).annotations({ identifier: "ImportRequest" })
