/** The REST surface: the HttpApi implementation, its middleware and the docs page, served over node:http. */
import { Api } from "@acs/domain/Api"
import { HttpApiBuilder, HttpApiScalar, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Config, Effect, Layer } from "effect"
import { createServer } from "node:http"
import { AccountsHandlers } from "./AccountsHandlers.ts"
import { AuthenticationLive } from "./AuthenticationLive.ts"
import { AuthHandlers, PublicAuthHandlers } from "./AuthHandlers.ts"
import { ErrorEnvelopeLive } from "./ErrorEnvelope.ts"
import { KeysHandlers } from "./KeysHandlers.ts"
import { requestLog } from "./RequestLog.ts"
import { SettingsHandlers } from "./SettingsHandlers.ts"
import { SystemHandlers } from "./SystemHandlers.ts"

export const ServerConfig = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(3000)),
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1"))
})

const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([SystemHandlers, PublicAuthHandlers, AuthHandlers, KeysHandlers, SettingsHandlers, AccountsHandlers]),
  Layer.provide(AuthenticationLive)
)

const NodeServerLive = Layer.unwrapEffect(
  Effect.map(ServerConfig, ({ host, port }) => NodeHttpServer.layer(createServer, { port, host }))
).pipe(Layer.orDie)

export const HttpServerLive = HttpApiBuilder.serve(requestLog).pipe(
  Layer.provide(HttpApiScalar.layer({ path: "/docs", scalar: { withDefaultFonts: false } })),
  Layer.provide(ErrorEnvelopeLive),
  Layer.provide(ApiLive),
  HttpServer.withLogAddress,
  Layer.provide(NodeServerLive)
)
