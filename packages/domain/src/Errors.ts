/**
 * One tagged error per docs/contract.md 7 `error.code`. Handlers fail with these classes; the HTTP layer encodes
 * them through `envelope(...)` so every response body is exactly the SPEC envelope.
 */
import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  message: Schema.String
}) {}

/** A scope refusal carries required_scope and key_scope; a grant refusal carries required_grant. */
export class ForbiddenScope extends Schema.TaggedError<ForbiddenScope>()("ForbiddenScope", {
  message: Schema.String,
  required_scope: Schema.optional(Schema.String),
  key_scope: Schema.optional(Schema.String),
  required_grant: Schema.optional(Schema.Literal("approve", "second_approver"))
}) {}

export class AccountMismatch extends Schema.TaggedError<AccountMismatch>()("AccountMismatch", {
  message: Schema.String
}) {}

export class ReadOnlyAccount extends Schema.TaggedError<ReadOnlyAccount>()("ReadOnlyAccount", {
  message: Schema.String
}) {}

export class AccountNotFound extends Schema.TaggedError<AccountNotFound>()("AccountNotFound", {
  message: Schema.String
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String
}) {}

export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  message: Schema.String
}) {}

export class ValidationFailed extends Schema.TaggedError<ValidationFailed>()("ValidationFailed", {
  message: Schema.String,
  validation_errors: Schema.Array(Schema.String),
  action_id: Schema.optional(Schema.String)
}) {}

export class BidStrategyConflict extends Schema.TaggedError<BidStrategyConflict>()("BidStrategyConflict", {
  message: Schema.String
}) {}

export class NotRevertible extends Schema.TaggedError<NotRevertible>()("NotRevertible", {
  message: Schema.String
}) {}

export class NoOp extends Schema.TaggedError<NoOp>()("NoOp", {
  message: Schema.String
}) {}

/** A member of a changeset that moved under its plan, and how (docs/contract.md 4.3). */
export const MovedMember = Schema.Struct({ actionId: Schema.String, why: Schema.String })

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String,
  /** `state_changed_since_proposal`: the account changed under a changeset's plan; `members` says which moved. */
  reason: Schema.optional(Schema.Literal("state_changed_since_proposal")),
  members: Schema.optional(Schema.Array(MovedMember))
}) {}

export class SyncInProgress extends Schema.TaggedError<SyncInProgress>()("SyncInProgress", {
  message: Schema.String
}) {}

export class ConnectionError extends Schema.TaggedError<ConnectionError>()("ConnectionError", {
  message: Schema.String
}) {}

export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  message: Schema.String,
  retry_after_ms: Schema.Int
}) {}

export class Internal extends Schema.TaggedError<Internal>()("Internal", {
  message: Schema.String
}) {}

export class UpstreamError extends Schema.TaggedError<UpstreamError>()("UpstreamError", {
  message: Schema.String,
  request_id: Schema.optional(Schema.String)
}) {}

export class UpstreamUnavailable extends Schema.TaggedError<UpstreamUnavailable>()("UpstreamUnavailable", {
  message: Schema.String,
  retry_after_ms: Schema.Int
}) {}

/** The database cannot be reached (an outage, a restart, a pool that cannot get a connection): retry later. */
export class DatabaseUnavailable extends Schema.TaggedError<DatabaseUnavailable>()("DatabaseUnavailable", {
  message: Schema.String,
  retry_after_ms: Schema.Int
}) {}

/**
 * The one table of errors: each class with its docs/contract.md 7 code and HTTP status. The union type, the envelope
 * bodies, the code -> status map and the RPC error schema all derive from it, so adding an error is a
 * class above and one entry here. Keys are the classes' tags (checked below).
 */
export const AcsErrorTable = {
  Unauthorized: { error: Unauthorized, code: "unauthorized", status: 401 },
  ForbiddenScope: { error: ForbiddenScope, code: "forbidden_scope", status: 403 },
  AccountMismatch: { error: AccountMismatch, code: "account_mismatch", status: 403 },
  ReadOnlyAccount: { error: ReadOnlyAccount, code: "read_only_account", status: 403 },
  AccountNotFound: { error: AccountNotFound, code: "account_not_found", status: 404 },
  NotFound: { error: NotFound, code: "not_found", status: 404 },
  InvalidRequest: { error: InvalidRequest, code: "invalid_request", status: 400 },
  ValidationFailed: { error: ValidationFailed, code: "validation_failed", status: 422 },
  BidStrategyConflict: { error: BidStrategyConflict, code: "bid_strategy_conflict", status: 422 },
  NotRevertible: { error: NotRevertible, code: "not_revertible", status: 422 },
  NoOp: { error: NoOp, code: "no_op", status: 409 },
  Conflict: { error: Conflict, code: "conflict", status: 409 },
  SyncInProgress: { error: SyncInProgress, code: "sync_in_progress", status: 409 },
  ConnectionError: { error: ConnectionError, code: "connection_error", status: 409 },
  RateLimited: { error: RateLimited, code: "rate_limited", status: 429 },
  Internal: { error: Internal, code: "internal", status: 500 },
  UpstreamError: { error: UpstreamError, code: "upstream_error", status: 502 },
  UpstreamUnavailable: { error: UpstreamUnavailable, code: "upstream_unavailable", status: 503 },
  DatabaseUnavailable: { error: DatabaseUnavailable, code: "database_unavailable", status: 503 }
} as const

type Table = typeof AcsErrorTable
type Tag = keyof Table

export type AcsError = Schema.Schema.Type<Table[Tag]["error"]>
export type ErrorCode = Table[Tag]["code"]

