/**
 * OAuth 2.1 for remote MCP clients (docs/contract.md 5.5), in front of the API app and outside `/api/v1`: acs is
 * both the protected resource (`/mcp`) and its authorization server. The metadata (RFC 9728, RFC 8414), dynamic
 * client registration (RFC 7591), the authorization endpoint (which checks the request and hands the browser to
 * the console's consent page), the token endpoint (authorization code with PKCE S256, refresh) and revocation
 * (RFC 7009). A bad request is refused at once in RFC 6749 §5.2's shape `{error, error_description}`;
 * registration and the token endpoint are rate-limited per client address like sign-in.
 */
import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { OAuthClients, registrationOf } from "../auth/OAuthClients.ts"
import { invalidClient, invalidClientMetadata, invalidRequest, OAuthFailure } from "../auth/OAuthFailure.ts"
import { OAuthGrants } from "../auth/OAuthGrants.ts"
import { RateLimits } from "../limits/RateLimits.ts"
import { MCP_PATH } from "../mcp/McpServer.ts"
import { clientAddress, TrustProxy } from "./ClientAddress.ts"
import { makePublicOrigin } from "./PublicOrigin.ts"
import { readJsonText } from "./RequestBody.ts"
import { pathOf } from "./RequestPath.ts"

export const PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"
const AUTHORIZATION_SERVER_PATH = "/.well-known/oauth-authorization-server"
/** The console's consent page (http/ConsoleRoute.ts serves it). */
export const CONSENT_PATH = "/oauth/consent"
const SCOPES = ["read", "write"] as const
const MAX_OAUTH_BODY = 64 * 1024

/** Browser-based clients (MCP Inspector) call these endpoints from another origin; they carry no cookie. */
const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "content-type, authorization, mcp-protocol-version",
  "access-control-max-age": "600"
}

const json = (body: unknown, status = 200) => HttpServerResponse.unsafeJson(body, { status, headers: CORS })

/** The refusal; a body left partly unread closes the connection, as the front door does. */
const failure = (f: OAuthFailure) => {
  const response = json({ error: f.error, error_description: f.description }, f.status)
  return f.closeConnection === true ? HttpServerResponse.setHeader(response, "connection", "close") : response
}

const rateLimited = (retryAfterMs: number) =>
  HttpServerResponse.unsafeJson(
    { error: "rate_limited", error_description: "too many requests from this address; retry after the delay" },
    { status: 429, headers: { ...CORS, "retry-after": String(Math.ceil(retryAfterMs / 1000)) } }
  )

/** A form body's parameters, each at most once (RFC 6749 §3.2); the refusal otherwise. */
const formParams = (text: string): Effect.Effect<ReadonlyMap<string, string>, OAuthFailure> => {
  const params = new URLSearchParams(text)
  const map = new Map<string, string>()
  for (const [name, value] of params) {
    if (map.has(name)) return Effect.fail(invalidRequest(`${name}: given more than once`))
    map.set(name, value)
  }
  return Effect.succeed(map)
}

const isForm = (contentType: string | undefined) => /^application\/x-www-form-urlencoded\s*(;|$)/i.test(contentType ?? "")

const required = (params: ReadonlyMap<string, string>, name: string) => {
  const value = params.get(name)
  return value === undefined || value.length === 0 || value.length > 2000
    ? Effect.fail(invalidRequest(`${name}: required (at most 2000 characters)`))
    : Effect.succeed(value)
}

/** A plain-text page for the person in the browser: an authorization request that cannot be sent back to its client. */
const errorPage = (message: string) =>
  HttpServerResponse.text(`This sign-in request cannot continue: ${message}.\nGo back to the application and connect again.\n`, {
    status: 400
  })

