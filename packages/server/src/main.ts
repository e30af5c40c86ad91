/** Starts acs: `pnpm start`. Configuration comes from the environment (README, "Configuration"). */
import { NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer, Logger, LogLevel } from "effect"
import { AppLive } from "./AppLayer.ts"

const levels = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None
} as const

const LoggingLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const level = yield* Config.literal("trace", "debug", "info", "warn", "error", "fatal", "none")("LOG_LEVEL").pipe(
      Config.map((name) => levels[name]),
      Config.withDefault(LogLevel.Info)
    )
    return Layer.merge(Logger.json, Logger.minimumLogLevel(level))
  })
).pipe(Layer.orDie)

Layer.launch(AppLive).pipe(
  Effect.provide(LoggingLive),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
