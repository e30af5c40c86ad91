/**
 * The simulator's HTTP server (plain node:http: report pages of 1,000 rows × 90 days are large and
 * must answer quickly). Paths: `/auth/oauth2/token`, `/api/v5/...` and `/_control/...`.
 *
 * Every answer carries `x-request-id` (a uuid). API calls need `Authorization: Bearer <token>`
 * (unknown or expired → 401) and, except `/acls` and `/me`, `X-AP-Context: orgId=<orgId>` naming an
 * account of the tree (missing, malformed or foreign → 403 FORBIDDEN). Writes to an account without a
 * writing role → 403. Errors use the v5 shape `{"data":null,"pagination":null,"error":{"errors":[…]}}`.
 *
 * Bulk calls (`.../bulk`, `.../delete/bulk`) answer 200 with the rows that worked in `data` (request
 * order) and one `error.errors` item per failing row whose `field` is `[<index>]` or
 * `[<index>].<attribute>`, e.g. `[3].bidAmount`, the index 0-based in the request array. Parse it with
 * `/^\[(\d+)\]/`.
 *
 * The same world also answers the Apple Ads Platform API v1 under `/v1/...` (simulator/v1): context
 * `X-AP-Context: adAccountId=<id>`, errors `{error:{code, message, details[]}}` and `RateLimit-*` headers
 * on every v1 answer. Every successful write of either version lands in the change history, attributed
 * to the API client that made it; `POST /_control/web-ui` makes a write as a person in the web UI.
 */
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { accountRoutes } from "./SimulatorAccountRoutes.ts"
import { answerTokenRequest, type ApiClients, type TokenStore } from "./SimulatorAuth.ts"
import type { CallLog } from "./SimulatorCallLog.ts"
import { campaignRoutes } from "./SimulatorCampaignRoutes.ts"
import type { SimulatorControl } from "./SimulatorControl.ts"
import { DEFAULT_TIMEOUT_MS, type FaultRegistry, type FiredFaults, type StatusFault } from "./SimulatorFaults.ts"
import { type Answer, bodyBytes, copyHeaders, errorEnvelope, WireFailure, withHeaders } from "./SimulatorHttp.ts"
import { keywordRoutes } from "./SimulatorKeywordRoutes.ts"
import { reportRoutes } from "./SimulatorReportRoutes.ts"
import type { HttpMethod, OrgRequest } from "./SimulatorRouter.ts"
import { RouteTable } from "./SimulatorRouteTable.ts"
import { isReadOnly } from "./SimulatorSize.ts"
import type { SimulatorRateLimit, WindowState } from "./SimulatorRateLimit.ts"
import { recordingWrite } from "./SimulatorWriteRecorder.ts"
import type { Actor } from "./SimulatorChangeHistory.ts"
import { toV1Error, V1_PREFIX } from "./v1/SimulatorV1Http.ts"
import { v1Routes } from "./v1/SimulatorV1Routes.ts"
import type { SimulatorState } from "./SimulatorState.ts"

export const TOKEN_PATH = "/auth/oauth2/token"
export const API_PREFIX = "/api/v5"
const CONTROL_PREFIX = "/_control/"
const MAX_BODY_BYTES = 32 * 1024 * 1024

const ROUTES = new RouteTable([...accountRoutes, ...campaignRoutes, ...keywordRoutes, ...reportRoutes, ...v1Routes])

const isV1 = (path: string): boolean => path.startsWith(`${V1_PREFIX}/`)

export interface SimulatorServerParts {
  readonly state: SimulatorState
  readonly clients: ApiClients
  readonly tokens: TokenStore
  readonly faults: FaultRegistry
  readonly calls: CallLog
  readonly control: SimulatorControl
  /** The request budget per API client (SimulatorRateLimit.ts). */
  readonly rateLimit: SimulatorRateLimit
}

const apiError = (status: number, messageCode: string, message: string, headers: Readonly<Record<string, string>> = {}): Answer => ({
  status,
  body: errorEnvelope([{ messageCode, message, field: null }]),
  headers
})

const isMethod = (method: string): method is HttpMethod =>
  method === "GET" || method === "POST" || method === "PUT" || method === "DELETE"

const CONTEXT_PATTERNS = {
  orgId: /(?:^|[;,\s])orgId=(\d{1,15})(?:$|[;,\s])/,
  adAccountId: /(?:^|[;,\s])adAccountId=(\d{1,15})(?:$|[;,\s])/
} as const

/**
 * `orgId=123` on v5, `adAccountId=123` on v1 (other `key=value` pairs may follow, separated by `;` or
 * `,`). The v1 ad account id is the simulator's child org id: one model, two names.
 */
