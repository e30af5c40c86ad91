/**
 * One delivery attempt (API.md "Events"): a POST of the body with `Acs-Event-Id` and
 * `Acs-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`. Delivered means a 2xx
 * within the timeout (10 s); a redirect is not followed (it counts as a failure); at most 1 KiB of the
 * receiver's answer is read and kept. The connection goes through the SSRF guard's own DNS lookup. The
 * attempt's trace context goes along as `traceparent` (W3C Trace Context).
 *
 * Connections are kept alive between deliveries (one pool per process, at most `SOCKETS` to an endpoint): a
 * burst of events to one endpoint costs one TLS handshake, not one each. A kept connection was checked by the
 * guard when it was opened; one whose answer was cut short (a timeout, more than 1 KiB) is destroyed, never
 * reused. An attempt's timeout and duration run from the moment it has a connection: one waiting for a free
 * connection to a slow endpoint (a backlog of several batches) is not timed out for the endpoint's other answers.
 */
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import * as Https from "node:https"
import { checkedLookup, urlRefusal } from "./WebhookTargets.ts"

export const MAX_RESPONSE_BYTES = 1024

// As many idle connections kept as may be open: a batch sent side by side would otherwise close the ones
// beyond the idle limit and connect them again for the next batch.
/** Connections kept to one endpoint (WEBHOOK_BATCH's default: a batch never waits for one). */
export const SOCKETS = 32
const agents = {
  "http:": new Http.Agent({ keepAlive: true, maxSockets: SOCKETS, maxFreeSockets: SOCKETS, timeout: 30_000 }),
  "https:": new Https.Agent({ keepAlive: true, maxSockets: SOCKETS, maxFreeSockets: SOCKETS, timeout: 30_000 })
}

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
}

export const send = (options: SendOptions): Promise<AttemptResult> =>
  new Promise((resolve) => {
    // Set when the attempt gets its connection (below); an attempt that never got one took no time.
    let started: number | undefined
    const finish = (result: Omit<AttemptResult, "durationMs">) =>
      resolve({ ...result, durationMs: started === undefined ? 0 : Math.round(performance.now() - started) })
    const refused = urlRefusal(options.url, options.allowPrivate)
    if (refused !== undefined) return finish({ delivered: false, statusCode: null, error: refused, response: null })
    const url = new URL(options.url)
    const transport = url.protocol === "https:" ? Https : Http
    let settled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    /** `reusable`: the answer was read to its end, so the connection may serve the next delivery. */
    const settle = (result: Omit<AttemptResult, "durationMs">, reusable = false) => {
      if (settled) return
      settled = true
      if (timer !== undefined) clearTimeout(timer)
      if (!reusable) request.destroy()
      finish(result)
    }
    const request = transport.request(url, {
      method: "POST",
      agent: url.protocol === "https:" ? agents["https:"] : agents["http:"],
      lookup: checkedLookup(options.allowPrivate),
      headers: {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(options.rawBody),
        "user-agent": "acs-webhooks/1",
        "acs-event-id": options.eventId,
        "acs-signature": signature(options.secret, options.unixSeconds, options.rawBody),
        ...(options.traceParent === undefined || options.traceParent === null ? {} : { traceparent: options.traceParent })
      }
    }, (response) => {
      const chunks: Array<Buffer> = []
      let size = 0
      const done = (reusable: boolean) => {
        const status = response.statusCode ?? 0
        // PostgreSQL's text holds no NUL: one in the answer made recording the attempt fail, and the delivery was
        // sent again and again without ever being recorded.
        const body = Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString("utf8").replaceAll("\u0000", "\uFFFD")
        const delivered = status >= 200 && status < 300
        settle({
          delivered,
          statusCode: status,
          error: delivered ? null : status >= 300 && status < 400 ? `redirect to ${response.headers.location ?? "?"} not followed` : `HTTP ${status}`,
          response: body.length > 0 ? body : null
        }, reusable)
      }
      response.on("data", (chunk: Buffer) => {
        chunks.push(chunk)
        size += chunk.length
        // Enough to keep: the rest of the answer is not read.
        if (size >= MAX_RESPONSE_BYTES) done(false)
      })
      response.on("end", () => done(true))
      response.on("error", () => done(false))
    })
    // A kept connection is handed over at once; a new one is made (the guard's lookup, the connect, TLS) within the timeout.
    request.once("socket", () => {
      if (settled) return
      started = performance.now()
      timer = setTimeout(
        () => settle({ delivered: false, statusCode: null, error: `no answer within ${options.timeoutMs} ms`, response: null }),
        options.timeoutMs
      )
    })
    request.on("error", (error) => settle({ delivered: false, statusCode: null, error: error.message, response: null }))
    request.end(options.rawBody)
  })
