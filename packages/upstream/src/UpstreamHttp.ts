/**
 * The HTTP side of the Apple Search Ads client: OAuth token (cached, refreshed before expiry and once on a
 * 401), the `X-AP-Context` header, timeouts, bounded exponential backoff that honours `Retry-After`, and
 * the mapping of every failure to a docs/contract.md 7 error. Reads are idempotent and retried on 429, any 5xx and
 * timeouts; writes only on 429 (the platform did not process the call), never blindly.
 */
import { ConnectionError, NotFound, ReadOnlyAccount, UpstreamError, UpstreamUnavailable } from "@acs/domain/Errors"
import { Cause, Clock, Data, Duration, Effect, Either, Option, Schema, type Tracer } from "effect"
import { type AppleCredentials, signClientSecret } from "./ClientSecret.ts"
import type { UpstreamFailure } from "./Upstream.ts"
import { countUpstreamRequest, endpointLabel } from "./UpstreamMetrics.ts"
import { RateLimitObserver } from "./UpstreamRateLimits.ts"
import { type ResponseHeaders, type TransportResponse, UpstreamTransport } from "./UpstreamTransport.ts"
import type { ParseError } from "effect/ParseResult"
import { V1ErrorBody } from "./v1/WireV1.ts"
import { WireEnvelope, WireError, WireToken } from "./Wire.ts"

export interface Endpoints {
  /** e.g. https://api.searchads.apple.com/api/v5 */
  readonly apiBaseUrl: string
  /** e.g. https://appleid.apple.com/auth/oauth2/token */
  readonly tokenUrl: string
}

export const appleEndpoints: Endpoints = {
  apiBaseUrl: "https://api.searchads.apple.com/api/v5",
  tokenUrl: "https://appleid.apple.com/auth/oauth2/token"
}

/** Apple Ads Platform API v1: same token endpoint, new base. */
export const appleV1Endpoints: Endpoints = {
  apiBaseUrl: "https://api.ads.apple.com/v1",
  tokenUrl: "https://appleid.apple.com/auth/oauth2/token"
}

export interface RetryPolicy {
  readonly maxRetries: number
  readonly baseDelayMs: number
  readonly maxDelayMs: number
  readonly timeoutMs: number
}

export const defaultRetryPolicy: RetryPolicy = { maxRetries: 4, baseDelayMs: 250, maxDelayMs: 10_000, timeoutMs: 30_000 }

const TOKEN_REFRESH_MARGIN_MS = 5 * 60_000

/**
 * A retryable refusal, before the retry budget decides whether to wait or give up. `notProcessed`: the
 * platform certainly did nothing (a 429), so even a write may be sent again. `exhausted`: what the call
 * fails with when the budget runs out, instead of `upstream_unavailable` (a read's 500 stays a 502).
 */
class Retryable extends Data.TaggedError("Retryable")<{
  readonly reason: string
  readonly retryAfterMs: number | undefined
  readonly notProcessed: boolean
  readonly exhausted?: UpstreamError
}> {}

class TokenRejected extends Data.TaggedError("TokenRejected") {}

const unavailable = (reason: string, retryAfterMs?: number) =>
  new Retryable({ reason, retryAfterMs, notProcessed: false })

export interface Call {
  readonly method: "GET" | "POST" | "PUT" | "DELETE"
  readonly path: string
  readonly orgId?: string
  readonly body?: unknown
  readonly query?: Readonly<Record<string, string>>
  /** Writes: only a 429 is retried. */
  readonly write: boolean
}

const header = (headers: ResponseHeaders, name: string): string | undefined => {
  const value = headers[name]
  return typeof value === "object" ? value[0] : value
}

const requestIdOf = (response: TransportResponse): string | undefined =>
  header(response.headers, "x-request-id") ?? header(response.headers, "x-apple-request-uuid")