const orgIdFrom = (header: string | Array<string> | undefined, key: "orgId" | "adAccountId" = "orgId"): number | null => {
  const value = Array.isArray(header) ? header[0] : header
  const match = value === undefined ? null : CONTEXT_PATTERNS[key].exec(value)
  return match ? Number(match[1]) : null
}

const contextKeyOf = (path: string) => isV1(path) ? "adAccountId" : "orgId"

/** A path of these characters alone (no dot segment, escape, backslash or query) is what `URL` makes of it. */
const PLAIN_TARGET = /^\/(?!\/)[A-Za-z0-9_\-/]*$/

/** The request target's path and query, as `new URL(target, base)` reads them (parsed only when it must be). */
const targetOf = (target: string): Pick<URL, "pathname" | "search" | "searchParams"> =>
  PLAIN_TARGET.test(target) ? { pathname: target, search: "", searchParams: new URLSearchParams() } : new URL(target, "http://simulator")

const statusFaultAnswer = (fault: StatusFault, requestId: string): Answer => {
  const retryAfter = fault.retryAfterSeconds ?? (fault.status === 429 ? 1 : undefined)
  const headers = retryAfter === undefined ? {} : { "retry-after": String(retryAfter) }
  const defaults: Record<number, readonly [string, string]> = {
    429: ["TOO_MANY_REQUESTS", "Too many requests"],
    500: ["INTERNAL_ERROR", `Internal server error (request id ${requestId})`],
    503: ["SERVICE_UNAVAILABLE", "Service unavailable"]
  }
  const [code, message] = defaults[fault.status] ?? ["SIMULATED_ERROR", `Simulated HTTP ${fault.status}`]
  return apiError(fault.status, fault.messageCode ?? code, fault.message ?? message, headers)
}

const readBody = (request: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    request.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        reject(new WireFailure(413, [{ messageCode: "INVALID_INPUT", message: "request body too large", field: null }]))
        request.destroy()
      } else chunks.push(chunk)
    })
    request.on("end", () => resolve(Buffer.concat(chunks)))
    request.on("error", reject)
  })

export class SimulatorServer {
  private readonly server: Server
  /** Answers held by timeout faults; released (dropped) on close. */
  private readonly held = new Set<{ readonly timer: NodeJS.Timeout; readonly release: () => void }>()

  constructor(private readonly parts: SimulatorServerParts) {
    this.server = createServer((request, response) => {
      this.serve(request, response).catch((error: unknown) => {
        if (!response.headersSent) {
          this.send(response, apiError(500, "INTERNAL_ERROR", `simulator defect: ${String(error)}`))
        }
      })
    })
    // Keep-alive connections are reused by clients paging through many calls.
    this.server.keepAliveTimeout = 10_000
  }