/** A table key that is not its class's tag fails to compile here, naming the key. */
type MisnamedKey = { readonly [K in Tag]: Schema.Schema.Type<Table[K]["error"]>["_tag"] extends K ? never : K }[Tag]
const keysAreTags: [MisnamedKey] extends [never] ? true : MisnamedKey = true
void keysAreTags

interface Envelope {
  readonly error: { readonly code: string; readonly message: string }
  readonly retry_after_ms?: number | undefined
}

/** An error class as the table holds it: a schema of its instances, its fields, and a constructor. */
type ErrorClass<A> = Schema.Schema<A, { readonly _tag: string; readonly message: string }> & {
  readonly fields: Schema.Struct.Fields
}

/**
 * The docs/contract.md 7 envelope for one error class: `{"error": {"code", "message", ...extras}}`, plus a top-level
 * `retry_after_ms` for the retryable codes (docs/contract.md 7 lists it as a body field, outside `error`). The
 * extras are the class's own fields, in their order.
 */
const envelope = <A extends { readonly _tag: string; readonly message: string }>(
  self: ErrorClass<A>,
  code: string,
  status: number
): Schema.Schema<A, Envelope> => {
  const { _tag: _, message: __, ...fields } = self.fields
  const retryable = "retry_after_ms" in fields
  const error = Schema.Struct({ code: Schema.Literal(code), message: Schema.String, ...fields })
  // The generic field set defeats inference of the struct's type; the shape is fixed by Envelope.
  const body = (retryable
    ? Schema.Struct({ error, retry_after_ms: Schema.optional(Schema.Int) })
    : Schema.Struct({ error })) as unknown as Schema.Schema<Envelope, Envelope>
  // Every class in the table is a `Schema.TaggedError`, whose constructor takes its fields.
  const Make = self as unknown as new(props: unknown) => A
  return Schema.transform(body, Schema.typeSchema(self), {
    strict: false,
    decode: (encoded) => new Make(encoded.error),
    encode: (error) => {
      // `message` lives on Error and is not enumerable: spread the fields, then name it.
      const { _tag, ...rest } = error as A & Record<string, unknown>
      const envelope = { code, ...rest, message: error.message }
      return retryable ? { error: envelope, retry_after_ms: rest["retry_after_ms"] } : { error: envelope }
    }
  }).annotations({
    identifier: `${code}_error`,
    title: code,
    description: `SPEC error envelope with error.code = "${code}"`,
    ...HttpApiSchema.annotations({ status })
  })
}

const mapTable = <B>(f: <K extends Tag>(tag: K, entry: Table[K]) => B): { readonly [K in Tag]: B } =>
  Object.fromEntries((Object.keys(AcsErrorTable) as Array<Tag>).map((tag) => [tag, f(tag, AcsErrorTable[tag])])) as {
    readonly [K in Tag]: B
  }

/** The envelope schema of each error class, keyed by tag: what every surface encodes failures with. */
export const ErrorBodies = mapTable((_, entry) => envelope(entry.error as ErrorClass<AcsError>, entry.code, entry.status)) as {
  readonly [K in Tag]: Schema.Schema<Schema.Schema.Type<Table[K]["error"]>, Envelope>
}

/** Every docs/contract.md 7 code with its status: the table tests and the OpenAPI document agree with. */
export const ErrorCodes = Object.fromEntries(Object.values(AcsErrorTable).map((entry) => [entry.code, entry.status])) as {
  readonly [K in Tag as Table[K]["code"]]: Table[K]["status"]
}

/** Every error as it travels over RPC: the tagged classes themselves (RPC keeps `_tag`, not the envelope). */
export const AcsErrorSchema: Schema.Schema<AcsError, unknown> = Schema.Union(
  ...Object.values(AcsErrorTable).map((entry) => entry.error)
) as unknown as Schema.Schema<AcsError, unknown>

/** The names the HttpApi declaration uses for the bodies; a new error needs none (`ErrorBodies.X` does). */
export const UnauthorizedBody = ErrorBodies.Unauthorized
export const ForbiddenScopeBody = ErrorBodies.ForbiddenScope
export const AccountMismatchBody = ErrorBodies.AccountMismatch
export const ReadOnlyAccountBody = ErrorBodies.ReadOnlyAccount
export const AccountNotFoundBody = ErrorBodies.AccountNotFound
export const NotFoundBody = ErrorBodies.NotFound
export const InvalidRequestBody = ErrorBodies.InvalidRequest
export const ValidationFailedBody = ErrorBodies.ValidationFailed
export const BidStrategyConflictBody = ErrorBodies.BidStrategyConflict
export const NotRevertibleBody = ErrorBodies.NotRevertible
export const NoOpBody = ErrorBodies.NoOp
export const ConflictBody = ErrorBodies.Conflict
export const SyncInProgressBody = ErrorBodies.SyncInProgress
export const ConnectionErrorBody = ErrorBodies.ConnectionError
export const RateLimitedBody = ErrorBodies.RateLimited
export const InternalBody = ErrorBodies.Internal
export const UpstreamErrorBody = ErrorBodies.UpstreamError
export const UpstreamUnavailableBody = ErrorBodies.UpstreamUnavailable
export const DatabaseUnavailableBody = ErrorBodies.DatabaseUnavailable

export const isAcsError = (u: unknown): u is AcsError =>
  typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" && u._tag in AcsErrorTable

/** The one encoder: an error to its HTTP status and SPEC envelope body. */
export const toEnvelope = (error: AcsError): { readonly status: number; readonly body: unknown } => {
  const schema = ErrorBodies[error._tag] as unknown as Schema.Schema<AcsError, unknown>
  return { status: AcsErrorTable[error._tag].status, body: Schema.encodeSync(schema)(error) }
}
