/**
 * Every `acs` command, one line each: its name, group, one-line summary for `acs --help`, and how to load it.
 * A command's module is imported only when that command runs (the build gives each its own chunk), so
 * `acs --help` loads none of them and a client command never loads the server's database layers.
 *
 * To add a command: write packages/cli/src/commands/<Name>Command.ts exporting an @effect/cli `Command`, and
 * add its line here.
 */
import type { Command } from "@effect/cli"

export type CommandGroup = "admin" | "client" | "process"

/** A loaded command, its input type hidden: the runner gets it back through `use`, fully typed. */
export interface LoadedCommand {
  readonly use: <T>(f: <N extends string, E, A>(command: Command.Command<N, never, E, A>) => T) => T
}

/** A command provides the services it needs itself (admin commands: the database); the runner, only Node's. */
export const loaded = <N extends string, E, A>(command: Command.Command<N, never, E, A>): LoadedCommand => ({
  use: (f) => f(command)
})

export interface CommandEntry {
  readonly name: string
  readonly group: CommandGroup
  readonly summary: string
  readonly load: () => Promise<LoadedCommand>
}

export const commands: ReadonlyArray<CommandEntry> = [
  { name: "migrate", group: "admin", summary: "apply the migrations and the first-start seeding (default org, first admin)", load: () => import("./commands/MigrateCommand.ts").then((m) => loaded(m.migrateCommand)) },
  { name: "orgs", group: "admin", summary: "orgs (workspaces) on this database: list, create", load: () => import("./commands/OrgsCommand.ts").then((m) => loaded(m.orgsCommand)) },
  { name: "people", group: "admin", summary: "people who sign in to the console: add, list", load: () => import("./commands/PeopleCommand.ts").then((m) => loaded(m.peopleCommand)) },
  { name: "keys", group: "admin", summary: "API keys: create (the secret is printed once), list, revoke", load: () => import("./commands/KeysCommand.ts").then((m) => loaded(m.keysCommand)) },
  { name: "secrets", group: "admin", summary: "rotate the key that seals stored credentials: secrets rotate", load: () => import("./commands/SecretsCommand.ts").then((m) => loaded(m.secretsCommand)) },
  { name: "accounts", group: "client", summary: "the accounts of the org, with currency and time zone", load: () => import("./commands/AccountsCommand.ts").then((m) => loaded(m.accountsCommand)) },
  { name: "campaigns", group: "client", summary: "campaigns ranked by spend in a window, with their metrics", load: () => import("./commands/ReadsCommand.ts").then((m) => loaded(m.campaignsCommand)) },
  { name: "keywords", group: "client", summary: "keywords ranked by spend in a window, with their metrics", load: () => import("./commands/ReadsCommand.ts").then((m) => loaded(m.keywordsCommand)) },
  { name: "search-terms", group: "client", summary: "search terms ranked by spend, each with its keyword or Search Match", load: () => import("./commands/ReadsCommand.ts").then((m) => loaded(m.searchTermsCommand)) },
  { name: "recommendations", group: "client", summary: "Apple's recommendations with their expected effect and expiry", load: () => import("./commands/RecommendationsCommand.ts").then((m) => loaded(m.recommendationsCommand)) },
  { name: "policy", group: "client", summary: "the live safe-apply policy: kill switch, auto-applies left, rules", load: () => import("./commands/PolicyCommand.ts").then((m) => loaded(m.policyCommand)) },
  { name: "plan", group: "client", summary: "suggested changes ranked by spend at stake, each a ready proposal", load: () => import("./commands/PolicyCommand.ts").then((m) => loaded(m.planCommand)) },
  { name: "propose", group: "client", summary: "propose a change (or --preview it); it auto-applies or queues for review", load: () => import("./commands/ActionsCommand.ts").then((m) => loaded(m.proposeCommand)) },
  { name: "harvest", group: "client", summary: "search terms as EXACT keywords, negated at their source (or --preview the delivery removed)", load: () => import("./commands/HarvestCommand.ts").then((m) => loaded(m.harvestCommand)) },
  { name: "approvals", group: "client", summary: "actions waiting for a human decision, oldest first (no projectId: every account)", load: () => import("./commands/ActionsCommand.ts").then((m) => loaded(m.approvalsCommand)) },
  { name: "approve", group: "client", summary: "approve a pending action; its apply is queued", load: () => import("./commands/ActionsCommand.ts").then((m) => loaded(m.approveCommand)) },
  { name: "reject", group: "client", summary: "reject a pending action, with a reason", load: () => import("./commands/ActionsCommand.ts").then((m) => loaded(m.rejectCommand)) },
  { name: "revert", group: "client", summary: "undo an applied action with its compensating change", load: () => import("./commands/ActionsCommand.ts").then((m) => loaded(m.revertCommand)) },
  { name: "changeset", group: "client", summary: "many proposals as one unit: open, add, submit, show, list, approve, reject", load: () => import("./commands/ChangesetCommand.ts").then((m) => loaded(m.changesetCommand)) },
  { name: "ledger", group: "client", summary: "the change ledger, newest first, a page at a time", load: () => import("./commands/ActionsCommand.ts").then((m) => loaded(m.ledgerCommand)) },
  { name: "verdicts", group: "client", summary: "the guard's verdicts on recent changes, by kind and by proposer", load: () => import("./commands/VerdictsCommand.ts").then((m) => loaded(m.verdictsCommand)) },
  { name: "events", group: "client", summary: "the org's events, newest first; --follow streams them live", load: () => import("./commands/EventsCommand.ts").then((m) => loaded(m.eventsCommand)) },
  { name: "webhooks", group: "client", summary: "webhook endpoints: create (secret printed once), list, delete, test", load: () => import("./commands/WebhooksCommand.ts").then((m) => loaded(m.webhooksCommand)) },
  { name: "sync", group: "client", summary: "sync an account now and follow it to its end", load: () => import("./commands/SyncCommand.ts").then((m) => loaded(m.syncCommand)) },
  { name: "sync-queue", group: "client", summary: "the org's scheduled syncs: fresh, due, running or waiting, and why", load: () => import("./commands/SyncQueueCommand.ts").then((m) => loaded(m.syncQueueCommand)) },
  { name: "worker", group: "process", summary: "run the apply worker as its own process (DATABASE_URL; see docs/operations.md)", load: () => import("./commands/WorkerCommand.ts").then((m) => loaded(m.workerCommand)) }
]

export const findCommand = (name: string): CommandEntry | undefined => commands.find((entry) => entry.name === name)
