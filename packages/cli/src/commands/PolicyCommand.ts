/** `acs policy` and `acs plan`: what the safe-apply policy allows now, and the changes acs suggests. */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import { checked, clientOptions, currencyFor, given, limit, projectId, withClient } from "../Client.ts"
import { collectionFooter, emit, money, renderRecord, renderTable } from "../Output.ts"

export const policyCommand = Command.make("policy", { projectId, ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const answer = yield* client.getPolicy({ path: { projectId: input.projectId } })
      const { autoApplies } = answer
      yield* emit(input.json, answer, () =>
        [
          renderRecord([
            ["kill switch", `${answer.killSwitch.setting} ${answer.killSwitch.enabled ? "on (auto-apply allowed)" : "off (nothing auto-applies)"}`],
            ["account status", answer.accountStatus],
            ["auto-applies", `${autoApplies.usedLast24h} of ${autoApplies.limitPer24h} used in 24 h, ${autoApplies.remaining} left`],
            ["oldest in window", autoApplies.oldestInWindowAt],
            ["key proposals", answer.keyProposals],
            ["budget hard cap", `${answer.hardCaps.budgetMultipleOfWarehouse}× the warehouse value`]
          ]),
          "",
          renderTable([
            { header: "KIND", cell: (r) => r.kind },
            { header: "AUTO-APPLIES WHEN", cell: (r) => r.autoApplies }
          ], answer.rules)
        ].join("\n"))
    }))
).pipe(Command.withDescription("the account's live safe-apply policy: kill switch, auto-applies left, rules (scope read)"))

export const planCommand = Command.make("plan", { projectId, limit, ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const request = yield* checked("getPlan", { path: { projectId: input.projectId }, urlParams: given({ limit: input.limit }) })
      const [answer, currency] = yield* Effect.all([client.getPlan(request), currencyFor(client, input)], { concurrency: 2 })
      yield* emit(input.json, answer, () =>
        [
          renderTable([
            { header: "ITEM ID", cell: (i) => i.itemId },
            { header: "KIND", cell: (i) => i.proposal.kind },
            { header: "AT STAKE", cell: (i) => money(i.impactMicros, currency) },
            { header: "TITLE", cell: (i) => i.title }
          ], answer.items),
          "",
          collectionFooter(answer.items.length, answer),
          "Each item's proposal (see --json) can be sent as is: acs propose <kind> <projectId> --body '<proposal.body>'"
        ].join("\n"))
    }))
).pipe(Command.withDescription("suggested changes ranked by spend at stake, each a ready proposal (scope read)"))
