/** API key records and the create request (docs/contract.md 2.4). */
import { Schema } from "effect"
import { Timestamp } from "./Dates.ts"
import { Root } from "./FourEyes.ts"
import { Binding, ScopeSchema } from "./Principal.ts"

export const ApiKey = Schema.Struct({
  keyId: Schema.String,
  kind: Schema.Literal("api", "oauth").annotations({
    description: "`api`: made with POST /keys; `oauth`: an OAuth client's grant, its secret the access token, rotated " +
      "on each refresh (docs/contract.md 5.5). Revoking it ends the client's access and its refresh tokens."
  }),
  name: Schema.String,
  scope: ScopeSchema,
  canApprove: Schema.Boolean,
  binding: Binding,
  expiresAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  lastUsedAt: Schema.NullOr(Schema.String),
  revokedAt: Schema.NullOr(Schema.String),
  createdBy: Schema.NullOr(Schema.String).annotations({
    description: "Who created the key: `person:<personId>` or `key:<keyId>`; null for keys made by an operator " +
      "on the database (the bootstrap key, `acs keys create`): org keys, which depend on nobody."
  }),
  root: Root.annotations({
    description: "Who the key answers to: the person at the end of its creator chain, or the org key it descends from " +
      "(itself for an org key). Four eyes treats principals with one root as one actor."
  }),
  effective: Schema.NullOr(Schema.Struct({ scope: ScopeSchema, canApprove: Schema.Boolean })).annotations({
    description: "What the key may do now: its own scope and grant, at most its person's current role's; null while " +
      "its person is disabled (every request with it is then 401)"
  })
}).annotations({ identifier: "ApiKey" })
export type ApiKey = typeof ApiKey.Type

const KeyName = Schema.Trim.pipe(
  Schema.minLength(1, { message: () => "name must not be empty" }),
  Schema.maxLength(200, { message: () => "name must be at most 200 characters" })
)

export const CreateKeyRequest = Schema.Struct({
  name: KeyName,
  scope: ScopeSchema,
  canApprove: Schema.optional(Schema.Boolean),
  projectIds: Schema.optional(Schema.Array(Schema.String).pipe(
    Schema.minItems(1, { message: () => "projectIds must list at least one project, or be left out" })
  )),
  // Whether it lies in the future is checked by the key store.
  expiresAt: Schema.optional(Timestamp)
}).annotations({ identifier: "CreateKeyRequest" })
export type CreateKeyRequest = typeof CreateKeyRequest.Type

export const CreateAccountKeyRequest = Schema.Struct({
  name: KeyName,
  scope: ScopeSchema,
  canApprove: Schema.optional(Schema.Boolean),
  expiresAt: Schema.optional(Timestamp)
}).annotations({ identifier: "CreateAccountKeyRequest" })

export const CreatedKey = Schema.Struct({
  key: ApiKey,
  secret: Schema.String.annotations({ description: "The key's secret. Shown once: store it now." })
}).annotations({ identifier: "CreatedKey" })

/** `POST /people/{personId}/keys/revoke`: the keys it revoked (those rooted at the person and still live). */
export const RevokedKeys = Schema.Struct({
  revokedKeyIds: Schema.Array(Schema.String)
}).annotations({ identifier: "RevokedKeys" })
