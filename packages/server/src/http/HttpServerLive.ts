/** The REST surface: the HttpApi implementation, its middleware and the docs page, served over node:http. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder, HttpApiScalar, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Config, Effect, Layer } from "effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { Mcp } from "../mcp/McpServer.ts"
import { OperationHandlers } from "../operations/OperationHandlers.ts"
import { RpcLive } from "../rpc/RpcServerLive.ts"
import { AuthenticationLive } from "./AuthenticationLive.ts"
import { PublicAuthHandlers } from "./AuthHandlers.ts"
import { withConsole } from "./ConsoleRoute.ts"
import { ErrorEnvelopeLive } from "./ErrorEnvelope.ts"
import { FrontDoorLive } from "./FrontDoor.ts"
import { withMcp } from "./McpRoute.ts"
import { requestLog } from "./RequestLog.ts"
import { MetricsExposition, withMetrics } from "../telemetry/MetricsExposition.ts"
import { withRpc } from "./RpcRoute.ts"
import { securityHeaders } from "./SecurityHeaders.ts"
import { AllowedOrigins } from "./SessionCookiePolicy.ts"
import { SystemHandlers } from "./SystemHandlers.ts"
import { OperationGroupsLive } from "./OperationGroups.ts"

export const ServerConfig = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(3000)),
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1"))
})

const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([
    SystemHandlers,
    PublicAuthHandlers,
    OperationGroupsLive
  ]),
  Layer.provide(AuthenticationLive)
)

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
 * How long an idle keep-alive connection stays open: longer than the clients and proxies in front keep theirs
 * (60 s is the common idle timeout of load balancers), so the server is never the side that closes a connection
 * a client is just reusing, which fails that request (docs/decisions/front-door.md "Keep-alive outlasts the client's").
 */
const KEEP_ALIVE_MS = 65_000

const createAcsServer = () => {
  const server = createServer()
  server.keepAliveTimeout = KEEP_ALIVE_MS
  server.headersTimeout = KEEP_ALIVE_MS + 1_000
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

const NodeServerLive = Layer.unwrapEffect(
  Effect.map(ServerConfig, ({ host, port }) => NodeHttpServer.layer(createAcsServer, { port, host }))
).pipe(Layer.orDie)

// `/mcp` and `/rpc` sit in front of the API app and its front door; their tools and procedures check access
// and call the operations themselves. The console's page and assets (`/`, `/assets/…`) are static files.
export const HttpServerLive = HttpApiBuilder.serve((app) => requestLog(securityHeaders(withMetrics(withConsole(withRpc(withMcp(app))))))).pipe(
  Layer.provide(FrontDoorLive),
  Layer.provide(MetricsExposition.Default),
  Layer.provide(RpcLive),
  Layer.provide(Mcp.Default),
  Layer.provide(HttpApiScalar.layer({ path: "/docs", scalar: { withDefaultFonts: false } })),
  Layer.provide(ErrorEnvelopeLive),
  Layer.provide(ApiLive),
  // The operations REST, RPC and MCP all call: one instance for the three surfaces.
  Layer.provide(OperationHandlers.Default),
  HttpServer.withLogAddress,
  Layer.provide(NodeServerLive),
  Layer.provide(AllowedOrigins.Live)
)
