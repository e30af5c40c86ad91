/**
 * `acs` (`pnpm acs …`). stdout carries only the command's output (a table, or one JSON document with
 * `--json`); logs and errors go to stderr. Exit codes (CliError.ts): 0 ok, 1 unexpected failure or server trouble,
 * 2 bad input or not found, 3 refused, 4 retryable.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Layer, Logger, LogLevel, Option } from "effect"
import { logLevelConfig } from "@acs/server/LogLevelConfig"
import { cli } from "./Cli.ts"
import { describeFailure, exitCodeOf } from "./CliError.ts"

/** Logs on stderr, warnings and up unless LOG_LEVEL says otherwise (first-start seeding warns). */
const LoggingLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const level = yield* logLevelConfig(LogLevel.Warning)
    return Layer.merge(
      Logger.replace(Logger.defaultLogger, Logger.prettyLogger({ stderr: true })),
      Logger.minimumLogLevel(level)
    )
  })
).pipe(Layer.orDie)

cli(process.argv).pipe(
  Effect.tapErrorCause((cause) =>
    Option.match(describeFailure(cause), { onNone: () => Effect.void, onSome: (message) => Console.error(message) })
  ),
  Effect.provide(NodeContext.layer),
  Effect.provide(LoggingLive),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    disablePrettyLogger: true,
    teardown: (exit, onExit) => onExit(exitCodeOf(exit))
  })
)
