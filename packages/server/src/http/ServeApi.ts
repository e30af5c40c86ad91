/**
 * `HttpApiBuilder.serve`, except that the function receives the API's own HttpApp rather than the app
 * `serve` hands its middleware, which has already written the response to the socket. The surfaces in front
 * of the API (/mcp, /rpc) replay requests into it in-process, so they need the app that only answers.
 */
import { HttpApiBuilder, type HttpApp, HttpServer, type HttpRouter } from "@effect/platform"
import { Effect, Layer } from "effect"

export const serveApi = <R, E, RW>(
  wrap: (api: HttpApp.Default<never, HttpRouter.HttpRouter.DefaultServices>) => Effect.Effect<HttpApp.Default<never, R>, E, RW>
) =>
  HttpApiBuilder.httpApp.pipe(
    Effect.flatMap(wrap),
    Effect.map((app) => HttpServer.serve(app)),
    Layer.unwrapEffect,
    // The same (memoized) layers `serve` provides: the handler groups and API middleware register into them.
    Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer])
  )
