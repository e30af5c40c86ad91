/**
 * One tagged error per SPEC 7 `error.code`. Handlers fail with these classes; the HTTP layer encodes
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

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String
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

export type AcsError =
  | Unauthorized
  | ForbiddenScope
  | AccountMismatch
  | ReadOnlyAccount
  | AccountNotFound
  | NotFound
  | InvalidRequest
  | ValidationFailed
  | BidStrategyConflict
  | NotRevertible
  | NoOp
  | Conflict
  | SyncInProgress
  | ConnectionError
  | RateLimited
  | Internal
  | UpstreamError
  | UpstreamUnavailable

interface Envelope {
  readonly error: { readonly code: string; readonly message: string }
  readonly retry_after_ms?: number | undefined
}

/**
 * The SPEC 7 envelope for one error class: `{"error": {"code", "message", ...extras}}`, plus a top-level
 * `retry_after_ms` for the two retryable codes (SPEC 7 lists it as a body field, outside `error`).
 */
const envelope = <A extends { readonly _tag: string; readonly message: string }, I, F extends Schema.Struct.Fields>(
  self: Schema.Schema<A, I>,
  code: string,
  status: number,
  fields: F,
  make: (props: Schema.Struct.Type<F> & { readonly message: string }) => A
) => {
  const retryable = "retry_after_ms" in fields
  const error = Schema.Struct({ code: Schema.Literal(code), message: Schema.String, ...fields })
  // The generic field set defeats inference of the struct's type; the shape is fixed by Envelope.
  const body = (retryable
    ? Schema.Struct({ error, retry_after_ms: Schema.optional(Schema.Int) })
    : Schema.Struct({ error })) as unknown as Schema.Schema<Envelope, Envelope>
  return Schema.transform(body, Schema.typeSchema(self), {
    strict: false,
    decode: (encoded) => make(encoded.error as unknown as Schema.Struct.Type<F> & { readonly message: string }),
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

export const UnauthorizedBody = envelope(Unauthorized, "unauthorized", 401, {}, (p) => new Unauthorized(p))
export const ForbiddenScopeBody = envelope(ForbiddenScope, "forbidden_scope", 403, {
  required_scope: Schema.optional(Schema.String),
  key_scope: Schema.optional(Schema.String),
  required_grant: Schema.optional(Schema.Literal("approve", "second_approver"))
}, (p) => new ForbiddenScope(p))
export const AccountMismatchBody = envelope(AccountMismatch, "account_mismatch", 403, {}, (p) => new AccountMismatch(p))
export const ReadOnlyAccountBody = envelope(ReadOnlyAccount, "read_only_account", 403, {}, (p) => new ReadOnlyAccount(p))
export const AccountNotFoundBody = envelope(AccountNotFound, "account_not_found", 404, {}, (p) => new AccountNotFound(p))
export const NotFoundBody = envelope(NotFound, "not_found", 404, {}, (p) => new NotFound(p))
export const InvalidRequestBody = envelope(InvalidRequest, "invalid_request", 400, {}, (p) => new InvalidRequest(p))
export const ValidationFailedBody = envelope(ValidationFailed, "validation_failed", 422, {
  validation_errors: Schema.Array(Schema.String),
  action_id: Schema.optional(Schema.String)
}, (p) => new ValidationFailed(p))
export const BidStrategyConflictBody = envelope(
  BidStrategyConflict,
  "bid_strategy_conflict",
  422,
  {},
  (p) => new BidStrategyConflict(p)
)
export const NotRevertibleBody = envelope(NotRevertible, "not_revertible", 422, {}, (p) => new NotRevertible(p))
export const NoOpBody = envelope(NoOp, "no_op", 409, {}, (p) => new NoOp(p))
export const ConflictBody = envelope(Conflict, "conflict", 409, {}, (p) => new Conflict(p))
export const SyncInProgressBody = envelope(SyncInProgress, "sync_in_progress", 409, {}, (p) => new SyncInProgress(p))
export const ConnectionErrorBody = envelope(ConnectionError, "connection_error", 409, {}, (p) => new ConnectionError(p))
export const RateLimitedBody = envelope(RateLimited, "rate_limited", 429, {
  retry_after_ms: Schema.Int
}, (p) => new RateLimited(p))
export const InternalBody = envelope(Internal, "internal", 500, {}, (p) => new Internal(p))
export const UpstreamErrorBody = envelope(UpstreamError, "upstream_error", 502, {
  request_id: Schema.optional(Schema.String)
}, (p) => new UpstreamError(p))
export const UpstreamUnavailableBody = envelope(UpstreamUnavailable, "upstream_unavailable", 503, {
  retry_after_ms: Schema.Int
}, (p) => new UpstreamUnavailable(p))

/** Every SPEC 7 code with its status: the table tests and the OpenAPI document agree with. */
export const ErrorCodes = {
  unauthorized: 401,
  forbidden_scope: 403,
  account_mismatch: 403,
  read_only_account: 403,
  account_not_found: 404,
  not_found: 404,
  invalid_request: 400,
  validation_failed: 422,
  bid_strategy_conflict: 422,
  not_revertible: 422,
  no_op: 409,
  conflict: 409,
  sync_in_progress: 409,
  connection_error: 409,
  rate_limited: 429,
  internal: 500,
  upstream_error: 502,
  upstream_unavailable: 503
} as const

export type ErrorCode = keyof typeof ErrorCodes

/** The envelope schema of each error class, keyed by tag: what every surface encodes failures with. */
export const ErrorBodies = {
  Unauthorized: UnauthorizedBody,
  ForbiddenScope: ForbiddenScopeBody,
  AccountMismatch: AccountMismatchBody,
  ReadOnlyAccount: ReadOnlyAccountBody,
  AccountNotFound: AccountNotFoundBody,
  NotFound: NotFoundBody,
  InvalidRequest: InvalidRequestBody,
  ValidationFailed: ValidationFailedBody,
  BidStrategyConflict: BidStrategyConflictBody,
  NotRevertible: NotRevertibleBody,
  NoOp: NoOpBody,
  Conflict: ConflictBody,
  SyncInProgress: SyncInProgressBody,
  ConnectionError: ConnectionErrorBody,
  RateLimited: RateLimitedBody,
  Internal: InternalBody,
  UpstreamError: UpstreamErrorBody,
  UpstreamUnavailable: UpstreamUnavailableBody
} as const

export const isAcsError = (u: unknown): u is AcsError =>
  typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" && u._tag in ErrorBodies

/** The one encoder: an error to its HTTP status and SPEC envelope body. */
export const toEnvelope = (error: AcsError): { readonly status: number; readonly body: unknown } => {
  const schema = ErrorBodies[error._tag] as unknown as Schema.Schema<AcsError, unknown>
  return { status: HttpApiSchema.getStatusError(schema), body: Schema.encodeSync(schema)(error) }
}