const retryAfterMsOf = (response: TransportResponse): number | undefined => {
  const retryAfter = header(response.headers, "retry-after")
  if (retryAfter === undefined) {
    // v1: an exhausted `RateLimit-Remaining` says how long until the window resets.
    const reset = Number(header(response.headers, "ratelimit-reset"))
    return header(response.headers, "ratelimit-remaining") === "0" && Number.isFinite(reset) ? Math.max(0, reset * 1000) : undefined
  }
  const seconds = Number(retryAfter)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(retryAfter)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

/** An answer's body as JSON; null when it is empty or not JSON (the status then speaks alone). */
const parseJson = (text: string): unknown => {
  if (text === "") return null
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/**
 * A schema's decoder to an Either, compiled once per schema: the answers' schemas are synchronous, so this is
 * the decoder `Schema.decodeUnknown` runs, without an Effect per answer around it.
 */
const eitherDecoderOf = <A, I>(schema: Schema.Schema<A, I>): (u: unknown) => Either.Either<A, ParseError> => {
  let decode = eitherDecoders.get(schema)
  if (decode === undefined) {
    decode = Schema.decodeUnknownEither(schema)
    eitherDecoders.set(schema, decode)
  }
  return decode as (u: unknown) => Either.Either<A, ParseError>
}
const eitherDecoders = new WeakMap<object, (u: unknown) => Either.Either<unknown, ParseError>>()

/**
 * An answer in an unexpected shape, as the call's failure. `failCause`, not `fail`: the error carries no span, as
 * when `Effect.mapError` turned the decoder's failure into it.
 */
const unexpectedShape = (call: Call, error: ParseError) =>
  Effect.failCause(Cause.fail(
    new UpstreamError({ message: `the upstream platform answered ${call.method} ${call.path} in an unexpected shape: ${error.message.slice(0, 300)}` })
  ))

const decodeErrorBody = Schema.decodeUnknownOption(Schema.Struct({ error: Schema.NullOr(WireError) }))
const decodeV1ErrorBody = Schema.decodeUnknownOption(V1ErrorBody)

/** The platform's error messages, from either shape: v5 `{error:{errors}}` or v1 `{error:{code, message, details}}`. */
export const messagesOf = (body: unknown): string => {
  const decoded = decodeErrorBody(body)
  const errors = Option.isSome(decoded) ? decoded.value.error?.errors ?? [] : []
  if (errors.length > 0) return errors.map((e) => `${e.messageCode}: ${e.message}${e.field ? ` (${e.field})` : ""}`).join("; ")
  const v1 = decodeV1ErrorBody(body)
  if (Option.isNone(v1)) return ""
  const error = v1.value.error
  const details = (error.details ?? []).map((d) => `${d.code ?? "ERROR"}: ${d.message ?? ""}${d.field ? ` (${d.field})` : ""}`)
  const head = error.code !== undefined || error.message !== undefined ? [`${error.code ?? "ERROR"}: ${error.message ?? ""}`] : []
  const listed = (error.errors ?? []).map((e) => `${e.messageCode ?? e.code ?? "ERROR"}: ${e.message ?? ""}${e.field ? ` (${e.field})` : ""}`)
  return [...head, ...details, ...listed].join("; ")
}

/** A 2xx answer: its body as JSON (null when empty or not JSON) and its status. */
interface Answer {
  readonly body: unknown
  readonly status: number
}

/** A v5 answer's `{data, pagination, error}`, `data` decoded with the call's schema. */
type Envelope<A, I> = Schema.Schema.Type<ReturnType<typeof WireEnvelope<A, I, never>>>

/** v5 scopes calls with `X-AP-Context: orgId=…`, v1 with `adAccountId=…`. */
export type ContextKey = "orgId" | "adAccountId"

export const makeUpstreamHttp = (
  endpoints: Endpoints,
  credentials: AppleCredentials,
  policy: RetryPolicy,
  contextKey: ContextKey = "orgId"
) =>
  Effect.gen(function*() {
    const transport = yield* UpstreamTransport
    const observer = yield* Effect.serviceOption(RateLimitObserver)
    /**
     * An exhausted budget, told to the observer (UpstreamRateLimits.ts): one header read per answer otherwise.
     * `Retry-After` first, then `RateLimit-Reset` (retryAfterMsOf).
     */
    const observeBudget = Option.match(observer, {
      onNone: () => (_response: TransportResponse): Effect.Effect<void> => Effect.void,
      onSome: ({ observe }) => (response: TransportResponse): Effect.Effect<void> => {
        if (response.status !== 429 && header(response.headers, "ratelimit-remaining") !== "0") return Effect.void
        return observe({ clientId: credentials.clientId, limitedForMs: retryAfterMsOf(response) ?? policy.baseDelayMs, status: response.status })
      }
    })
    /** Counts the request by its answer's status, or as `error` when none came (timeout, network). */
    const counted = (endpoint: string) => <E, R>(sent: Effect.Effect<TransportResponse, E, R>) =>
      sent.pipe(Effect.onExit((exit) => countUpstreamRequest(endpoint, exit._tag === "Success" ? exit.value.status : "error")))
    // The cached token: only this client reads and writes it, each time in one step.
    let token: { readonly value: string; readonly expiresAt: number } | undefined

    const fetchToken = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const query = new URLSearchParams({
        grant_type: "client_credentials",
        client_id: credentials.clientId,
        client_secret: signClientSecret(credentials, Math.floor(now / 1000)),
        scope: "searchadsorg"
      })
      // Not traced: the URL carries the client secret.
      const response = yield* transport.send({
        method: "POST",
        url: `${endpoints.tokenUrl}?${query.toString()}`,
        headers: { "content-type": "application/x-www-form-urlencoded" },
        timeoutMs: policy.timeoutMs
      }).pipe(
        Effect.catchTag("TransportError", (error) =>
          Effect.fail(unavailable(error.reason === "Timeout" ? "the token endpoint timed out" : `the token endpoint is unreachable: ${error.message}`))),
        counted("POST token")
      )
      if (response.status === 429 || response.status >= 500) {
        return yield* unavailable(`the token endpoint answered ${response.status}`, retryAfterMsOf(response))
      }
      if (response.status !== 200) {
        return yield* new ConnectionError({
          message: `the upstream platform refused the API credentials (token endpoint answered ${response.status}); check clientId, teamId, keyId and the private key`
        })
      }
      const body = yield* Effect.try(() => JSON.parse(response.body) as unknown).pipe(
        Effect.flatMap(Schema.decodeUnknown(WireToken)),
        Effect.mapError(() => new UpstreamError({ message: "the token endpoint answered an unreadable body" }))
      )
      const issued = { value: body.access_token, expiresAt: now + body.expires_in * 1000 }
      token = issued
      return issued.value
    })

    /** The cached token while it has more than the margin left, else undefined. */
    const freshToken = (clock: Clock.Clock): string | undefined =>
      token !== undefined && token.expiresAt - clock.unsafeCurrentTimeMillis() > TOKEN_REFRESH_MARGIN_MS ? token.value : undefined

    // Concurrent calls that find the token stale wait for one refresh instead of each fetching their own.
    const refreshing = yield* Effect.makeSemaphore(1)
    const currentToken = Effect.clockWith((clock) => {
      const cached = freshToken(clock)
      return cached !== undefined ? Effect.succeed(cached) : refreshing.withPermits(1)(Effect.clockWith((again) => {
        const refreshed = freshToken(again)
        return refreshed !== undefined ? Effect.succeed(refreshed) : fetchToken
      }))
    })

    /** What an answer means: its body on a 2xx, else the failure its status stands for. */
    const answerOf = (
      call: Call,
      response: TransportResponse,
      span: Tracer.Span
    ): Effect.Effect<Answer, TokenRejected | Retryable | UpstreamError | ReadOnlyAccount | ConnectionError | NotFound> => {
      const body = parseJson(response.body)
      const status = response.status
      const requestId = requestIdOf(response)
      span.attribute("http.response.status_code", status)
      if (status >= 200 && status < 300) return Effect.succeed({ body, status })
      if (status === 401) return Effect.fail(new TokenRejected())
      if (status === 429) {
        return Effect.fail(
          new Retryable({
            reason: `${call.method} ${call.path} was rate limited by the upstream platform`,
            retryAfterMs: retryAfterMsOf(response),
            notProcessed: true
          })
        )
      }
      if (status === 503 || status === 502 || status === 504) {
        return Effect.fail(unavailable(`the upstream platform is unavailable (${status})`, retryAfterMsOf(response)))
      }
      const detail = messagesOf(body)
      const error = new UpstreamError({
        message: `the upstream platform answered ${status} to ${call.method} ${call.path}${detail ? `: ${detail}` : ""}`,
        ...(requestId !== undefined ? { request_id: requestId } : {})
      })
      // A read changes nothing, so a transient 500 is worth another try; a write's 500 may have half-landed.
      if (status >= 500 && !call.write) {
        return Effect.fail(new Retryable({ reason: error.message, retryAfterMs: retryAfterMsOf(response), notProcessed: false, exhausted: error }))
      }
      if (status === 403) {
        return Effect.fail(
          call.write
            ? new ReadOnlyAccount({
              message: `the upstream platform refused the write: the credential lacks the account-manager role (${detail || "403"})`
            })
            : new ConnectionError({ message: `the upstream credential cannot read this account (${detail || "403"})` })
        )
      }
      if (status === 404) return Effect.fail(new NotFound({ message: `not found upstream: ${call.path}${detail ? ` (${detail})` : ""}` }))
      return Effect.fail(error)
    }

    /**
     * One attempt. A chain of steps rather than Effect.gen, the span annotated through its object rather than
     * `annotateCurrentSpan`: every apply makes two calls, and the steps of a call were most of its CPU.
     */
    const once = (call: Call, endpoint: string, span: Tracer.Span) =>
      Effect.flatMap(currentToken, (bearer) => {
        const query = call.query === undefined ? "" : `?${new URLSearchParams(call.query).toString()}`
        const headers: Record<string, string> = { authorization: `Bearer ${bearer}`, accept: "application/json" }
        if (call.orgId !== undefined) headers["x-ap-context"] = `${contextKey}=${call.orgId}`
        const json = call.body === undefined ? undefined : JSON.stringify(call.body)
        if (json !== undefined) headers["content-type"] = "application/json"
        return transport.send({
          method: call.method,
          url: `${endpoints.apiBaseUrl}${call.path}${query}`,
          headers,
          timeoutMs: policy.timeoutMs,
          ...(json === undefined ? {} : { body: json })
        }).pipe(
          Effect.catchTag("TransportError", (error) =>
            Effect.fail(unavailable(
              error.reason === "Timeout"
                ? `${call.method} ${call.path} timed out after ${policy.timeoutMs} ms`
                : `${call.method} ${call.path} failed: ${error.message}`
            ))),
          counted(endpoint),
          Effect.tap(observeBudget),
          Effect.flatMap((response) => answerOf(call, response, span))
        )
      })

    /** Runs a call with the token refreshed once on a 401 and retries within the policy. */
    const run = (call: Call): Effect.Effect<Answer, UpstreamFailure> => {
      const endpoint = endpointLabel(call.method, call.path)
      const loop = (
        span: Tracer.Span,
        attempt: number,
        refreshed: boolean
      ): Effect.Effect<Answer, UpstreamFailure> =>
        once(call, endpoint, span).pipe(
          Effect.catchTags({
            TokenRejected: () =>
              refreshed
                ? Effect.fail(new ConnectionError({ message: "the upstream platform rejected a fresh access token; the credentials need repair" }))
                : Effect.suspend(() => {
                  token = undefined
                  return loop(span, attempt, true)
                }),
            Retryable: (error) => {
              const mayRetry = !call.write || error.notProcessed
              const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt)
              const delay = Math.max(backoff, error.retryAfterMs ?? 0)
              if (!mayRetry || attempt >= policy.maxRetries || delay > policy.maxDelayMs) {
                if (error.exhausted !== undefined) return Effect.fail(error.exhausted)
                return Effect.fail(new UpstreamUnavailable({
                  message: `${error.reason}; retry later`,
                  retry_after_ms: Math.max(1, Math.ceil(error.retryAfterMs ?? backoff))
                }))
              }
              return Effect.sleep(Duration.millis(delay)).pipe(Effect.zipRight(loop(span, attempt + 1, refreshed)))
            }
          })
        )
      // `Effect.withSpan` spelled out to hand the attempts the span itself. No call-site stack trace (Effect builds
      // an Error per span for it): a span per upstream call is on every apply.
      return Effect.useSpan(
        `Upstream.${call.method} ${call.path.replace(/\d+/g, ":id")}`,
        { captureStackTrace: false },
        (span) => Effect.withParentSpan(loop(span, 0, false), span)
      )
    }

    /**
     * Runs a call, decodes its body with `schema` (the version's envelope) and goes on with `then`, in one step
     * after the answer (an apply's read and write each come through here); an unreadable answer is a 502
     * `upstream_error`.
     */
    const decodedThen = <A, I, B, E>(call: Call, schema: Schema.Schema<A, I>, then: (decoded: A) => Effect.Effect<B, E>) => {
      const decode = eitherDecoderOf(schema)
      return run(call).pipe(Effect.flatMap(({ body }): Effect.Effect<B, E | UpstreamError> => {
        const decoded = decode(body)
        return Either.isRight(decoded) ? then(decoded.right) : unexpectedShape(call, decoded.left)
      }))
    }

    /** v5: runs a call and goes on with its envelope, `data` decoded with `schema`. */
    const dataThen = <A, I, B, E>(call: Call, schema: Schema.Schema<A, I>, then: (envelope: Envelope<A, I>) => Effect.Effect<B, E>) =>
      decodedThen(call, WireEnvelope(schema), then)

    /** `dataThen` answering the envelope. */
    const data = <A, I>(call: Call, schema: Schema.Schema<A, I>) => dataThen(call, schema, (envelope) => Effect.succeed(envelope))

    /** Tests the credentials: fetching a token fails with 409 `connection_error` when they are refused. */
    const checkCredentials = fetchToken.pipe(
      Effect.catchTag("Retryable", (error) =>
        Effect.fail(new UpstreamUnavailable({ message: error.reason, retry_after_ms: Math.ceil(error.retryAfterMs ?? policy.baseDelayMs) })))
    )

    return { run, decodedThen, data, dataThen, checkCredentials } as const
  })

export type UpstreamHttp = Effect.Effect.Success<ReturnType<typeof makeUpstreamHttp>>
