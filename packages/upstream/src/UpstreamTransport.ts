/**
 * How the upstream clients reach the platform: one request, its answer read whole, within a deadline. Over
 * undici's agent with kept-alive connections (an apply's read and write, and the next apply's, reuse one
 * connection instead of a TCP and TLS handshake each) rather than @effect/platform's HttpClient, whose generic
 * request path (an AbortController, a URL object, a web Response and a finalization-registry entry per
 * request) cost about 0.5 ms of CPU per request; node's own http client cost 0.11–0.16 ms per request with
 * eight in flight, undici's dispatcher 0.05–0.06 ms (an apply makes two requests, a sync thousands).
 */
import { Context, Data, Effect, Layer } from "effect"
import { Agent, type Dispatcher } from "undici"

export interface TransportRequest {
  readonly method: "GET" | "POST" | "PUT" | "DELETE"
  /** The whole URL, query string included. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string
  /** From the request's start to its answer's last byte. */
  readonly timeoutMs: number
}

export type ResponseHeaders = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

export interface TransportResponse {
  readonly status: number
  /** Lower-cased names; a repeated header as an array. */
  readonly headers: ResponseHeaders
  readonly body: string
}

/** No answer: the deadline passed (`Timeout`), or the connection failed or broke (`Network`). */
export class TransportError extends Data.TaggedError("TransportError")<{
  readonly reason: "Timeout" | "Network"
  readonly message: string
}> {}

export class UpstreamTransport extends Context.Tag("acs/UpstreamTransport")<UpstreamTransport, {
  readonly send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
}>() {}

/** No answer: the connection failed or broke, or the URL cannot be sent to. */
const network = (message: string) => Effect.fail(new TransportError({ reason: "Network", message }))

const send = (agent: Agent) => (request: TransportRequest) =>
  Effect.async<TransportResponse, TransportError>((resume) => {
    let url: URL
    try {
      url = new URL(request.url)
    } catch (error) {
      // A URL that cannot be sent to (a misconfigured base URL) is the call's failure, not the process's.
      return resume(network(error instanceof Error ? error.message : String(error)))
    }
    let settled = false
    // Ends the request and destroys its connection (set once the request has one).
    let abort: ((error: Error) => void) | undefined
    const finish = (outcome: Effect.Effect<TransportResponse, TransportError>) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      resume(outcome)
    }
    // From the request's start (a wait for a connection included) to its answer's last byte.
    const deadline = setTimeout(() => {
      finish(Effect.fail(new TransportError({ reason: "Timeout", message: `no answer within ${request.timeoutMs} ms` })))
      abort?.(new Error("the deadline passed"))
    }, request.timeoutMs)
    let status = 0
    let headers: ResponseHeaders = {}
    const chunks: Array<Buffer> = []
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: (controller) => {
        abort = (error) => controller.abort(error)
        // Ended before it had a connection: it is not sent.
        if (settled) controller.abort(new Error("the call ended"))
      },
      onResponseStart: (_controller, statusCode, responseHeaders) => {
        status = statusCode
        headers = responseHeaders
      },
      onResponseData: (_controller, chunk) => {
        chunks.push(chunk)
      },
      onResponseEnd: () => finish(Effect.succeed({ status, headers, body: Buffer.concat(chunks).toString("utf8") })),
      onResponseError: (_controller, error) => finish(network(error.message))
    }
    try {
      agent.dispatch({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: request.method,
        headers: request.headers,
        body: request.body ?? null,
        // The deadline above bounds the call whole.
        headersTimeout: 0,
        bodyTimeout: 0
      }, handler)
    } catch (error) {
      finish(network(error instanceof Error ? error.message : String(error)))
    }
    // Interrupted (a shutdown, a timeout around the call): the connection is destroyed, not kept for another.
    return Effect.sync(() => {
      settled = true
      clearTimeout(deadline)
      abort?.(new Error("the call was interrupted"))
    })
  })

/** The transport over undici, its kept connections closed with the layer. */
export const UpstreamTransportLive = Layer.scoped(
  UpstreamTransport,
  Effect.acquireRelease(
    Effect.sync(() => new Agent({ keepAliveTimeout: 5_000 })),
    (agent) => Effect.promise(() => agent.destroy())
  ).pipe(Effect.map((agent) => UpstreamTransport.of({ send: send(agent) })))
)
