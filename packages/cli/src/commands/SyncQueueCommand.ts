/** `acs sync-queue`: the org's scheduled syncs, each account fresh, due, running or waiting, and why it waits. */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import { clientOptions, withClient } from "../Client.ts"
import { emit, renderTable } from "../Output.ts"

export const syncQueueCommand = Command.make("sync-queue", clientOptions, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const answer = yield* client.getSyncQueue({})
      yield* emit(input.json, answer, () =>
        [
          `freshness target ${answer.freshnessTargetMinutes} min${answer.scheduled ? "" : " (scheduled syncs off)"}; at once: ` +
          `${answer.bounds.instance} per instance (${answer.bounds.runningHere} here), ${answer.bounds.perOrg} per org`,
          renderTable([
            { header: "PROJECT ID", cell: (a) => a.projectId },
            { header: "NAME", cell: (a) => a.name },
            { header: "STATE", cell: (a) => a.state },
            { header: "WHY", cell: (a) => a.reason ?? "" },
            { header: "UNTIL", cell: (a) => a.until ?? "" },
            { header: "DUE AT", cell: (a) => a.dueAt ?? "" }
          ], answer.accounts)
        ].join("\n"))
    }))
).pipe(Command.withDescription("the org's sync queue: each account fresh, due, running or waiting, and why (org-wide key, scope read)"))
