/**
 * Who is calling: a Bearer key (the scheme in any case, docs/contract.md 5.3), else a person's session cookie where the
 * session cookie policy lets it count. The platform's bearer decoder cuts seven characters off any header, so
 * the scheme is checked here. Every failure is the same 401.
 */
import { Authentication, SESSION_COOKIE } from "@acs/domain/Api"
import type { Principal } from "@acs/domain/Principal"
import type { Unauthorized } from "@acs/domain/Errors"
import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { keyAuthenticator, orUnauthorized, unauthorized } from "../auth/KeyAuthentication.ts"
import { KeyStore } from "../auth/KeyStore.ts"
import { currentRequestAuthorization } from "../auth/RequestAuthorization.ts"
import { Sessions } from "../auth/Sessions.ts"
import { AllowedOrigins, sessionCookieAllowed } from "./SessionCookiePolicy.ts"

export { authenticateKey, unauthorized } from "../auth/KeyAuthentication.ts"

export type Authenticate = (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<Principal, Unauthorized>

/**
 * The caller of a request: its Bearer key when it has an Authorization header, else its usable session. The
 * services are taken once, so a request provides no context to authenticate (each provided context is a copy of
 * the fiber's whole context, on every request: docs/decisions/front-door.md).
 */
export const makeAuthenticate: Effect.Effect<Authenticate, never, KeyStore | Sessions | AllowedOrigins> = Effect.gen(function*() {
  const byKey = keyAuthenticator(yield* KeyStore)
  const sessions = yield* Sessions
  const allowedOrigins = yield* AllowedOrigins
  return (request) => {
    const authorization = request.headers["authorization"]
    if (authorization !== undefined) return byKey(authorization)
    const token = request.cookies[SESSION_COOKIE]
    if (token === undefined || token.length === 0 || token.length > 512) return Effect.fail(unauthorized)
    if (!sessionCookieAllowed(request, allowedOrigins)) return Effect.fail(unauthorized)
    return orUnauthorized(sessions.authenticate(token))
  }
})

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const authenticate = yield* makeAuthenticate
    // The front door authenticated the request already (auth/RequestAuthorization.ts); a request it
    // let through unauthenticated is authenticated here.
    const resolve = Effect.flatMap(currentRequestAuthorization, (checked) =>
      Option.isSome(checked)
        ? Effect.succeed(checked.value.principal)
        : Effect.flatMap(HttpServerRequest.HttpServerRequest, authenticate))
    return {
      // Both schemes are resolved by the first handler (header first, then cookie); the second only
      // runs after that failed, and would fail alike.
      bearer: () => resolve,
      session: () => Effect.fail(unauthorized)
    }
  })
)
