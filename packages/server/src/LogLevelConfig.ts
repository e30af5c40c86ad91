/** LOG_LEVEL, by the names docs/configuration.md lists (trace, debug, info, warn, error, fatal, none). */
import { Config, LogLevel } from "effect"

const levels = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None
} as const

export const logLevelConfig = (fallback: LogLevel.LogLevel) =>
  Config.literal("trace", "debug", "info", "warn", "error", "fatal", "none")("LOG_LEVEL").pipe(
    Config.map((name) => levels[name]),
    Config.withDefault(fallback)
  )
