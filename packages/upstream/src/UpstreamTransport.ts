/**
 * How the upstream clients reach the platform: one request, its answer read whole, within a deadline. Over
 * node's http/https with keep-alive agents (an apply's read and write, and the next apply's, reuse one socket
 * instead of a TCP and TLS handshake each) rather than @effect/platform's HttpClient, whose generic request
 * path (an AbortController, a URL object, a web Response and a finalization-registry entry per request) cost
 * about 0.5 ms of CPU per request where node's client costs 0.07 ms: an apply makes two requests, a sync
 * thousands.
 */
import { Context, Data, Effect, Layer } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"

export interface TransportRequest {
  readonly method: "GET" | "POST" | "PUT" | "DELETE"
  /** The whole URL, query string included. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string
  /** From the request's start to its answer's last byte. */
  readonly timeoutMs: number
}

export interface TransportResponse {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
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

const send = (agents: { readonly http: Http.Agent; readonly https: Https.Agent }) => (request: TransportRequest) =>
  Effect.async<TransportResponse, TransportError>((resume) => {
    const secure = request.url.startsWith("https:")
    let settled = false
    const finish = (outcome: Effect.Effect<TransportResponse, TransportError>) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      resume(outcome)
    }
    const options = { method: request.method, headers: request.headers, agent: secure ? agents.https : agents.http }
    const onAnswer = (answer: Http.IncomingMessage) => {
      const chunks: Array<Buffer> = []
      answer.on("data", (chunk: Buffer) => chunks.push(chunk))
      answer.on("end", () => finish(Effect.succeed({ status: answer.statusCode ?? 0, headers: answer.headers, body: Buffer.concat(chunks).toString("utf8") })))
      answer.on("error", (error) => finish(Effect.fail(new TransportError({ reason: "Network", message: error.message }))))
    }
    let outgoing: Http.ClientRequest
    try {
      outgoing = secure ? Https.request(request.url, options, onAnswer) : Http.request(request.url, options, onAnswer)
    } catch (error) {
      // A URL node cannot send to (a misconfigured base URL) is the call's failure, not the process's.
      return resume(Effect.fail(new TransportError({ reason: "Network", message: error instanceof Error ? error.message : String(error) })))
    }
    const deadline = setTimeout(() => {
      finish(Effect.fail(new TransportError({ reason: "Timeout", message: `no answer within ${request.timeoutMs} ms` })))
      outgoing.destroy()
    }, request.timeoutMs)
    outgoing.on("error", (error) => finish(Effect.fail(new TransportError({ reason: "Network", message: error.message }))))
    outgoing.end(request.body)
    // Interrupted (a shutdown, a timeout around the call): the socket is dropped, not returned to the pool.
    return Effect.sync(() => {
      settled = true
      clearTimeout(deadline)
      outgoing.destroy()
    })
  })

/** The transport over node's http and https, its idle sockets closed with the layer. */
export const NodeUpstreamTransport = Layer.scoped(
  UpstreamTransport,
  Effect.acquireRelease(
    Effect.sync(() => ({
      http: new Http.Agent({ keepAlive: true, timeout: 5_000 }),
      https: new Https.Agent({ keepAlive: true, timeout: 5_000 })
    })),
    (agents) =>
      Effect.sync(() => {
        agents.http.destroy()
        agents.https.destroy()
      })
  ).pipe(Effect.map((agents) => UpstreamTransport.of({ send: send(agents) })))
)
