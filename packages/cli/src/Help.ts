/** `acs --help`: the commands and what they share, from the registry alone (no command is loaded). */
import { type CommandGroup, commands } from "./Commands.ts"
import { DEFAULT_URL } from "./SharedOptions.ts"
import { definition, wrap } from "./Wrap.ts"

const GROUPS: ReadonlyArray<readonly [CommandGroup, string]> = [
  ["admin", "Admin commands act directly on the database: DATABASE_URL, or the embedded one under ACS_DATA_DIR (stop the server first)."],
  ["client", `Client commands act on a running acs over /rpc with an API key: ACS_URL (default ${DEFAULT_URL}) and ACS_KEY, or --url and --key; --json prints the answer as one JSON document.`],
  ["process", "Processes:"]
]

const EXIT_CODES = [
  "0 ok; 1 unexpected failure or server/upstream trouble (internal, upstream_error, connection_error, unreachable, sync_failed);",
  "2 bad input or not found (invalid_request, not_found, account_not_found, validation_failed, no_op, bid_strategy_conflict, not_revertible, conflict);",
  "3 refused (unauthorized, forbidden_scope, account_mismatch, read_only_account);",
  "4 retry later (rate_limited, upstream_unavailable, database_unavailable, sync_in_progress). Errors go to stderr as `acs: <code>: <message>`."
].join(" ")

export const topHelp = (version: string): string => {
  const column = Math.max(...commands.map((entry) => entry.name.length)) + 6
  const sections = GROUPS.flatMap(([group, heading]) => {
    const members = commands.filter((entry) => entry.group === group)
    return members.length === 0
      ? []
      : [["", ...wrap(heading), ...members.flatMap((entry) => definition(entry.name, entry.summary, column))]]
  })
  return [
    `acs ${version}: Ad-Account Change Service`,
    "",
    "Usage: acs <command> [arguments] [options]",
    "       acs <command> --help     a command's arguments and options",
    "       acs --version",
    ...sections.flat(),
    "",
    ...wrap(`Exit codes: ${EXIT_CODES}`)
  ].join("\n")
}
