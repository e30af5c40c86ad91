/**
 * When a person's session cookie may authenticate a request (docs/contract.md 5.3):
 * only same-origin. An unsafe method must carry `Content-Type: application/json` (a cross-site form cannot
 * send it without a CORS preflight, which acs never grants) and must not come from another site, by
 * `Sec-Fetch-Site` or by an `Origin` outside `ALLOWED_ORIGINS` (default: the server's own origin). Otherwise
 * the cookie is ignored, so the request is as unauthenticated as one without it.
 */
import { HttpMethod, type HttpServerRequest } from "@effect/platform"
import { Config, Context, Layer } from "effect"
import { isJsonContentType } from "./RequestBody.ts"

/** Origins, besides the server's own (its Host), whose pages may use a session: `https://console.example.com`. */
export class AllowedOrigins extends Context.Tag("acs/AllowedOrigins")<AllowedOrigins, ReadonlySet<string>>() {
  static readonly Live = Layer.effect(
    AllowedOrigins,
    Config.string("ALLOWED_ORIGINS").pipe(
      Config.withDefault(""),
      Config.map((list) => new Set(list.split(",").map((origin) => origin.trim().toLowerCase()).filter((o) => o.length > 0)))
    )
  )
}

const hostOf = (origin: string): string | undefined => {
  try {
    return new URL(origin).host.toLowerCase()
  } catch {
    return undefined
  }
}

/** A browser names the page's origin; the server's own is the one whose host the browser addressed. */
const originAllowed = (origin: string, host: string | undefined, allowed: ReadonlySet<string>): boolean =>
  allowed.has(origin.toLowerCase()) || (host !== undefined && hostOf(origin) === host.toLowerCase())

export const sessionCookieAllowed = (request: HttpServerRequest.HttpServerRequest, allowed: ReadonlySet<string>): boolean => {
  if (!HttpMethod.hasBody(request.method)) return true
  const headers = request.headers
  if (!isJsonContentType(headers["content-type"])) return false
  if (headers["sec-fetch-site"] === "cross-site") return false
  const origin = headers["origin"]
  return origin === undefined || originAllowed(origin, headers["host"], allowed)
}
