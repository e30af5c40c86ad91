/**
 * `HttpApiBuilder.serve`, except that the function receives the API's own HttpApp rather than the app
 * `serve` hands its middleware, which writes the response itself and then checks, on the request it was
 * given, whether it was written. The front door hands the API a substitute request (its body already read
 * and checked), so under `serve` a REST answer would be written twice. Nothing replays requests into the
 * API any more (issue 11); this stays until the front door can keep the platform's request.
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
