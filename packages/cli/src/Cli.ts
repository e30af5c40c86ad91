/** The `acs` command tree: admin commands that act directly on the database. */
import { Command } from "@effect/cli"
import { keysCommand } from "./commands/KeysCommand.ts"
import { migrateCommand } from "./commands/MigrateCommand.ts"
import { orgsCommand } from "./commands/OrgsCommand.ts"
import { peopleCommand } from "./commands/PeopleCommand.ts"

export const acs = Command.make("acs").pipe(
  Command.withDescription(
    "Ad-Account Change Service administration, directly on the database (DATABASE_URL, or the embedded one under ACS_DATA_DIR)"
  ),
  Command.withSubcommands([migrateCommand, orgsCommand, peopleCommand, keysCommand])
)

export const cli = Command.run(acs, { name: "acs", version: "0.0.0" })
