/** Signing in, and what signing out and a new password add over REST (the session cookie). */
import { Api, SESSION_COOKIE } from "@acs/domain/Api"
import { CurrentPrincipal } from "@acs/domain/Principal"
import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Config, Effect, Option } from "effect"
import { Sessions } from "../auth/Sessions.ts"
import { RateLimits } from "../limits/RateLimits.ts"
import { makeOperate } from "../operations/Operate.ts"
import { clientAddress, TrustProxy } from "./ClientAddress.ts"
import type { RestExtras } from "./RestExtras.ts"

const CookieSecure = Config.boolean("COOKIE_SECURE").pipe(Config.withDefault(false))

const setSessionCookie = (token: string, maxAge: number, secure: boolean) =>
  HttpApp.appendPreResponseHandler((request, response) =>
    Effect.orDie(HttpServerResponse.setCookie(response, SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: "strict",
      path: "/",
      maxAge: `${maxAge} seconds`,
      // Secure when configured, or when a TLS-terminating proxy says the client used https.
      secure: secure || request.headers["x-forwarded-proto"] === "https"
    }))
  )

export const PublicAuthHandlers = HttpApiBuilder.group(Api, "publicAuth", (handlers) =>
  Effect.gen(function*() {
    const sessions = yield* Sessions
    const rateLimits = yield* RateLimits
    const secure = yield* CookieSecure
    const trustProxy = yield* TrustProxy
    return handlers.handle("login", ({ payload, request }) =>
      Effect.gen(function*() {
        yield* rateLimits.consumeLogin(payload.email, clientAddress(request, trustProxy)).pipe(Effect.tap(rateLimits.attachHeaders))
        const session = yield* sessions.login(payload.email, payload.password)
        yield* setSessionCookie(session.token, session.maxAgeSeconds, secure)
        return { principal: session.principal }
      }))
  }))

/** What a person's session operations add over REST: the session cookie, renewed or expired. */
export const AuthExtras = Effect.gen(function*() {
  const operate = yield* makeOperate
  const sessions = yield* Sessions
  const secure = yield* CookieSecure
  const extras: RestExtras = {
    changePassword: (input) =>
      Effect.gen(function*() {
        yield* operate.handler("changePassword")(input)
        // Every session of the person ended with the old password; this browser continues on a new one.
        const principal = yield* CurrentPrincipal
        const session = yield* sessions.resume(principal.id)
        if (Option.isSome(session)) yield* setSessionCookie(session.value.token, session.value.maxAgeSeconds, secure)
      }),
    logout: (input) =>
      Effect.gen(function*() {
        yield* operate.handler("logout")(input)
        // The session and its cookie are REST's: the operation only refuses a key.
        const token = input.request.cookies[SESSION_COOKIE]
        if (token !== undefined) yield* sessions.end(token)
        yield* HttpApp.appendPreResponseHandler((_request, response) =>
          Effect.orDie(HttpServerResponse.expireCookie(response, SESSION_COOKIE, { path: "/", httpOnly: true, sameSite: "strict" }))
        )
      })
  }
  return extras
})
