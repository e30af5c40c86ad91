/**
 * Headers every answer carries (docs/contract.md 5.3): nothing is cached (answers hold account data and,
 * once, a key's secret), no content is sniffed, and a 401 names the scheme that would be accepted.
 */
import { HttpApp, HttpMiddleware, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"

const secure = (response: HttpServerResponse.HttpServerResponse) =>
  HttpServerResponse.setHeaders(response, {
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    // `/mcp` names its OAuth metadata instead (http/McpRoute.ts).
    ...(response.status === 401 && response.headers["www-authenticate"] === undefined ? { "www-authenticate": "Bearer realm=\"acs\"" } : {})
  })

const secureHandler = (_request: unknown, response: HttpServerResponse.HttpServerResponse) => Effect.succeed(secure(response))

export const securityHeaders = HttpMiddleware.make((app) =>
  // On every answer, the ones built from a failure included.
  Effect.zipRight(HttpApp.appendPreResponseHandler(secureHandler), Effect.map(app, secure))
)
