/**
 * The `acs` command tree: admin commands act directly on the database; client commands act on a running
 * acs over `/rpc` with an API key.
 */
import { Command } from "@effect/cli"
import { DEFAULT_URL } from "./Client.ts"
import { accountsCommand } from "./commands/AccountsCommand.ts"
import { actionCommands } from "./commands/ActionsCommand.ts"
import { keysCommand } from "./commands/KeysCommand.ts"
import { migrateCommand } from "./commands/MigrateCommand.ts"
import { orgsCommand } from "./commands/OrgsCommand.ts"
import { peopleCommand } from "./commands/PeopleCommand.ts"
import { policyCommands } from "./commands/PolicyCommand.ts"
import { readCommands } from "./commands/ReadsCommand.ts"
import { syncCommand } from "./commands/SyncCommand.ts"

export const acs = Command.make("acs").pipe(
  Command.withDescription(
    [
      "Ad-Account Change Service.",
      "Admin commands (migrate, orgs, people, keys) act directly on the database: DATABASE_URL, or the embedded one under ACS_DATA_DIR.",
      `Client commands (the rest) act on a running acs over /rpc with an API key: ACS_URL (default ${DEFAULT_URL}) and ACS_KEY, or --url and --key.`,
      "Exit codes: 0 ok; 1 unexpected failure or server/upstream trouble (internal, upstream_error, connection_error, unreachable, sync_failed);",
      "2 bad input or not found (invalid_request, not_found, account_not_found, validation_failed, no_op, bid_strategy_conflict, not_revertible, conflict);",
      "3 refused (unauthorized, forbidden_scope, account_mismatch, read_only_account);",
      "4 retryable (rate_limited, upstream_unavailable, sync_in_progress). Errors go to stderr as `acs: <code>: <message>`."
    ].join(" ")
  ),
  Command.withSubcommands([
    migrateCommand,
    orgsCommand,
    peopleCommand,
    keysCommand,
    accountsCommand,
    ...readCommands,
    ...policyCommands,
    ...actionCommands,
    syncCommand
  ])
)

export const cli = Command.run(acs, { name: "acs", version: "0.0.0" })
