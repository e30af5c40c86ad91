/**
 * The Authentication middleware: a Bearer key, else a session cookie. The platform's bearer decoder cuts
 * seven characters off any header, so the scheme is checked here. Every failure is the same 401.
 */
import { Authentication, SESSION_COOKIE } from "@acs/domain/Api"
import { Unauthorized } from "@acs/domain/Errors"
import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { KeyStore } from "../auth/KeyStore.ts"
import { Sessions } from "../auth/Sessions.ts"

export const unauthorized = new Unauthorized({
  message: "missing, invalid, revoked or expired credentials: send Authorization: Bearer <API key>"
})

const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/

/** Resolves the caller of a raw request; shared by REST, RPC and MCP. */
export const resolvePrincipal = (headers: Readonly<Record<string, string | undefined>>, cookies: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    const keys = yield* KeyStore
    const sessions = yield* Sessions
    const authorization = headers["authorization"]
    if (authorization !== undefined) {
      const match = BEARER.exec(authorization)
      if (!match) return yield* unauthorized
      return yield* Effect.flatten(keys.authenticate(match[1]!).pipe(Effect.map(Option.match({
        onNone: () => Effect.fail(unauthorized),
        onSome: Effect.succeed
      }))))
    }
    const token = cookies[SESSION_COOKIE]
    if (token === undefined || token.length === 0 || token.length > 512) return yield* unauthorized
    return yield* Effect.flatten(sessions.authenticate(token).pipe(Effect.map(Option.match({
      onNone: () => Effect.fail(unauthorized),
      onSome: Effect.succeed
    }))))
  })

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const context = yield* Effect.context<KeyStore | Sessions>()
    const resolve = HttpServerRequest.HttpServerRequest.pipe(
      Effect.flatMap((request) => resolvePrincipal(request.headers, request.cookies)),
      Effect.provide(context)
    )
    return {
      // Both schemes are resolved by the first handler (header first, then cookie); the second only
      // runs after that failed, and would fail alike.
      bearer: () => resolve,
      session: () => Effect.fail(unauthorized)
    }
  })
)