  listen(port: number, host: string): Promise<string> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject)
      this.server.listen(port, host, () => {
        this.server.off("error", reject)
        const address = this.server.address() as AddressInfo
        const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address
        resolve(`http://${shownHost}:${address.port}`)
      })
    })
  }

  close(): Promise<void> {
    for (const hold of this.held) {
      clearTimeout(hold.timer)
      hold.release()
    }
    this.held.clear()
    return new Promise((resolve) => {
      this.server.close(() => resolve())
      this.server.closeAllConnections()
    })
  }

  private hold(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const entry = {
        timer: setTimeout(() => {
          this.held.delete(entry)
          resolve(true)
        }, ms),
        release: () => resolve(false)
      }
      this.held.add(entry)
    })
  }

  private send(response: ServerResponse, answer: Answer): void {
    if (response.destroyed || response.writableEnded) return
    const headers = copyHeaders(answer.headers)
    // A 204 has no body and no Content-Length (RFC 9110 §8.6): a client may refuse one that claims a length.
    if (answer.status === 204) {
      response.writeHead(204, headers)
      response.end()
      return
    }
    const payload = bodyBytes(answer.body)
    headers["content-type"] = "application/json; charset=utf-8"
    headers["content-length"] = String(payload.length)
    response.writeHead(answer.status, headers)
    response.end(payload)
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const { calls, faults } = this.parts
    const requestId = randomUUID()
    response.setHeader("x-request-id", requestId)
    const arrivedAt = Date.now()
    const url = targetOf(request.url ?? "/")
    const method = (request.method ?? "GET").toUpperCase()
    const path = url.pathname
    // Anything but a read may change the world; reports and finds are POSTs that only read.
    if (method !== "GET" && !/\/reports\/|\/find$|\/query$/.test(path)) this.parts.state.version++
    let rawBody: Buffer
    try {
      rawBody = await readBody(request)
    } catch (error) {
      if (error instanceof WireFailure) return this.send(response, { status: error.status, body: errorEnvelope(error.errors) })
      throw error
    }

    if (path.startsWith(CONTROL_PREFIX)) {
      let body: unknown = null
      try {
        body = rawBody.length === 0 ? null : JSON.parse(rawBody.toString("utf8"))
      } catch {
        return this.send(response, apiError(400, "INVALID_INPUT", "malformed JSON"))
      }
      if (path === `${CONTROL_PREFIX}web-ui` && method === "POST") return this.send(response, this.webUi(body, requestId))
      return this.send(response, this.parts.control.handle(method, path, url.searchParams, body))
    }

    const orgId = orgIdFrom(request.headers["x-ap-context"], contextKeyOf(path))
    const fired = faults.evaluate(method, path, orgId)
    for (const readOnly of fired.readOnly) this.parts.control.applyReadOnly(readOnly.orgId, readOnly.roleNames)

    // The budget is the API client's (its bearer token's), across every account it calls.
    const window = isV1(path) ? this.parts.rateLimit.take(this.callerOf(request) ?? "anonymous", arrivedAt) : null
    let answer: Answer
    const timeout = fired.timeout
    if (fired.status !== null) answer = statusFaultAnswer(fired.status, requestId)
    else if (window?.refused === true) {
      answer = statusFaultAnswer({ kind: "status", status: 429, retryAfterSeconds: window.resetSeconds, message: "Rate limit exceeded for this API client" }, requestId)
    }
    else if (timeout !== null && timeout.process === false) {
      if (!(await this.hold(timeout.delayMs ?? DEFAULT_TIMEOUT_MS))) return
      answer = apiError(504, "GATEWAY_TIMEOUT", "Gateway timeout")
    } else answer = this.dispatch(method, path, url.searchParams, rawBody, request, requestId, fired, orgId)

    calls.record({
      time: new Date(arrivedAt).toISOString(),
      method,
      path,
      query: url.search,
      status: answer.status,
      orgId,
      requestId,
      faults: fired.kinds,
      reason: answer.reason ?? null
    })
    if (timeout !== null && timeout.process !== false) {
      // The call has been applied; the client only never hears back in time.
      if (!(await this.hold(timeout.delayMs ?? DEFAULT_TIMEOUT_MS))) return
    }
    this.send(response, isV1(path) ? this.v1Answer(answer, path, window) : answer)
  }

  /** The API client a request's bearer token was issued to, or null. */
  private callerOf(request: IncomingMessage): string | null {
    const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? "")
    return bearer === null ? null : this.parts.tokens.clientOf(bearer[1]!, Date.now())
  }

  /** The v1 face of an answer: errors in the v1 shape, the caller's `RateLimit-*` headers on every API answer. */
  private v1Answer(answer: Answer, path: string, window: WindowState | null): Answer {
    const shaped = answer.status >= 400 ? toV1Error(answer, path) : answer
    if (window === null) return shaped
    const headers = copyHeaders(answer.headers)
    headers["ratelimit-limit"] = String(window.limit)
    headers["ratelimit-remaining"] = String(window.remaining)
    headers["ratelimit-reset"] = String(window.resetSeconds)
    return withHeaders(shaped, headers)
  }

  /**
   * A write as a person in Apple's web UI would make it (userType CUSTOMER): `{adAccountId, method,
   * path, body, user?}` with a v1 path (`/v1/...`), applied without faults or auth, recorded in the
   * change history under that person. Tests use it to provoke outside changes.
   */
  webUi(body: unknown, requestId: string): Answer {
    const input = typeof body === "object" && body !== null ? (body as Readonly<Record<string, unknown>>) : {}
    const adAccountId = input["adAccountId"]
    const method = input["method"]
    const path = input["path"]
    if (typeof adAccountId !== "number" || typeof method !== "string" || !isMethod(method) || typeof path !== "string" || !isV1(path)) {
      return apiError(400, "INVALID_INPUT", "expected {adAccountId: number, method, path: \"/v1/...\", body?, user?}")
    }
    const account = this.parts.state.account(adAccountId)
    if (account === undefined) return apiError(404, "NOT_FOUND", `no account ${adAccountId}`)
    const route = ROUTES.find(method, path)
    if (route === undefined || route.scope !== "org") return apiError(404, "NOT_FOUND", `no org route ${method} ${path}`)
    const actor: Actor = { userType: "CUSTOMER", modifiedBy: typeof input["user"] === "string" ? input["user"] : "web-ui-user@example.com" }
    this.parts.state.version++
    const ids = (route.pattern.exec(path) ?? []).slice(1).map(Number)
    try {
      return this.v1Answer(
        route.handle({
          method,
          path,
          query: new URLSearchParams(),
          body: input["body"] ?? null,
          requestId,
          ids,
          state: this.parts.state,
          account,
          failingRows: new Set(),
          failingRowMessage: "",
          actor
        }),
        path,
        null
      )
    } catch (error) {
      if (error instanceof WireFailure) return this.v1Answer({ status: error.status, body: errorEnvelope(error.errors) }, path, null)
      throw error
    }
  }

  private dispatch(
    method: string,
    path: string,
    query: URLSearchParams,
    rawBody: Buffer,
    request: IncomingMessage,
    requestId: string,
    fired: FiredFaults,
    /** From X-AP-Context under the path's key (`orgIdFrom`), null when missing or malformed. */
    orgId: number | null
  ): Answer {
    const { clients, state, tokens } = this.parts
    if (path === TOKEN_PATH) {
      if (method !== "POST") return apiError(405, "METHOD_NOT_ALLOWED", "use POST")
      if (fired.tokenRefused) {
        return { status: 401, body: { error: "invalid_client" }, reason: "tokenRefused fault" }
      }
      // Apple's documented call sends the parameters in the query string; a form body works too.
      const parameters = new URLSearchParams(query)
      for (const [key, value] of new URLSearchParams(rawBody.toString("utf8"))) parameters.set(key, value)
      // Secrets and tokens follow the wall clock (the client's), not the simulated calendar; a client that moved its
      // own clock with the simulator's may sign as far ahead as the control API advanced.
      return answerTokenRequest(parameters, clients, tokens, Date.now(), state.advancedMs)
    }

    const candidates = ROUTES.matching(path)
    if (candidates.length === 0) return apiError(404, "NOT_FOUND", `no resource at ${path}`)
    const route = candidates.find((candidate) => candidate.method === method)
    if (route === undefined || !isMethod(method)) return apiError(405, "METHOD_NOT_ALLOWED", `${method} is not allowed on ${path}`)

    const authorization = request.headers.authorization ?? ""
    const bearer = /^Bearer\s+(\S+)$/i.exec(authorization)
    const caller = bearer === null ? null : tokens.clientOf(bearer[1]!, Date.now())
    if (caller === null) return apiError(401, "UNAUTHORIZED", "Invalid or expired access token")

    let body: unknown = null
    if (rawBody.length > 0) {
      try {
        body = JSON.parse(rawBody.toString("utf8"))
      } catch {
        return apiError(400, "INVALID_INPUT", "malformed JSON body")
      }
    }
    const ids = (route.pattern.exec(path) ?? []).slice(1).map(Number)
    const base = { method, path, query, body, requestId, ids, state }
    try {
      if (route.scope === "user") return route.handle(base)
      const contextHeader = request.headers["x-ap-context"]
      const key = contextKeyOf(path)
      if (orgId === null) {
        return apiError(403, "FORBIDDEN", contextHeader === undefined ? "X-AP-Context header is missing" : `X-AP-Context must be ${key}=<id>`)
      }
      const account = state.account(orgId)
      if (account === undefined) return apiError(403, "FORBIDDEN", `no access to org ${orgId}`)
      if (route.write && isReadOnly(account.roleNames)) {
        return apiError(403, "FORBIDDEN", `read-only access to org ${orgId} (${account.roleNames.join(", ")})`)
      }
      const actor: Actor = { userType: "CUSTOMER_API", modifiedBy: caller }
      // Spelled out, not `{...base, account, ...}`: see copyHeaders.
      const orgRequest: OrgRequest = {
        method,
        path,
        query,
        body,
        requestId,
        ids,
        state,
        account,
        failingRows: fired.failingRows,
        failingRowMessage: fired.failingRowMessage,
        actor
      }
      // v1 writes delegate to the v5 handlers, which record there; v5 writes are recorded here.
      return route.write && !isV1(path) ? recordingWrite(orgRequest, route.handle) : route.handle(orgRequest)
    } catch (error) {
      if (error instanceof WireFailure) return { status: error.status, body: errorEnvelope(error.errors), headers: error.headers }
      // A simulator bug: answered like the platform's 500, with the cause in the call log.
      return {
        ...apiError(500, "INTERNAL_ERROR", `Internal server error (request id ${requestId})`),
        reason: error instanceof Error ? error.stack ?? error.message : String(error)
      }
    }
  }
}
