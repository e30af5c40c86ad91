/**
 * Runs one loaded command as the process: its arguments parsed by @effect/cli, logs on stderr, a failure
 * printed as `acs: <code>: <message>` and turned into the exit code (CliError.ts). stdout carries only the
 * command's output: a table, or one JSON document with `--json`.
 */
import { Command } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Console, Effect, Exit, Layer, Logger, LogLevel, Option } from "effect"
import { logLevelConfig } from "@acs/server/LogLevelConfig"
import { describeFailure, exitCodeOf } from "./CliError.ts"
import { helpFor } from "./CommandHelp.ts"
import type { LoadedCommand } from "./Commands.ts"

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

const isHelp = (arg: string) => arg === "--help" || arg === "-h"

/**
 * `argv` is `process.argv`: node, the script, the command's name, then its arguments. `stoppedIsSuccess`: a
 * process (`acs worker`) stopped by SIGTERM or SIGINT exits 0, as the server does; other commands exit 130.
 */
export const runCommand = (
  loaded: LoadedCommand,
  argv: ReadonlyArray<string>,
  version: string,
  options: { readonly stoppedIsSuccess: boolean }
): void =>
  loaded.use((command) => {
    const [name = "", ...args] = argv.slice(2)
    const optionsEnd = args.indexOf("--")
    if ((optionsEnd === -1 ? args : args.slice(0, optionsEnd)).some(isHelp)) {
      process.stdout.write(`${helpFor(command.descriptor, name, args)}\n`)
      return
    }
    // The command as the only subcommand of `acs`, so @effect/cli parses `acs <name> …` as before.
    const acs = Command.make("acs").pipe(Command.withSubcommands([command]))
    Command.run(acs, { name: "acs", version })(argv).pipe(
      Effect.tapErrorCause((cause) =>
        Option.match(describeFailure(cause), { onNone: () => Effect.void, onSome: (message) => Console.error(message) })
      ),
      Effect.provide(NodeContext.layer),
      Effect.provide(LoggingLive),
      NodeRuntime.runMain({
        disableErrorReporting: true,
        disablePrettyLogger: true,
        teardown: (exit, onExit) =>
          onExit(options.stoppedIsSuccess && Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) ? 0 : exitCodeOf(exit))
      })
    )
  })
