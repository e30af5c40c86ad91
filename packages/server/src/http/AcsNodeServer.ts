/**
 * The node:http server acs listens with: node's own parse errors answered in the envelope, requests that
 * arrive before the app's handler held, keep-alive longer than the clients', and a close that does not wait
 * on idle connections.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"

/**
 * Requests node's own parser rejects (bad method, bytes in the path, headers over 16 KB) never reach the
 * app; answer them with the envelope too, instead of node's bare 400/431.
 */
const malformed = JSON.stringify({ error: { code: "invalid_request", message: "invalid request: malformed HTTP request" } })

/**
 * The platform listens before the app's handler is attached (the API's layers are still being built): a
 * request in that window would have no listener and hang until the client gives up. Such requests wait
 * here and are handed to the handler as soon as it is attached.
 */
const holdRequestsUntilHandled = (server: Server) => {
  const held: Array<readonly [IncomingMessage, ServerResponse]> = []
  const hold = (request: IncomingMessage, response: ServerResponse) => void held.push([request, response])
  const onNewListener = (event: string | symbol) => {
    if (event !== "request") return
    server.off("newListener", onNewListener)
    server.off("request", hold)
    // The new listener is attached right after this event: hand the held requests on after that.
    setImmediate(() => {
      for (const [request, response] of held.splice(0)) server.emit("request", request, response)
    })
  }
  server.on("request", hold)
  server.on("newListener", onNewListener)
}

/**
 * `close` ends the connections idle at that moment; one still answering (an event stream ending, a request
 * in flight) turns idle afterwards and would stay open for the keep-alive time, holding the shutdown that
 * long. Once closing, each connection is closed as soon as its answer is done.
 */
const closeConnectionsAsTheyIdle = (server: Server) => {
  let closing = false
  server.on("request", (_request: IncomingMessage, response: ServerResponse) => {
    // After node's own end-of-response handling (it runs first) has put the connection back to idle.
    response.once("close", () => closing && setImmediate(() => server.closeIdleConnections()))
  })
  const close = server.close.bind(server)
  server.close = (callback) => {
    closing = true
    return close(callback)
  }
}

/**
 * How long an idle keep-alive connection stays open: longer than the clients and proxies in front keep theirs
 * (60 s is the common idle timeout of load balancers), so the server is never the side that closes a connection
 * a client is just reusing, which fails that request (docs/decisions/front-door.md "Keep-alive outlasts the client's").
 */
const KEEP_ALIVE_MS = 65_000

export const createAcsServer = (): Server => {
  const server = createServer()
  server.keepAliveTimeout = KEEP_ALIVE_MS
  server.headersTimeout = KEEP_ALIVE_MS + 1_000
  closeConnectionsAsTheyIdle(server)
  holdRequestsUntilHandled(server)
  server.on("clientError", (_error, socket) => {
    if (!socket.writable) return socket.destroy()
    socket.end(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(malformed)}\r\n` +
        `connection: close\r\n\r\n${malformed}`
    )
  })
  return server
}
