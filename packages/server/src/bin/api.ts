/** Starts acs: `pnpm start`. Configuration comes from the environment (docs/configuration.md). */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { AppLive } from "../AppLayer.ts"
import { logLevelConfig } from "../LogLevelConfig.ts"
import { armShutdownDeadline } from "../ShutdownDeadline.ts"

const LoggingLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const level = yield* logLevelConfig(LogLevel.Info)
    return Layer.merge(Logger.json, Logger.minimumLogLevel(level))
  })
).pipe(Layer.orDie)

armShutdownDeadline.pipe(
  Effect.zipRight(Layer.launch(AppLive)),
  Effect.provide(LoggingLive),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
