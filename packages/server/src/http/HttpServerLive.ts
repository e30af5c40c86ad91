/** The REST surface: the HttpApi implementation, its middleware and the docs page, served over node:http. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder, HttpApiScalar, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Config, Effect, Layer } from "effect"
import { Mcp } from "../mcp/McpServer.ts"
import { createAcsServer } from "./AcsNodeServer.ts"
import { OperationHandlers } from "../operations/OperationHandlers.ts"
import { RpcLive } from "../rpc/RpcServerLive.ts"
import { AuthenticationLive } from "./AuthenticationLive.ts"
import { PublicAuthHandlers } from "./AuthHandlers.ts"
import { withConsole } from "./ConsoleRoute.ts"
import { ErrorEnvelopeLive } from "./ErrorEnvelope.ts"
import { FrontDoorLive } from "./FrontDoor.ts"
import { withMcp } from "./McpRoute.ts"
import { SlackInteractions, withSlack } from "./SlackInteractions.ts"
import { OAuthEndpoints, withOAuth } from "./OAuthRoute.ts"
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

const NodeServerLive = Layer.unwrapEffect(
  Effect.map(ServerConfig, ({ host, port }) => NodeHttpServer.layer(createAcsServer, { port, host }))
).pipe(Layer.orDie)

// `/mcp`, `/rpc`, Slack's interactions and OAuth (`/.well-known/…`, `/oauth/…`) sit in front of the API app and its
// front door; their tools and procedures check access and call the operations themselves. The console's page and
// assets (`/`, `/assets/…`) are static files.
export const HttpServerLive = HttpApiBuilder.serve((app) =>
  requestLog(securityHeaders(withMetrics(withConsole(withRpc(withMcp(withOAuth(withSlack(app))))))))
).pipe(
  Layer.provide(FrontDoorLive),
  Layer.provide(MetricsExposition.Default),
  Layer.provide(RpcLive),
  Layer.provide(Mcp.Default),
  Layer.provide(SlackInteractions.Default),
  Layer.provide(OAuthEndpoints.Default),
  Layer.provide(HttpApiScalar.layer({ path: "/docs", scalar: { withDefaultFonts: false } })),
  Layer.provide(ErrorEnvelopeLive),
  Layer.provide(ApiLive),
  // The operations REST, RPC and MCP all call: one instance for the three surfaces.
  Layer.provide(OperationHandlers.Default),
  HttpServer.withLogAddress,
  Layer.provide(NodeServerLive),
  Layer.provide(AllowedOrigins.Live)
)
