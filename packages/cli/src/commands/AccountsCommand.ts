/** `acs accounts`: the accounts the key reaches in its org. */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import { clientOptions, withClient } from "../Client.ts"
import { emit, renderTable } from "../Output.ts"

export const accountsCommand = Command.make("accounts", clientOptions, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const answer = yield* client.listAccounts({})
      yield* emit(input.json, answer, () =>
        renderTable([
          { header: "PROJECT ID", cell: (a) => a.projectId },
          { header: "NAME", cell: (a) => a.name },
          { header: "STATUS", cell: (a) => a.status },
          { header: "CURRENCY", cell: (a) => a.currency },
          { header: "TIME ZONE", cell: (a) => a.timeZone },
          { header: "READ ONLY", cell: (a) => a.readOnly ? "yes" : "" },
          { header: "UPSTREAM ID", cell: (a) => a.upstreamAccountId }
        ], answer.accounts))
    }))
).pipe(Command.withDescription("list the accounts of the org (needs an org-wide key, scope read)"))
