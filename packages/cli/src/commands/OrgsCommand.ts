/** `acs orgs list`. */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import { AdminLive } from "../AdminLayer.ts"
import { listOrgs } from "../Orgs.ts"
import { emit, renderTable } from "../Output.ts"
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

export const orgsCommand = Command.make("orgs").pipe(
  Command.withDescription("orgs (workspaces) on this database"),
  Command.withSubcommands([list])
)
