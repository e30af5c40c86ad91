/**
 * Who is calling: a Bearer key (the scheme in any case, API.md), else a person's session cookie where the
 * session cookie policy lets it count. The platform's bearer decoder cuts seven characters off any header, so
 * the scheme is checked here. Every failure is the same 401.
 */
import { Authentication, SESSION_COOKIE } from "@acs/domain/Api"
import { HttpServerRequest } from "@effect/platform"
import { Effect, FiberRef, Layer, Option } from "effect"
import { authenticateKey, orUnauthorized, unauthorized } from "../auth/KeyAuthentication.ts"
import type { KeyStore } from "../auth/KeyStore.ts"
import { currentRequestAuthorization } from "../auth/RequestAuthorization.ts"
import { Sessions } from "../auth/Sessions.ts"
import { AllowedOrigins, sessionCookieAllowed } from "./SessionCookiePolicy.ts"

export { authenticateKey, unauthorized } from "../auth/KeyAuthentication.ts"

/** The caller of a request: its Bearer key when it has an Authorization header, else its usable session. */
export const authenticate = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    if (request.headers["authorization"] !== undefined) return yield* authenticateKey(request.headers["authorization"])
    const token = request.cookies[SESSION_COOKIE]
    if (token === undefined || token.length === 0 || token.length > 512) return yield* unauthorized
    if (!sessionCookieAllowed(request, yield* AllowedOrigins)) return yield* unauthorized
    const sessions = yield* Sessions
    return yield* orUnauthorized(sessions.authenticate(token))
  })

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const context = yield* Effect.context<KeyStore | Sessions | AllowedOrigins>()
    const resolve = Effect.gen(function*() {
      const checked = yield* FiberRef.get(currentRequestAuthorization)
      if (Option.isSome(checked)) return checked.value.principal
      return yield* authenticate(yield* HttpServerRequest.HttpServerRequest)
    }).pipe(Effect.provide(context))
    return {
      // Both schemes are resolved by the first handler (header first, then cookie); the second only
      // runs after that failed, and would fail alike.
      bearer: () => resolve,
      session: () => Effect.fail(unauthorized)
    }
  })
)