export class OAuthEndpoints extends Effect.Service<OAuthEndpoints>()("acs/OAuthEndpoints", {
  effect: Effect.gen(function*() {
    const clients = yield* OAuthClients
    const grants = yield* OAuthGrants
    const rateLimits = yield* RateLimits
    const trustProxy = yield* Effect.orDie(TrustProxy)
    const originOf = yield* makePublicOrigin

    /** The request's body text, at most 64 KiB, or the refusal. */
    const bodyOf = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.mapError(readJsonText(request, MAX_OAUTH_BODY), (refused) =>
        new OAuthFailure({
          error: "invalid_request",
          description: refused.error.message,
          status: 400,
          closeConnection: refused.closeConnection
        }))

    const limited = (request: HttpServerRequest.HttpServerRequest, endpoint: string, bucket: "login" | "loginAddress") =>
      rateLimits.consume(`oauth-${endpoint}:${clientAddress(request, trustProxy)}`, bucket)

    const protectedResource = (origin: string) =>
      json({
        resource: `${origin}${MCP_PATH}`,
        authorization_servers: [origin],
        scopes_supported: SCOPES,
        bearer_methods_supported: ["header"],
        resource_name: "acs"
      })

    const authorizationServer = (origin: string) =>
      json({
        issuer: origin,
        authorization_endpoint: `${origin}/oauth/authorize`,
        token_endpoint: `${origin}/oauth/token`,
        registration_endpoint: `${origin}/oauth/register`,
        revocation_endpoint: `${origin}/oauth/revoke`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
        revocation_endpoint_auth_methods_supported: ["none"],
        scopes_supported: SCOPES
      })

    const register = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const text = yield* bodyOf(request)
        let body: unknown
        try {
          body = JSON.parse(text)
        } catch {
          return yield* invalidClientMetadata("the body is JSON client metadata (RFC 7591)")
        }
        return json(registrationOf(yield* clients.register(body)), 201)
      })

    /**
     * The authorization request, checked: an unknown client or a redirect URI it did not register is told to the
     * person and sent nowhere; any other fault goes back to the client's redirect URI as `error`; a good request
     * goes on to the console's consent page with the request's parameters.
     */
    const authorize = (request: HttpServerRequest.HttpServerRequest, origin: string) =>
      Effect.gen(function*() {
        const query = new URLSearchParams(request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : "")
        const clientId = query.get("client_id") ?? ""
        const client = yield* clients.find(clientId)
        if (Option.isNone(client)) return errorPage("the application is not registered here (unknown client_id)")
        const redirectUri = query.get("redirect_uri") ?? ""
        if (!client.value.redirectUris.includes(redirectUri)) {
          return errorPage("redirect_uri is not one the application registered")
        }
        const state = query.get("state") ?? undefined
        const back = (error: string, description: string) => {
          const answer = new URLSearchParams({ error, error_description: description })
          if (state !== undefined) answer.set("state", state)
          return HttpServerResponse.redirect(`${redirectUri}${redirectUri.includes("?") ? "&" : "?"}${answer.toString()}`, { status: 302 })
        }
        if (query.get("response_type") !== "code") return back("unsupported_response_type", "response_type: code only")
        const challenge = query.get("code_challenge") ?? ""
        if (!/^[A-Za-z0-9_-]{43,128}$/.test(challenge)) return back("invalid_request", "code_challenge: required, PKCE S256")
        if (query.get("code_challenge_method") !== "S256") {
          return back("invalid_request", "code_challenge_method: S256 only (plain is not accepted)")
        }
        const resource = query.get("resource") ?? `${origin}${MCP_PATH}`
        if (resource !== `${origin}${MCP_PATH}`) return back("invalid_target", `resource: this server protects ${origin}${MCP_PATH} only`)
        const scope = (query.get("scope") ?? "").split(" ").filter((s) => s.length > 0)
        if (scope.some((s) => s !== "read" && s !== "write")) return back("invalid_scope", "scope: read or write (approval is never granted)")
        const consent = new URLSearchParams({
          client_id: clientId,
          redirect_uri: redirectUri,
          code_challenge: challenge,
          code_challenge_method: "S256",
          resource,
          scope: scope.includes("write") ? "write" : "read"
        })
        if (state !== undefined) consent.set("state", state)
        return HttpServerResponse.redirect(`${CONSENT_PATH}?${consent.toString()}`, { status: 302 })
      })

    const token = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        if (!isForm(request.headers["content-type"])) {
          return yield* invalidRequest("Content-Type: application/x-www-form-urlencoded")
        }
        const params = yield* Effect.flatMap(bodyOf(request), formParams)
        const clientId = yield* required(params, "client_id")
        if (Option.isNone(yield* clients.find(clientId))) return yield* invalidClient("unknown client_id")
        const resource = params.get("resource")
        const grantType = params.get("grant_type")
        const answer = grantType === "authorization_code"
          ? yield* grants.exchangeCode({
            code: yield* required(params, "code"),
            codeVerifier: yield* required(params, "code_verifier"),
            clientId,
            redirectUri: yield* required(params, "redirect_uri"),
            resource
          })
          : grantType === "refresh_token"
          ? yield* grants.refresh({ refreshToken: yield* required(params, "refresh_token"), clientId, resource })
          : yield* new OAuthFailure({
            error: "unsupported_grant_type",
            description: "grant_type: authorization_code or refresh_token",
            status: 400
          })
        return HttpServerResponse.setHeader(json(answer), "pragma", "no-cache")
      })

    const revoke = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        if (!isForm(request.headers["content-type"])) {
          return yield* invalidRequest("Content-Type: application/x-www-form-urlencoded")
        }
        const params = yield* Effect.flatMap(bodyOf(request), formParams)
        yield* grants.revoke(yield* required(params, "token"))
        return HttpServerResponse.empty({ status: 200, headers: CORS })
      })

    /** What the consent page shows of a client: its name and redirect URIs, public by registration. */
    const describeClient = (clientId: string) =>
      Effect.map(clients.find(clientId), Option.match({
        onNone: () => failure(invalidClient("unknown client_id")),
        onSome: (client) => json({ client_id: client.clientId, client_name: client.clientName, redirect_uris: client.redirectUris })
      }))

    const answer = (request: HttpServerRequest.HttpServerRequest, path: string): Option.Option<Effect.Effect<HttpServerResponse.HttpServerResponse, OAuthFailure>> => {
      const method = request.method
      if (method === "OPTIONS" && (path.startsWith("/.well-known/") || path.startsWith("/oauth/"))) {
        return Option.some(Effect.succeed(HttpServerResponse.empty({ status: 204, headers: CORS })))
      }
      if (method === "GET" && (path === PROTECTED_RESOURCE_PATH || path === `${PROTECTED_RESOURCE_PATH}${MCP_PATH}`)) {
        return Option.some(Effect.sync(() => protectedResource(originOf(request))))
      }
      if (method === "GET" && path === AUTHORIZATION_SERVER_PATH) return Option.some(Effect.sync(() => authorizationServer(originOf(request))))
      if (method === "GET" && path === "/oauth/authorize") return Option.some(authorize(request, originOf(request)))
      if (method === "GET" && path.startsWith("/oauth/clients/")) return Option.some(describeClient(path.slice("/oauth/clients/".length)))
      if (method === "POST" && path === "/oauth/register") {
        return Option.some(Effect.zipRight(limited(request, "register", "login"), register(request)).pipe(
          Effect.catchTag("RateLimited", (e) => Effect.succeed(rateLimited(e.retry_after_ms)))
        ))
      }
      if (method === "POST" && path === "/oauth/token") {
        return Option.some(Effect.zipRight(limited(request, "token", "loginAddress"), token(request)).pipe(
          Effect.catchTag("RateLimited", (e) => Effect.succeed(rateLimited(e.retry_after_ms)))
        ))
      }
      if (method === "POST" && path === "/oauth/revoke") {
        return Option.some(Effect.zipRight(limited(request, "token", "loginAddress"), revoke(request)).pipe(
          Effect.catchTag("RateLimited", (e) => Effect.succeed(rateLimited(e.retry_after_ms)))
        ))
      }
      return Option.none()
    }

    /** The answer to an OAuth request; none for a path that is not one. */
    const handle = (request: HttpServerRequest.HttpServerRequest, path: string) =>
      Option.map(answer(request, path), (handled) =>
        handled.pipe(
          Effect.catchTag("OAuthFailure", (f) => Effect.succeed(failure(f))),
          Effect.withSpan("oauth.request")
        ))

    return { handle } as const
  }),
  dependencies: [OAuthClients.Default]
}) {}

const isOAuthPath = (path: string) => path.startsWith("/.well-known/") || path.startsWith("/oauth/")

export const withOAuth = <E, R>(app: HttpApp.Default<E, R>) =>
  Effect.flatMap(
    HttpServerRequest.HttpServerRequest,
    (request): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | OAuthEndpoints | HttpServerRequest.HttpServerRequest> => {
      const path = pathOf(request.url)
      if (!isOAuthPath(path)) return app
      return Effect.flatMap(OAuthEndpoints, (endpoints) => Option.getOrElse(endpoints.handle(request, path), () => app))
    }
  )
