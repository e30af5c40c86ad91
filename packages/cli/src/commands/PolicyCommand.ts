/** `acs policy` and `acs plan`: what the safe-apply policy allows now, and the changes acs suggests. */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import { checked, clientOptions, given, limit, projectId, withClient } from "../Client.ts"
import { collectionFooter, emit, money, renderRecord, renderTable } from "../Output.ts"

const policy = Command.make("policy", { projectId, ...clientOptions }, (input) =>
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

const plan = Command.make("plan", { projectId, limit, ...clientOptions }, (input) =>
  withClient(input, (client) =>
    Effect.gen(function*() {
      const request = yield* checked("getPlan", { path: { projectId: input.projectId }, urlParams: given({ limit: input.limit }) })
      const answer = yield* client.getPlan(request)
      yield* emit(input.json, answer, () =>
        [
          renderTable([
            { header: "ITEM ID", cell: (i) => i.itemId },
            { header: "KIND", cell: (i) => i.proposal.kind },
            { header: "AT STAKE", cell: (i) => money(i.impactMicros) },
            { header: "TITLE", cell: (i) => i.title }
          ], answer.items),
          "",
          collectionFooter(answer.items.length, answer),
          "Each item's proposal (see --json) can be sent as is: acs propose <kind> <projectId> --body '<proposal.body>'"
        ].join("\n"))
    }))
).pipe(Command.withDescription("suggested changes ranked by spend at stake, each a ready proposal (scope read)"))

export const policyCommands = [policy, plan] as const
