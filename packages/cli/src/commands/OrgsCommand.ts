/** `acs orgs list` and `acs orgs create`. */
import { Args, Command } from "@effect/cli"
import { Effect } from "effect"
import { AdminLive } from "../AdminLayer.ts"
import { createOrg, listOrgs, MAX_ORG_NAME } from "../Orgs.ts"
import { emit, renderRecord, renderTable } from "../Output.ts"
import { json } from "../SharedOptions.ts"

const list = Command.make("list", { json }, ({ json }) =>
  Effect.gen(function*() {
    const orgs = yield* listOrgs
    yield* emit(json, { orgs }, () =>
      renderTable([
        { header: "ORG ID", cell: (o) => o.orgId },
        { header: "NAME", cell: (o) => o.name },
        { header: "CREATED AT", cell: (o) => o.createdAt },
        { header: "DEFAULT", cell: (o) => o.isDefault ? "yes" : "" }
      ], orgs))
  }).pipe(Effect.provide(AdminLive))
).pipe(Command.withDescription("list the orgs; the oldest is the default one"))

const create = Command.make("create", {
  name: Args.text({ name: "name" }).pipe(Args.withDescription(`the org's name, unique on this database, at most ${MAX_ORG_NAME} characters`)),
  json
}, (input) =>
  Effect.gen(function*() {
    const org = yield* createOrg(input.name)
    yield* emit(input.json, { org }, () =>
      [
        renderRecord([["org id", org.orgId], ["name", org.name], ["created at", org.createdAt]]),
        "",
        `Next: its first person with \`acs people add --org ${org.orgId} --role admin …\`, or a key with \`acs keys create --org ${org.orgId} …\`.`
      ].join("\n"))
  }).pipe(Effect.provide(AdminLive))
).pipe(Command.withDescription("create an org (a workspace with its own people, keys and accounts); prints its id"))

export const orgsCommand = Command.make("orgs").pipe(
  Command.withDescription("orgs (workspaces) on this database"),
  Command.withSubcommands([list, create])
)
