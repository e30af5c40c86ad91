/**
 * The origin clients reach this server at, as OAuth metadata names it (the issuer, the endpoints, the `/mcp`
 * resource): PUBLIC_URL when set (a deployment behind a proxy sets it), else the request's Host, over https when
 * a trusted proxy says so (TRUST_PROXY).
 */
import type { HttpServerRequest } from "@effect/platform"
import { Config, Effect, Option } from "effect"
import { TrustProxy } from "./ClientAddress.ts"

const PublicUrl = Config.option(Config.url("PUBLIC_URL"))

const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/

export const makePublicOrigin = Effect.gen(function*() {
  const configured = Option.map(yield* PublicUrl, (url) => url.origin)
  const trustProxy = yield* TrustProxy
  return (request: HttpServerRequest.HttpServerRequest): string => {
    if (Option.isSome(configured)) return configured.value
    const host = request.headers["host"] ?? ""
    const proto = trustProxy && request.headers["x-forwarded-proto"] === "https" ? "https" : "http"
    return `${proto}://${HOST.test(host) ? host : "127.0.0.1"}`
  }
}).pipe(Effect.orDie)
