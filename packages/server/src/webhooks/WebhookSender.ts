/**
 * One delivery attempt (docs/contract.md 6): a POST of the body with `Acs-Event-Id` and
 * `Acs-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`. The signature covers the body
 * only, so receivers dedupe on the body's `eventId`; the header repeats it for their logs. Delivered means a 2xx
 * within the timeout (10 s); a redirect is not followed (it counts as a failure); at most 1 KiB of the
 * receiver's answer is read and kept. The connection goes through the SSRF guard's own DNS lookup. The
 * attempt's trace context goes along as `traceparent` (W3C Trace Context).
 *
 * Connections are kept alive between deliveries (undici's agent, at most `SOCKETS` to an endpoint): a
 * burst of events to one endpoint costs one TLS handshake, not one each. A kept connection was checked by the
 * guard when it was opened; one whose answer was cut short (a timeout, more than 1 KiB) is destroyed, never
 * reused. An attempt's timeout and duration run from the moment it has a connection: one waiting for a free
 * connection to a slow endpoint (a backlog of several batches) is not timed out for the endpoint's other answers.
 */
import * as Crypto from "node:crypto"
import type { IncomingHttpHeaders } from "node:http"
import { Agent, type Dispatcher } from "undici"
import { checkedLookup, urlRefusal } from "./WebhookTargets.ts"

export const MAX_RESPONSE_BYTES = 1024

/** Connections kept to one endpoint (a sixth of WEBHOOK_BATCH's default: a full batch goes in six waves). */
export const SOCKETS = 32

// undici rather than node:http: a third of the sender's CPU per delivery (63–90 µs against 174–200 µs, 32 in
// flight to a local receiver), which the deliveries' share of a busy instance's CPU is mostly made of. One
// agent per guard setting, each connection opened through the guard's own lookup; redirects are never followed
// (undici follows none unless asked).
const agents = new Map<boolean, Agent>()
const agentFor = (allowPrivate: boolean): Agent => {
  const known = agents.get(allowPrivate)
  if (known !== undefined) return known
  const agent = new Agent({ connections: SOCKETS, keepAliveTimeout: 30_000, connect: { lookup: checkedLookup(allowPrivate) } })
  agents.set(allowPrivate, agent)
  return agent
}

/**
 * The connections of one endpoint (EndpointLanes.ts): endpoints on one host do not share them, so one that
 * holds its connections without answering holds only its own.
 */
export const endpointDispatcher = (allowPrivate: boolean, connections: number): Dispatcher =>
  new Agent({ connections, keepAliveTimeout: 30_000, connect: { lookup: checkedLookup(allowPrivate) } })

export interface AttemptResult {
  readonly delivered: boolean
  readonly statusCode: number | null
  readonly durationMs: number
  readonly error: string | null
  readonly response: string | null
}

/** The signature header for `rawBody` at `unixSeconds`. */
export const signature = (secret: string, unixSeconds: number, rawBody: string): string =>
  `t=${unixSeconds},v1=${Crypto.createHmac("sha256", secret).update(`${unixSeconds}.${rawBody}`).digest("hex")}`

export interface SendOptions {
  readonly url: string
  readonly secret: string
  readonly eventId: string
  readonly rawBody: string
  readonly unixSeconds: number
  readonly timeoutMs: number
  readonly allowPrivate: boolean
  /** The delivery attempt's W3C trace context, sent as `traceparent` so the receiver's trace can continue it. */
  readonly traceParent?: string | null
  /** The endpoint's own connections (`endpointDispatcher`); the shared ones per host when not given. */
  readonly dispatcher?: Dispatcher
}

export const send = (options: SendOptions): Promise<AttemptResult> =>
  new Promise((resolve) => {
    // Set when the attempt gets its connection (onRequestStart); an attempt that never got one took no time.
    let started: number | undefined
    const finish = (result: Omit<AttemptResult, "durationMs">) =>
      resolve({ ...result, durationMs: started === undefined ? 0 : Math.round(performance.now() - started) })
    const refused = urlRefusal(options.url, options.allowPrivate)
    if (refused !== undefined) return finish({ delivered: false, statusCode: null, error: refused, response: null })
    const url = new URL(options.url)
    let settled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    // Ends the request and destroys its connection (never reused once an answer was cut short).
    let abort: ((error: Error) => void) | undefined
    const settle = (result: Omit<AttemptResult, "durationMs">, reusable = false) => {
      if (settled) return
      settled = true
      if (timer !== undefined) clearTimeout(timer)
      if (!reusable) abort?.(new Error("the attempt ended"))
      finish(result)
    }
    const headers: IncomingHttpHeaders = {
      "content-type": "application/json",
      "user-agent": "acs-webhooks/1",
      "acs-event-id": options.eventId,
      "acs-signature": signature(options.secret, options.unixSeconds, options.rawBody)
    }
    if (options.traceParent !== undefined && options.traceParent !== null) headers["traceparent"] = options.traceParent
    const chunks: Array<Buffer> = []
    let size = 0
    let status = 0
    let location: string | undefined
    const done = (reusable: boolean) => {
      // PostgreSQL's text holds no NUL: one in the answer made recording the attempt fail, and the delivery was
      // sent again and again without ever being recorded.
      const body = Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString("utf8").replaceAll("\u0000", "\uFFFD")
      const delivered = status >= 200 && status < 300
      settle({
        delivered,
        statusCode: status,
        error: delivered ? null : status >= 300 && status < 400 ? `redirect to ${location ?? "?"} not followed` : `HTTP ${status}`,
        response: body.length > 0 ? body : null
      }, reusable)
    }
    const handler: Dispatcher.DispatchHandler = {
      // A kept connection is handed over at once; a new one is made (the guard's lookup, the connect, TLS) first.
      onRequestStart: (controller) => {
        abort = (error) => controller.abort(error)
        if (settled) return controller.abort(new Error("the attempt ended"))
        if (started !== undefined) return
        started = performance.now()
        timer = setTimeout(
          () => settle({ delivered: false, statusCode: null, error: `no answer within ${options.timeoutMs} ms`, response: null }),
          options.timeoutMs
        )
      },
      onResponseStart: (_controller, statusCode, responseHeaders) => {
        status = statusCode
        const redirect = responseHeaders["location"]
        location = Array.isArray(redirect) ? redirect[0] : redirect
      },
      onResponseData: (_controller, chunk) => {
        chunks.push(chunk)
        size += chunk.length
        // Enough to keep: the rest of the answer is not read.
        if (size >= MAX_RESPONSE_BYTES) done(false)
      },
      onResponseEnd: () => done(true),
      onResponseError: (_controller, error) => settle({ delivered: false, statusCode: null, error: error.message, response: null })
    }
    const dispatcher = options.dispatcher ?? agentFor(options.allowPrivate)
    dispatcher.dispatch({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: "POST",
      headers,
      body: options.rawBody,
      // The attempt's own timer (above) bounds it whole, from the connection on.
      headersTimeout: 0,
      bodyTimeout: 0
    }, handler)
  })
