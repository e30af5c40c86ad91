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
