#!/usr/bin/env node
/**
 * `acs` (the built dist/cli.mjs; `pnpm acs …`). Answers `--help` and `--version` from the command registry
 * alone, and loads only the module of the command it runs (Commands.ts): a client command never loads the
 * server's database layers. Exit codes (CliError.ts): 0 ok, 1 unexpected failure or server trouble, 2 bad
 * input or not found, 3 refused, 4 retryable.
 */
import * as Module from "node:module"
import cliPackage from "../package.json" with { type: "json" }
import { findCommand } from "./Commands.ts"
import { topHelp } from "./Help.ts"

// Node 22.1 and later keep V8's compiled code of the modules loaded below on disk between runs (Node 20
// has no such cache; the call is then skipped).
const enableCompileCache: unknown = Reflect.get(Module, "enableCompileCache")
if (typeof enableCompileCache === "function") enableCompileCache()

const EXIT_USAGE = 2

const [first] = process.argv.slice(2)

if (first === undefined || first === "--help" || first === "-h" || first === "help") {
  process.stdout.write(`${topHelp(cliPackage.version)}\n`)
} else if (first === "--version" || first === "-v") {
  process.stdout.write(`${cliPackage.version}\n`)
} else {
  const entry = findCommand(first)
  if (entry === undefined) {
    process.stderr.write(`acs: invalid_request: unknown command "${first}"; acs --help lists the commands\n`)
    process.exitCode = EXIT_USAGE
  } else {
    const [loaded, { runCommand }] = await Promise.all([entry.load(), import("./RunCommand.ts")])
    runCommand(loaded, process.argv, cliPackage.version, { stoppedIsSuccess: entry.group === "process" })
  }
}
