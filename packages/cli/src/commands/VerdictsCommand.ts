/** `acs verdicts`: the guard's verdicts on the account's recent changes, in total, by kind and by proposer. */
import type { VerdictCounts } from "@acs/domain/Guard"
import { Command, Options } from "@effect/cli"
import { Effect } from "effect"
import { checked, clientOptions, given, projectId, withClient } from "../Client.ts"
import { emit, renderTable } from "../Output.ts"

const days = Options.integer("days").pipe(
  Options.withDescription("changes applied in the last this many days, today included, 1–90 (default 30)"),
  Options.optional
)

const countColumns = <Row extends VerdictCounts>() => [
  { header: "PASSED", cell: (r: Row) => r.passed },
  { header: "FAILED", cell: (r: Row) => r.failed },
  { header: "INCONCLUSIVE", cell: (r: Row) => r.inconclusive },
  { header: "PENDING", cell: (r: Row) => r.pending }
] as const

export const verdictsCommand = Command.make("verdicts", { projectId, days, ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const request = yield* checked("getVerdicts", { path: { projectId: input.projectId }, urlParams: given({ days: input.days }) })
      const answer = yield* client.getVerdicts(request)
      const { failed, inconclusive, passed, pending } = answer.total
      yield* emit(input.json, answer, () =>
        [
          `changes applied since ${answer.since} (${answer.days} days): ${passed} passed, ${failed} failed, ` +
          `${inconclusive} inconclusive, ${pending} pending`,
          "",
          renderTable([{ header: "KIND", cell: (r) => r.kind }, ...countColumns<(typeof answer.byKind)[number]>()], answer.byKind),
          "",
          renderTable([
            { header: "PROPOSER", cell: (r) => `${r.proposedBy.kind} ${r.proposedBy.id}` },
            { header: "NAME", cell: (r) => r.proposedBy.name },
            ...countColumns<(typeof answer.byProposer)[number]>()
          ], answer.byProposer)
        ].join("\n"))
    }))
).pipe(Command.withDescription("the guard's verdicts on the changes applied in the window, by kind and by proposer (scope read)"))
