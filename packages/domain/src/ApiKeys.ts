/** API key records and the create request (SPEC 2.4, API.md "Auth and admin endpoints"). */
import { Schema } from "effect"
import { Binding, ScopeSchema } from "./Principal.ts"

export const ApiKey = Schema.Struct({
  keyId: Schema.String,
  name: Schema.String,
  scope: ScopeSchema,
  canApprove: Schema.Boolean,
  binding: Binding,
  expiresAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  lastUsedAt: Schema.NullOr(Schema.String),
  revokedAt: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ApiKey" })
export type ApiKey = typeof ApiKey.Type

const KeyName = Schema.Trim.pipe(
  Schema.minLength(1, { message: () => "name must not be empty" }),
  Schema.maxLength(200, { message: () => "name must be at most 200 characters" })
)

/** ISO 8601 timestamp; whether it lies in the future is checked by the key store. */
const Timestamp = Schema.String.pipe(
  Schema.filter((s) => !Number.isNaN(Date.parse(s)) && /^\d{4}-\d{2}-\d{2}T/.test(s), {
    message: () => "expected an ISO 8601 timestamp such as 2027-01-31T00:00:00Z"
  })
)

export const CreateKeyRequest = Schema.Struct({
  name: KeyName,
  scope: ScopeSchema,
  canApprove: Schema.optional(Schema.Boolean),
  projectIds: Schema.optional(Schema.Array(Schema.String).pipe(
    Schema.minItems(1, { message: () => "projectIds must list at least one project, or be left out" })
  )),
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
